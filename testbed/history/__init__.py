"""The run history: typed events, where they live, and the append-only writer."""

from .events import *  # noqa: F401,F403
from .layout import RunDir
from .writer import HistoryWriter, read_events

__all__ = ["HistoryWriter", "RunDir", "read_events"]
