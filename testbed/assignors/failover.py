"""FailoverAssignor core (seed 002): active/passive, every partition to the highest-priority member.

Each member puts its priority in its subscription user data (4 bytes, big-endian signed int32, the
seed's ``ByteBuffer.putInt``). Per topic, all partitions go to the subscribed member with the highest
priority; equal priorities are broken by the smallest member id so every leader computes the same
answer. When that member leaves, the next rebalance hands everything to the next one in that order.

Deviation from the seed, on purpose: the seed gives *every* topic to the single top member even when
it does not subscribe to some topic, which would hand a member partitions it never asked for. Here a
topic goes to the highest-priority member *that subscribes to it*; with identical subscriptions (the
seed's setting) the result is the same.

A consumer configured without a priority takes the seed's default, ``Integer.MAX_VALUE`` (INT32_MAX): the
seed's ``ConfigDef`` default, so an unconfigured consumer ranks with the highest (``DEFAULT_PRIORITY``;
``parse_priority`` also takes the seed's string form, ``"10"``, as Kafka's ``ConfigDef.Type.INT`` does).
Empty user data (a member of another implementation that sends none; the seed's ``getInt`` would fail on it)
ranks below every priority.
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
# The seed's default for a consumer configured without a priority (its ConfigDef: Integer.MAX_VALUE).
DEFAULT_PRIORITY = INT32_MAX


def parse_priority(value: object, key: str = "priority") -> int:
    """A configured priority: an int32, or its decimal string (the seed configures ``"10"``; Kafka's
    ``ConfigDef.Type.INT`` parses a trimmed string); anything else is refused, naming ``key``."""
    if isinstance(value, str):
        try:
            value = int(value.strip(), 10)
        except ValueError:
            raise AssignorInputError(f"{key}: must be an int32 or its decimal string, got {value!r}") from None
    if not isinstance(value, int) or isinstance(value, bool) or not INT32_MIN <= value <= INT32_MAX:
        raise AssignorInputError(f"{key}: must be an int32 ({INT32_MIN}..{INT32_MAX}), got {value!r}")
    return value


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
