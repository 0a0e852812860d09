"""A member history file followed as it grows: the live trackers behind the harness's waits read only what was
appended since their last read, and a torn last line (a writer mid-write) waits for its end."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from .events import event_name


def markers(*events: type[BaseModel]) -> tuple[bytes, ...]:
    """The byte test for the lines of these events: each one's name as its line spells it (``"assigned"``), read
    off the event's model."""
    return tuple(json.dumps(event_name(event)).encode() for event in events)


class HistoryTail:
    """The new complete events of one history file whose line holds one of ``markers`` (a cheap byte test, so
    that the bulk of a history, e.g. processed batches, is never parsed)."""

    def __init__(self, path: Path, markers: tuple[bytes, ...]) -> None:
        self.path = path
        self.markers = markers
        self.offset = 0

    def new_events(self) -> list[dict]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:  # the member has not written its first line yet
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        return [json.loads(raw) for raw in data[:end].splitlines() if any(m in raw for m in self.markers)]


__all__ = ["HistoryTail", "markers"]
