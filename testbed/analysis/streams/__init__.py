"""Kafka Streams applications: their instances' restorations, tasks, states and output, within the consumer group
their instances form."""
