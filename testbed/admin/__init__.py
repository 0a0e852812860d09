"""The admin side of a cluster: admin calls (topics, brokers, groups) and group descriptions from a child process."""
