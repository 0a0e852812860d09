"""The harness's own history: every action it takes, with the time it took it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .events import Action, HarnessAction
from .writer import HistoryWriter, read_events


class HarnessLog:
    """Append-only log of harness actions (history/harness.jsonl); usable as a cluster recorder."""

    def __init__(self, path: Path) -> None:
        self._writer = HistoryWriter(path)

    def record(self, kind: Action, target: str | None = None, **detail: Any) -> HarnessAction:
        action = HarnessAction(kind=kind, target=target, detail=detail)
        self._writer.write(action)
        return action

    def __call__(self, action: HarnessAction) -> None:
        self._writer.write(action)

    def close(self) -> None:
        self._writer.close()


def read_actions(path: Path) -> list[HarnessAction]:
    """The actions of a harness log, in the order written; none when it cannot be read."""
    try:
        return [e for e in read_events(path) if isinstance(e, HarnessAction)]
    except OSError:
        return []
