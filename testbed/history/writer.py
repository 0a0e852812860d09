"""Append-only JSONL history files, flushed per line.

Each line is written with one ``os.write`` on an ``O_APPEND`` descriptor, so a SIGKILL can at
worst lose the line being written, never tear or lose one already returned from :meth:`write`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .events import Event, parse_event


class HistoryWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        # kafka-python runs rebalance callbacks on its IO thread, beside the poll loop.
        self._lock = threading.Lock()

    def write(self, event: BaseModel | dict[str, Any]) -> None:
        obj = event.model_dump(mode="json") if isinstance(event, BaseModel) else event
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with self._lock:
            os.write(self._fd, line)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> "HistoryWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: Path) -> Iterator[Event]:
    """Events of one file in order; a torn last line (the writer was killed mid-write) is skipped."""
    with path.open("rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                return
            yield parse_event(json.loads(raw))
