"""LagAwareAssignor core (seed 001, KIP-169): per topic, partition count first, then total lag.

For each topic, partitions are taken in order of decreasing lag and each goes to the subscribed member
with the fewest partitions of that topic, ties broken by the smallest total lag of that topic, then by
member id. Counts per topic therefore differ by at most one, and the lag spread is as small as this
greedy order makes it (the KIP's own algorithm; it is not an optimal bin packing).

A heap keyed (count, lag, member index) makes this O(P log M) per topic instead of scanning every
member for every partition, which is what keeps 2,000 members x 1,000,000 partitions in seconds.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from testbed.assignors.model import (
    AssignorInputError,
    GroupAssignment,
    MemberSubscription,
    TopicPartition,
    start_assignment,
)

# kafka-python's own names for the two resets (its consumer accepts both spellings)
AUTO_OFFSET_RESET_ALIASES = {"smallest": "earliest", "largest": "latest"}


def reset_policy(auto_offset_reset: object, key: str = "auto_offset_reset") -> str:
    """The consumer's auto.offset.reset as KIP-169 reads it: ``latest`` (or kafka-python's ``largest``) means a
    never-committed partition has no lag; ``earliest`` "or any other value" counts every record in the log.
    Only a value that is not a string is refused, naming ``key``."""
    if not isinstance(auto_offset_reset, str):
        raise AssignorInputError(f"{key}: must be a string such as earliest or latest, got {auto_offset_reset!r}")
    value = auto_offset_reset.strip().lower()
    return AUTO_OFFSET_RESET_ALIASES.get(value, value)


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """Offsets of one partition as the leader saw them; ``committed`` is None when the group never committed."""

    beginning: int
    end: int
    committed: int | None


def partition_lag(offsets: PartitionOffsets, auto_offset_reset: str) -> int:
    """Lag of one partition as KIP-169 defines it.

    Committed: end - committed. Never committed: 0 under ``latest`` (the member will start at the end),
    otherwise every record still in the log (end - beginning), as the KIP says for earliest "or any other
    value". Negative results (a committed offset past a truncated end) are clamped to 0.
    """
    if offsets.committed is None:
        if reset_policy(auto_offset_reset) == "latest":
            return 0
        return max(0, offsets.end - offsets.beginning)
    return max(0, offsets.end - offsets.committed)


def lags_from_offsets(
    partitions_per_topic: Mapping[str, int],
    offsets: Mapping[TopicPartition, PartitionOffsets],
    auto_offset_reset: str,
) -> dict[str, list[int]]:
    """Per topic, a list of lags indexed by partition; a partition without offsets counts as lag 0.

    Lag 0 for a missing partition keeps the assignment count-balanced (the KIP's first goal) when the
    leader could not fetch offsets; the adapter logs which partitions were missing.
    """
    lags: dict[str, list[int]] = {}
    for topic, count in partitions_per_topic.items():
        row = [0] * count
        for p in range(count):
            found = offsets.get((topic, p))
            if found is not None:
                row[p] = partition_lag(found, auto_offset_reset)
        lags[topic] = row
    return lags


LagScope = Literal["topic", "group"]


def assign_lag_aware(
    partitions_per_topic: Mapping[str, int],
    members: Sequence[MemberSubscription],
    lags: Mapping[str, Sequence[int]] | None = None,
    scope: LagScope = "topic",
) -> GroupAssignment:
    """Assign every subscribed partition; ``lags[topic][p]`` is partition p's lag (missing: 0).

    ``scope="topic"`` is KIP-169: within a topic, ties in partition count go to the member with the least lag
    *of that topic*, then the smallest id; across topics nothing is balanced, so with several topics lag and
    counts pile up on the members that sort first (three one-partition topics of equal lag all go to one
    member). ``scope="group"`` (beyond the KIP) keeps the per-topic count balance and breaks its ties by each
    member's partition count, then lag, over every topic assigned so far: the same per-topic counts, total
    counts within one, and the backlog spread across members (benchmarks/lag_aware_skew.py).
    """
    if scope not in ("topic", "group"):
        raise AssignorInputError(f"scope: {scope!r} is not one of topic, group")
    assignment = start_assignment(partitions_per_topic, members)
    lags = lags or {}
    ordered_ids = sorted(m.member_id for m in members)
    topics_by_member = {m.member_id: m.topics for m in members}
    group_lag = dict.fromkeys(ordered_ids, 0)  # scope="group": over the topics assigned so far
    group_count = dict.fromkeys(ordered_ids, 0)

    for topic in sorted(partitions_per_topic):
        count = partitions_per_topic[topic]
        subscribers = [mid for mid in ordered_ids if topic in topics_by_member[mid]]
        if not subscribers or count == 0:
            continue
        topic_lags = lags.get(topic)
        if topic_lags is not None and len(topic_lags) != count:
            raise AssignorInputError(
                f"lags[{topic!r}]: expected {count} values (one per partition), got {len(topic_lags)}"
            )
        if topic_lags is None:
            order: Sequence[int] = range(count)
            topic_lags = [0] * count
        else:
            # Decreasing lag; equal lags in partition order so the result is deterministic.
            order = sorted(range(count), key=lambda p: (-topic_lags[p], p))
        per_member: list[list[int]] = [[] for _ in subscribers]
        # (partitions of this topic, partitions so far, lag, member index). The KIP: lag of this topic (the
        # second place unused, 0). The group scope, as the KIP orders its goals: count of this topic, then the
        # count over every topic so far, then the lag over every topic so far.
        group = scope == "group"
        heap = [(0, group_count[mid] if group else 0, group_lag[mid] if group else 0, i)
                for i, mid in enumerate(subscribers)]
        heapq.heapify(heap)
        for p in order:
            n, total, lag, i = heap[0]
            heapq.heapreplace(heap, (n + 1, total + 1 if group else 0, lag + topic_lags[p], i))
            per_member[i].append(p)
        for i, mid in enumerate(subscribers):
            if per_member[i]:
                assignment[mid][topic] = sorted(per_member[i])
                group_lag[mid] += sum(topic_lags[p] for p in per_member[i])
                group_count[mid] += len(per_member[i])
    return GroupAssignment(partitions=assignment, user_data={m.member_id: b"" for m in members})

