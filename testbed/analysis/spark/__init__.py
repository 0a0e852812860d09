"""Spark plumbing: the process's session and its settings by input size, reading a run directory's files, the
Spark schemas of the history's events."""
