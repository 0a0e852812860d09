"""Share groups (KIP-932) seen from the members' histories, for the harness's waits (never for verdicts).

A share group has no assignment to agree on: a partition's records are lent to whichever member fetches them,
record by record, under an acquisition lock. So the harness waits on what the members did:

- ``ShareActivity``: when each member last acquired records. A share group is working for the harness when
  every live member acquired records after the wait began (records must be flowing: a load).
- ``ShareSettlement``: which records are settled, i.e. accepted or rejected (the broker took the
  acknowledgement), or archived by the delivery count limit (acquired that many times, then released, or its
  lock expired). The final drain of a share run waits until every record written is settled.

Both read the history files incrementally (only what was appended since the last read); a torn last line waits
for its end.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..history.tail import HistoryTail

_MARKERS = (b'"share_acquired"', b'"share_acknowledged"')


class ShareActivity:
    """The last time (wall ms) each member's history shows an acquisition."""

    def __init__(self) -> None:
        self._followers: dict[Path, HistoryTail] = {}
        self._last: dict[Path, int] = {}

    def last_acquired_ms(self, path: Path) -> int | None:
        follower = self._followers.setdefault(path, HistoryTail(path, _MARKERS))
        for event in follower.new_events():
            if event.get("name") == "share_acquired" and event.get("acquired"):
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
        if event.get("name") == "share_acquired":
            for offset, count in event.get("acquired", []):
                if count is not None and count >= self.limit:
                    self._at_limit[(*key, offset)] = int(event["ts_ms"])
        elif event.get("name") == "share_acknowledged" and event.get("error") is None:
            offsets = event.get("acknowledged", [])
            if event.get("type") in ("accept", "reject"):
                self.settled.setdefault(key, set()).update(offsets)
            else:  # released: archived if that was its last delivery
                for offset in offsets:
                    if (*key, offset) in self._at_limit:
                        self.settled.setdefault(key, set()).add(offset)

    def unsettled(self, ends: dict[tuple[str, int], int], now_ms: int) -> dict[str, int]:
        """``topic-partition`` -> how many of the offsets below the partition's end are not settled (only the
        partitions with some)."""
        for (topic, partition, offset), when in self._at_limit.items():
            if now_ms - when > self.lock_ms:  # its lock expired on its last delivery: archived
                self.settled.setdefault((topic, partition), set()).add(offset)
        out = {}
        for (topic, partition), end in ends.items():
            done = self.settled.get((topic, partition), set())
            behind = sum(1 for offset in range(end) if offset not in done)
            if behind:
                out[f"{topic}-{partition}"] = behind
        return out


__all__ = ["ShareActivity", "ShareSettlement"]
