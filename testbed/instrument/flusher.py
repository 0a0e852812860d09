"""A daemon thread that writes processed runs once their window is over, whatever the program is doing.

The consumer's own calls write due runs as they pass (``testbed.instrument.runs``), but a program that blocks
in a long ``poll`` or in its own work makes no call: its last records would stay unwritten, and lost at a
SIGKILL, for as long as it waits. The flusher bounds that to the window (20 ms, plus its wake-up). It runs
only once a run has opened, sleeps until the earliest due time of the consumers that registered one, and
then flushes under each consumer's lock (the lock order is always consumer, then flusher).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from .runs import NEVER


class Flusher:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._due: Dict[int, Tuple[Any, float]] = {}  # id(tracker) -> (tracker, due ns)
        self._thread: Optional[threading.Thread] = None

    def due(self, tracker: Any, due_ns: float) -> None:
        """``tracker`` (a ConsumerTracker) has open runs to write at ``due_ns`` (monotonic ns); called under its
        lock."""
        with self._cond:
            known = self._due.get(id(tracker))
            if known is not None and known[1] <= due_ns:
                return
            self._due[id(tracker)] = (tracker, due_ns)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="testbed-instrument-flusher", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _ready(self) -> List[Any]:
        """Blocks until some tracker's runs are due; those trackers (forgotten here until they register again)."""
        with self._cond:
            while True:
                now = time.monotonic_ns()
                ready = [t for t, d in self._due.values() if d <= now]
                if ready:
                    for tracker in ready:
                        del self._due[id(tracker)]
                    return ready
                earliest = min((d for _, d in self._due.values()), default=NEVER)
                self._cond.wait(None if earliest == NEVER else max(0.0, (earliest - now) / 1e9))

    def _run(self) -> None:
        while True:
            for tracker in self._ready():
                try:
                    tracker.flush_due()
                except Exception:  # noqa: BLE001 - the consumer's own calls and the exit flush still write
                    pass


FLUSHER = Flusher()
