"""Partition assignors from the seed documents: pure cores, kafka-python adapters, an offline simulator.

Cores (no Kafka objects): ``lag_aware.assign_lag_aware``, ``failover.assign_failover``,
``stream_join.assign_sticky_stream_join``. Adapters for kafka-python 3.x consumers, by import path:
``testbed.assignors.kafka_python:LagAwareAssignor``, ``...:FailoverAssignor``,
``...:StickyStreamJoinAssignor``, and their KIP-429 variants ``...:Cooperative<Name>`` (the rule in
``cooperative``). See docs/assignors.md.
"""

from testbed.assignors.model import (
    AssignorInputError,
    GroupAssignment,
    MemberSubscription,
    TopicPartition,
    UserDataError,
)

__all__ = ["AssignorInputError", "GroupAssignment", "MemberSubscription", "TopicPartition", "UserDataError"]
