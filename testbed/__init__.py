"""testbed: a cluster-in-a-box integration testbed for Kafka consumer-group rebalancing."""

__version__ = "0.1.0"
