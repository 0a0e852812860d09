"""Acknowledgements a share member handed to its client, matched with the broker's answer when it arrives.

Both share consumers (confluent-kafka's ShareConsumer, Java's KafkaShareConsumer) report an acknowledgement
commit per partition as the set of offsets and one error, without the type each offset was acknowledged with:
the member remembers what it handed over (type, time) and reads it back here, so each ``share_acknowledged``
event carries its type, when it was handed over, and what the broker said. Pure: stdlib only (runners import
it inside client virtualenvs).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

ACK_TYPES = ("accept", "release", "reject")


@dataclass(frozen=True)
class AnsweredAcks:
    """Offsets of one partition acknowledged with one type, answered together."""

    topic: str
    partition: int
    offsets: list[int]
    type: str
    sent_ms: int | None  # the earliest hand-over among them; None when none was recorded


class PendingAcks:
    """What was handed to the client and not yet answered, per (topic, partition, offset)."""

    def __init__(self) -> None:
        self._pending: dict[tuple[str, int, int], tuple[str, int]] = {}

    def hand_over(self, topic: str, partition: int, offset: int, type_: str, sent_ms: int) -> None:
        if type_ not in ACK_TYPES:
            raise ValueError(f"type must be one of {', '.join(ACK_TYPES)}, got {type_!r}")
        self._pending[(topic, partition, offset)] = (type_, sent_ms)

    def answered(self, topic: str, partition: int, offsets: Iterable[int]) -> list[AnsweredAcks]:
        """The answered offsets grouped by the type they were handed over with (an offset never handed over
        counts as accepted: the client's implicit acknowledgement), in the order accept, release, reject."""
        by_type: dict[str, list[int]] = {}
        sent: dict[str, int | None] = {}
        for offset in sorted(set(offsets)):
            type_, when = self._pending.pop((topic, partition, offset), ("accept", None))
            by_type.setdefault(type_, []).append(offset)
            if when is not None:
                sent[type_] = min(sent.get(type_) or when, when)
        return [AnsweredAcks(topic, partition, by_type[t], t, sent.get(t)) for t in ACK_TYPES if t in by_type]

    def __len__(self) -> int:
        return len(self._pending)


__all__ = ["ACK_TYPES", "AnsweredAcks", "PendingAcks"]
