"""FailoverAssignor core (seed 002): active/passive, every partition to the highest-priority member.

Each member puts its priority in its subscription user data (4 bytes, big-endian signed int32, the
seed's ``ByteBuffer.putInt``). Per topic, all partitions go to the subscribed member with the highest
priority; equal priorities are broken by the smallest member id so every leader computes the same
answer. When that member leaves, the next rebalance hands everything to the next one in that order.

Deviation from the seed, on purpose: the seed gives *every* topic to the single top member even when
it does not subscribe to some topic, which would hand a member partitions it never asked for. Here a
topic goes to the highest-priority member *that subscribes to it*; with identical subscriptions (the
seed's setting) the result is the same.

Empty user data (a member that was not given a priority) ranks below every priority, so an
unconfigured consumer never takes over from a configured one.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

from testbed.assignors.model import (
    AssignorInputError,
    GroupAssignment,
    MemberSubscription,
    UserDataError,
    start_assignment,
)

_PRIORITY = struct.Struct(">i")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
# Below every int32 priority: how a member without user data ranks.
UNCONFIGURED_PRIORITY = INT32_MIN - 1


def encode_priority(priority: int) -> bytes:
    if not isinstance(priority, int) or isinstance(priority, bool) or not INT32_MIN <= priority <= INT32_MAX:
        raise AssignorInputError(
            f"priority: must be an int32 ({INT32_MIN}..{INT32_MAX}), got {priority!r}"
        )
    return _PRIORITY.pack(priority)


def decode_priority(member_id: str, user_data: bytes | None) -> int:
    if not user_data:
        return UNCONFIGURED_PRIORITY
    if len(user_data) != _PRIORITY.size:
        raise UserDataError(
            f"member {member_id!r}: failover user data must be 4 bytes (big-endian int32 priority), "
            f"got {len(user_data)} bytes"
        )
    return _PRIORITY.unpack(user_data)[0]


def failover_order(members: Sequence[MemberSubscription]) -> list[str]:
    """Member ids from the one that gets partitions first to the last standby."""
    ranked = sorted(members, key=lambda m: (-decode_priority(m.member_id, m.user_data), m.member_id))
    return [m.member_id for m in ranked]


def assign_failover(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> GroupAssignment:
    assignment = start_assignment(partitions_per_topic, members)
    order = failover_order(members)
    topics_by_member = {m.member_id: m.topics for m in members}
    for topic, count in sorted(partitions_per_topic.items()):
        if count == 0:
            continue
        active = next((mid for mid in order if topic in topics_by_member[mid]), None)
        if active is not None:
            assignment[active][topic] = list(range(count))
    return GroupAssignment(partitions=assignment, user_data={m.member_id: b"" for m in members})
