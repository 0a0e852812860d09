"""The process's instrumentation: its config, history, commit context and consumers, and how it fails.

The instrumentation must never be why a program fails. Whatever goes wrong in its own bookkeeping is
printed to stderr as ``testbed instrument: ...`` and written to the history as an ``error`` with code
``INSTRUMENT_FAILED`` (once per place it went wrong), and the program's call goes on as if the
instrumentation were not there.
"""

from __future__ import annotations

import sys
import threading
from typing import Optional, Set

from .config import InstrumentConfig
from .history import MemberHistoryFile
from .tracker import TRACKERS, Trackers
from .triggers import CommitContext

FAILURE_CODE = "INSTRUMENT_FAILED"


def say(message: str) -> None:
    """One line on the program's stderr, marked as ours."""
    try:
        sys.stderr.write(f"testbed instrument: {message}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - a closed stderr is no reason to fail the program
        pass


class Instrumentation:
    def __init__(self, config: InstrumentConfig, trackers: Trackers = TRACKERS) -> None:
        self.config = config
        self.history = MemberHistoryFile(config.history_path, config.member_id)
        self.context = CommitContext()
        self.trackers = trackers
        self.exiting = False  # set at interpreter exit: nothing more is recorded but the last processed runs
        self._reported: Set[str] = set()
        self._lock = threading.Lock()

    def failed(self, where: str, exc: BaseException, *, fatal: bool = False) -> None:
        """Our own failure at ``where``: said and recorded once, never raised."""
        with self._lock:
            if where in self._reported:
                return
            self._reported.add(where)
        message = f"{where} failed: {type(exc).__name__}: {exc}"
        say(message + ("" if not fatal else "; the program runs without instrumentation"))
        try:
            self.history.error(FAILURE_CODE, message, fatal=fatal)
        except Exception as write_exc:  # noqa: BLE001 - the history itself may be what fails
            say(f"could not write to {self.config.history_path}: {write_exc}")

    def at_exit(self) -> None:
        """The interpreter ends: write the processed runs still open, then record nothing more."""
        self.exiting = True
        self.trackers.at_exit()


CURRENT: Optional[Instrumentation] = None  # set by testbed.instrument.hooks.install
