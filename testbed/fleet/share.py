"""Share groups (KIP-932) seen from the members' histories, for the harness's waits (never for verdicts).

A share group has no assignment to agree on: a partition's records are lent to whichever member fetches them,
record by record, under an acquisition lock. So the harness waits on what the members did:

- ``ShareActivity``: when each member last acquired records. A share group is working for the harness when
  every live member acquired records after the wait began (records must be flowing: a load).
- ``ShareHolding``: what one member holds now: records acquired and not yet answered, acknowledgements handed
  to its client and not yet answered. A fault step can wait for that moment (``when:``), so that a kill or
  a freeze finds the member holding records, or with acknowledgements on the wire.
- ``ShareSettlement``: which records are settled, i.e. accepted or rejected (the broker took the
  acknowledgement), or archived by the delivery count limit (acquired that many times, then released, or its
  lock expired). The final drain of a share run waits until every record written is settled.

Both read the history files incrementally (only what was appended since the last read); a torn last line waits
for its end.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from ..history.events import ShareAckSent, ShareAcknowledged, ShareAcquired, event_name
from ..history.tail import HistoryTail, markers

_MARKERS = markers(ShareAcquired, ShareAcknowledged)
_HOLDING_MARKERS = markers(ShareAcquired, ShareAckSent, ShareAcknowledged)
HoldingMoment = Literal["holding_records", "acks_in_flight"]
ACQUIRED, ACK_SENT, ACKNOWLEDGED = event_name(ShareAcquired), event_name(ShareAckSent), event_name(ShareAcknowledged)


class ShareHolding:
    """One member's records acquired and not yet acknowledged (``held``: no acknowledgement sent), and
    acknowledgements sent and not yet answered (``in_flight``), from its history, counting only what it acquired
    or sent after ``since_ms`` (what it acquired before may have lost its lock meanwhile). Sending moves a record
    from the first to the second; an answer (``share_acknowledged``, whatever the broker said) ends both."""

    def __init__(self, path: Path, since_ms: int) -> None:
        self._tail = HistoryTail(path, _HOLDING_MARKERS)
        # Only what comes next matters: start at the file's end (a member writes each line in one append).
        self._tail.offset = path.stat().st_size if path.exists() else 0
        self.since_ms = since_ms
        self.held: set[tuple[str, int, int]] = set()
        self.in_flight: set[tuple[str, int, int]] = set()

    def apply(self, event: dict) -> None:
        key = (event.get("topic"), event.get("partition"))
        name, fresh = event.get("name"), int(event.get("ts_ms", 0)) >= self.since_ms
        if name == ACQUIRED and fresh:
            self.held.update((*key, offset) for offset, _count in event.get("acquired", []))
        elif name == ACK_SENT:
            sent = {(*key, offset) for offset in event.get("acknowledged", [])}
            self.held -= sent
            if fresh:
                self.in_flight |= sent
        elif name == ACKNOWLEDGED:
            answered = {(*key, offset) for offset in event.get("acknowledged", [])}
            self.held -= answered
            self.in_flight -= answered

    def now(self, moment: HoldingMoment) -> bool:
        """Whether the member is at ``moment`` now, as far as its history has been written."""
        for event in self._tail.new_events():
            self.apply(event)
        return bool(self.in_flight if moment == "acks_in_flight" else self.held)


class ShareActivity:
    """The last time (wall ms) each member's history shows an acquisition."""

    def __init__(self) -> None:
        self._followers: dict[Path, HistoryTail] = {}
        self._last: dict[Path, int] = {}

    def last_acquired_ms(self, path: Path) -> int | None:
        follower = self._followers.setdefault(path, HistoryTail(path, _MARKERS))
        for event in follower.new_events():
            if event.get("name") == ACQUIRED and event.get("acquired"):
                self._last[path] = max(self._last.get(path, 0), int(event["ts_ms"]))
        return self._last.get(path)


class ShareSettlement:
    """Per partition, the offsets settled, from every member history of a run.

    ``delivery_count_limit`` and ``lock_ms`` are the group's: a record acquired with the limit's delivery count
    is archived by the broker once released or once its lock expired (``now_ms`` past the acquisition plus the
    lock), without an acknowledgement that says so."""

    def __init__(self, delivery_count_limit: int, lock_ms: int) -> None:
        self.limit = delivery_count_limit
        self.lock_ms = lock_ms
        self._followers: dict[Path, HistoryTail] = {}
        self.settled: dict[tuple[str, int], set[int]] = {}
        self._at_limit: dict[tuple[str, int, int], int] = {}  # acquired with the limit's count -> when

    def read(self, paths: Iterable[Path]) -> None:
        for path in paths:
            for event in self._followers.setdefault(path, HistoryTail(path, _MARKERS)).new_events():
                self.apply(event)

    def apply(self, event: dict) -> None:
        key = (event.get("topic"), event.get("partition"))
        if event.get("name") == ACQUIRED:
            for offset, count in event.get("acquired", []):
                if count is not None and count >= self.limit:
                    self._at_limit[(*key, offset)] = int(event["ts_ms"])
        elif event.get("name") == ACKNOWLEDGED and event.get("error") is None:
            offsets = event.get("acknowledged", [])
            if event.get("type") in ("accept", "reject"):
                self.settled.setdefault(key, set()).update(offsets)
            else:  # released: archived if that was its last delivery
                for offset in offsets:
                    if (*key, offset) in self._at_limit:
                        self.settled.setdefault(key, set()).add(offset)

    def pending(self, ends: dict[tuple[str, int], int], now_ms: int) -> dict[tuple[str, int], list[int]]:
        """(topic, partition) -> the offsets below the partition's end that are not settled (only the partitions
        with some)."""
        for (topic, partition, offset), when in self._at_limit.items():
            if now_ms - when > self.lock_ms:  # its lock expired on its last delivery: archived
                self.settled.setdefault((topic, partition), set()).add(offset)
        out = {}
        for key, end in ends.items():
            done = self.settled.get(key, set())
            if behind := [offset for offset in range(end) if offset not in done]:
                out[key] = behind
        return out

    def unsettled(self, ends: dict[tuple[str, int], int], now_ms: int) -> dict[str, int]:
        """``topic-partition`` -> how many of the offsets below the partition's end are not settled (only the
        partitions with some)."""
        return {f"{t}-{p}": len(offsets) for (t, p), offsets in self.pending(ends, now_ms).items()}


__all__ = ["HoldingMoment", "ShareActivity", "ShareHolding", "ShareSettlement"]
