"""The assignors the offline simulator can drive, each built per member the way a consumer builds it.

Every entry is a factory ``(member, options, lags) -> AbstractPartitionAssignor``: the simulator makes
one instance per member incarnation, so assignor state (sticky user data, stream-join epochs) lives
where it lives in a real client and is lost on a bounce. kafka-python's own assignors need nothing but
fake cluster metadata (:class:`FakeCluster`); the lag-aware one reads the simulator's current lags
instead of a broker.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from testbed.assignors.kafka_python import (
    CooperativeFailoverAssignor,
    CooperativeGroupLagAwareAssignor,
    CooperativeLagAwareAssignor,
    CooperativeStickyStreamJoinAssignor,
    FailoverAssignor,
    GroupLagAwareAssignor,
    LagAwareAssignor,
    StickyStreamJoinAssignor,
)
from testbed.assignors.lag_aware import PartitionOffsets
from testbed.assignors.model import AssignorInputError, TopicPartition

LagTable = Mapping[str, Sequence[int]]
AssignorFactory = Callable[[str, Mapping[str, Any], Callable[[], LagTable]], AbstractPartitionAssignor]


class FakeCluster:
    """The two ``ClusterMetadata`` calls assignors make, answered from a partition-count table."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._counts = dict(partitions_per_topic)

    def topics(self, exclude_internal_topics: bool = True) -> set[str]:
        return set(self._counts)

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._counts.get(topic)
        return None if count is None else set(range(count))


def _lag_offsets_source(current_lags: Callable[[], LagTable]):
    """Offsets that reproduce the simulator's lags: committed 0, end = lag."""

    def source(partitions: Sequence[TopicPartition]) -> dict[TopicPartition, PartitionOffsets]:
        lags = current_lags()
        offsets = {}
        for topic, p in partitions:
            row = lags.get(topic)
            if row is not None and p < len(row):
                offsets[(topic, p)] = PartitionOffsets(beginning=0, end=row[p], committed=0)
        return offsets

    return source


def _failover(klass: type[FailoverAssignor]) -> AssignorFactory:
    return lambda member, options, lags: klass(priority=options.get("priority"))


def _lag_aware(klass: type[LagAwareAssignor]) -> AssignorFactory:
    return lambda member, options, lags: klass(offsets_source=_lag_offsets_source(lags))


ASSIGNOR_FACTORIES: dict[str, AssignorFactory] = {
    "range": lambda member, options, lags: RangePartitionAssignor(),
    "roundrobin": lambda member, options, lags: RoundRobinPartitionAssignor(),
    "sticky": lambda member, options, lags: StickyPartitionAssignor(),
    "cooperative-sticky": lambda member, options, lags: CooperativeStickyAssignor(),
    "lag-aware": _lag_aware(LagAwareAssignor),
    "lag-aware-group": _lag_aware(GroupLagAwareAssignor),
    "failover": _failover(FailoverAssignor),
    "sticky-stream-join": lambda member, options, lags: StickyStreamJoinAssignor(),
    # KIP-429 variants of the seed assignors (same cores, moves staged over two rounds)
    "lag-aware-cooperative": _lag_aware(CooperativeLagAwareAssignor),
    "lag-aware-group-cooperative": _lag_aware(CooperativeGroupLagAwareAssignor),
    "failover-cooperative": _failover(CooperativeFailoverAssignor),
    "sticky-stream-join-cooperative": lambda member, options, lags: CooperativeStickyStreamJoinAssignor(),
}


def assignor_factory(name: str) -> AssignorFactory:
    try:
        return ASSIGNOR_FACTORIES[name]
    except KeyError:
        raise AssignorInputError(
            f"assignor: {name!r} is not one of {', '.join(sorted(ASSIGNOR_FACTORIES))}"
        ) from None
