"""StickyStreamJoinAssignor core (seed 003): co-partitioned, sticky, zombie-safe by epoch.

Partition *numbers* are assigned, not topic partitions: a member that gets number n gets partition n
of every group topic it subscribes to, so both sides of a join meet in one member.

1. Eligible numbers: 0 .. N-1 with N the smallest partition count among the topics anyone subscribes
   to (numbers beyond it stay unassigned until every topic has grown, as the seed says).
2. Previous ownership comes from subscription user data (owned numbers + the epoch of that
   assignment). When two members claim one number, the higher epoch wins (a zombie that missed a
   rebalance carries an older epoch); equal epochs go to the smaller member id.
3. Quotas: N // M each, and the N % M extra ones to the members that owned the most before (ties:
   member id), so as few numbers as possible have to move.
4. Each member keeps up to its quota of what it owned (lowest numbers first); the rest and the
   never-owned numbers are handed out in the seed's "select one by one, fairly" order: a member's
   k-th pick happens in round k, members in id order within a round. Computing every pick's
   (round, member) slot and sorting is O(N log N), the same result as simulating the rounds.
5. Numbers become topic partitions for the topics each member subscribes to; with differing
   subscriptions some topic partitions stay unassigned (the seed's intended behaviour).
6. The new epoch is max(claimed epochs) + 1 and travels in every member's assignment user data.

User data (all big-endian):
  subscription: int16 version=0, int32 epoch, int32 count, count x int32 owned partition numbers
  assignment:   int16 version=0, int32 epoch
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from testbed.assignors.model import (
    GroupAssignment,
    MemberSubscription,
    UserDataError,
    start_assignment,
)

USER_DATA_VERSION = 0
_SUB_HEADER = struct.Struct(">hii")
_ASSIGN = struct.Struct(">hi")
NO_EPOCH = 0


@dataclass(frozen=True, slots=True)
class StreamJoinClaim:
    """What a member says it owned after the last assignment it received."""

    epoch: int
    partitions: tuple[int, ...]


def encode_subscription_user_data(epoch: int, partitions: Iterable[int]) -> bytes:
    numbers = sorted(set(partitions))
    return _SUB_HEADER.pack(USER_DATA_VERSION, epoch, len(numbers)) + struct.pack(f">{len(numbers)}i", *numbers)


def decode_subscription_user_data(member_id: str, user_data: bytes | None) -> StreamJoinClaim:
    if not user_data:
        return StreamJoinClaim(epoch=NO_EPOCH, partitions=())
    try:
        version, epoch, count = _SUB_HEADER.unpack_from(user_data)
        if version != USER_DATA_VERSION:
            raise UserDataError(
                f"member {member_id!r}: stream-join subscription user data version {version}, expected "
                f"{USER_DATA_VERSION}"
            )
        numbers = struct.unpack_from(f">{count}i", user_data, _SUB_HEADER.size)
    except struct.error as exc:
        raise UserDataError(
            f"member {member_id!r}: stream-join subscription user data must be int16 version, int32 epoch, "
            f"int32 count, count x int32 partitions ({len(user_data)} bytes could not be read: {exc})"
        ) from exc
    return StreamJoinClaim(epoch=epoch, partitions=numbers)


def encode_assignment_user_data(epoch: int) -> bytes:
    return _ASSIGN.pack(USER_DATA_VERSION, epoch)


def decode_assignment_user_data(user_data: bytes | None) -> int:
    """The epoch of an assignment; NO_EPOCH when the data is absent."""
    if not user_data:
        return NO_EPOCH
    try:
        version, epoch = _ASSIGN.unpack_from(user_data)
    except struct.error as exc:
        raise UserDataError(
            f"stream-join assignment user data must be int16 version + int32 epoch, got {len(user_data)} bytes"
        ) from exc
    if version != USER_DATA_VERSION:
        raise UserDataError(f"stream-join assignment user data version {version}, expected {USER_DATA_VERSION}")
    return epoch


def eligible_partition_count(partitions_per_topic: Mapping[str, int], group_topics: Iterable[str]) -> int:
    counts = [partitions_per_topic[t] for t in group_topics if t in partitions_per_topic]
    return min(counts) if counts else 0


def assign_sticky_stream_join(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> GroupAssignment:
    assignment = start_assignment(partitions_per_topic, members)
    group_topics = {t for m in members for t in m.topics if t in partitions_per_topic}
    n = eligible_partition_count(partitions_per_topic, group_topics)
    claims = {m.member_id: decode_subscription_user_data(m.member_id, m.user_data) for m in members}
    next_epoch = max((c.epoch for c in claims.values()), default=NO_EPOCH) + 1
    # A member none of whose topics exist yet cannot use any number; giving it one would strand it.
    eligible = sorted(m.member_id for m in members if m.topics & group_topics)

    numbers_by_member = _assign_numbers(n, eligible, claims) if eligible and n else {}
    topics_by_member = {m.member_id: m.topics for m in members}
    for mid, numbers in numbers_by_member.items():
        for topic in topics_by_member[mid] & group_topics:
            assignment[mid][topic] = list(numbers)
    user_data = {m.member_id: encode_assignment_user_data(next_epoch) for m in members}
    return GroupAssignment(partitions=assignment, user_data=user_data)


def _assign_numbers(n: int, eligible: list[str], claims: Mapping[str, StreamJoinClaim]) -> dict[str, list[int]]:
    order = {mid: i for i, mid in enumerate(eligible)}
    owner: list[str | None] = [None] * n
    # Highest epoch first, so setdefault-style "first claim wins" means "highest epoch wins".
    for mid in sorted(eligible, key=lambda m: (-claims[m].epoch, m)):
        for p in claims[mid].partitions:
            if 0 <= p < n and owner[p] is None:
                owner[p] = mid
    previous: dict[str, list[int]] = {mid: [] for mid in eligible}
    for p, mid in enumerate(owner):
        if mid is not None:
            previous[mid].append(p)  # ascending, because p ascends

    base, extra = divmod(n, len(eligible))
    by_previous = sorted(eligible, key=lambda m: (-len(previous[m]), order[m]))
    quota = {mid: base + (1 if i < extra else 0) for i, mid in enumerate(by_previous)}

    kept = {mid: previous[mid][: quota[mid]] for mid in eligible}
    taken = bytearray(n)
    for numbers in kept.values():
        for p in numbers:
            taken[p] = 1
    free = [p for p in range(n) if not taken[p]]
    slots = sorted(
        (len(kept[mid]) + j, order[mid]) for mid in eligible for j in range(quota[mid] - len(kept[mid]))
    )
    result = {mid: list(numbers) for mid, numbers in kept.items()}
    for (_round, member_index), p in zip(slots, free, strict=True):
        result[eligible[member_index]].append(p)
    for numbers in result.values():
        numbers.sort()
    return result
