"""Typed inputs and outputs shared by the pure assignor cores.

The cores never see kafka-python objects: an adapter (``testbed.assignors.kafka_python``) decodes the
group's JoinGroup metadata into :class:`MemberSubscription` values, calls a core, and encodes the
:class:`GroupAssignment` it gets back. Keeping this boundary lets the simulator and the benchmark run
the exact code a consumer leader runs, without a broker.

Plain frozen dataclasses rather than pydantic models here: at 2,000 members x 1,000,000 partitions
validation of every partition list would cost more than the assignment itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from testbed.errors import ConfigError

TopicPartition = tuple[str, int]
"""(topic, partition), the same shape as ``testbed.history.events.TopicPartition``."""


class AssignorInputError(ConfigError):
    """An assignor was given input it cannot use; the message names the field and what is allowed."""


class UserDataError(AssignorInputError):
    """A member's subscription or assignment user data could not be decoded."""


@dataclass(frozen=True, slots=True)
class MemberSubscription:
    """What one member told the group leader in its JoinGroup request."""

    member_id: str
    topics: frozenset[str]
    user_data: bytes = b""
    # KIP-429 owned partitions (subscription v1+); empty for eager members.
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = -1
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class GroupAssignment:
    """A core's answer: per member, per topic, the sorted partitions; and per member the user data."""

    partitions: Mapping[str, Mapping[str, list[int]]]
    user_data: Mapping[str, bytes] = field(default_factory=dict)

    def topic_partitions(self, member_id: str) -> set[TopicPartition]:
        return {(t, p) for t, ps in self.partitions.get(member_id, {}).items() for p in ps}

    def owner_by_partition(self) -> dict[TopicPartition, str]:
        """Each assigned partition's owner; raises if a partition was given to two members."""
        owners: dict[TopicPartition, str] = {}
        for member_id, by_topic in self.partitions.items():
            for topic, parts in by_topic.items():
                for p in parts:
                    previous = owners.setdefault((topic, p), member_id)
                    if previous != member_id:
                        raise AssertionError(f"{topic}-{p} assigned to both {previous} and {member_id}")
        return owners

    def counts(self) -> dict[str, int]:
        return {m: sum(len(ps) for ps in by_topic.values()) for m, by_topic in self.partitions.items()}


def validate_partitions_per_topic(partitions_per_topic: Mapping[str, int]) -> None:
    for topic, count in partitions_per_topic.items():
        if not isinstance(topic, str) or not topic:
            raise AssignorInputError(f"partitions_per_topic: topic names must be non-empty strings, got {topic!r}")
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise AssignorInputError(
                f"partitions_per_topic[{topic!r}]: partition count must be an int >= 0, got {count!r}"
            )


def validate_members(members: Sequence[MemberSubscription]) -> None:
    seen: set[str] = set()
    for member in members:
        if not isinstance(member, MemberSubscription):
            raise AssignorInputError(f"members: expected MemberSubscription values, got {type(member).__name__}")
        if member.member_id in seen:
            raise AssignorInputError(f"members: member_id {member.member_id!r} appears twice; ids must be unique")
        seen.add(member.member_id)


def group_by_topic(pairs: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """[(topic, p), ...] -> {topic: sorted [p, ...]}."""
    by_topic: dict[str, list[int]] = {}
    for topic, p in pairs:
        by_topic.setdefault(topic, []).append(p)
    for parts in by_topic.values():
        parts.sort()
    return by_topic


def start_assignment(
    partitions_per_topic: Mapping[str, int], members: Sequence[MemberSubscription]
) -> dict[str, dict[str, list[int]]]:
    """Validate a core's input and return the empty per-member assignment it fills in."""
    validate_partitions_per_topic(partitions_per_topic)
    validate_members(members)
    return {m.member_id: {} for m in members}
