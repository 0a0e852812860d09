"""The run history: typed events and the append-only writer (where they live: testbed.run.layout)."""

from .events import *  # noqa: F401,F403
from .writer import HistoryWriter, read_events

__all__ = ["HistoryWriter", "read_events"]
