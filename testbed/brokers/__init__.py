"""The Kafka brokers of a run: the cluster in containers, its images, the Docker engine, feature levels, the reaper."""
