"""Signals as requests: the signal only writes its number to a pipe, and a thread of the relay's own acts on it.

A Python-level signal handler runs in the main thread between two bytecodes, whatever that thread was doing. One
that takes a lock, as ``threading.Event.set`` does, deadlocks the process when the main thread already held that
lock (inside ``Event.wait``), or when a second signal lands while the first one's handler holds it. The second case
is what hung kafka-python members at a group's teardown (docs/metrics.md, close_hangs): two SIGTERMs microseconds
apart, the second handler waiting forever for the lock the first one held, on the same thread.

Here the handlers do nothing: ``signal.set_wakeup_fd`` makes the interpreter's C-level handler write each signal's
number to a pipe as it arrives (in whichever thread the kernel picked, even while the main thread is blocked in C),
and the relay thread reads the pipe and runs the action in plain thread context, where taking a lock is safe. A
process has one wakeup fd, so it has one relay (``relay``); an asyncio loop's ``add_signal_handler`` would take it
over, and no runner uses that.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class SignalRelay:
    """The process's signal actions, run on the relay's thread."""

    def __init__(self) -> None:
        self._actions: dict[int, list[Callable[[], None]]] = {}
        self._lock = threading.Lock()
        self._read_fd: int | None = None

    def on(self, signum: signal.Signals, action: Callable[[], None]) -> None:
        """Run ``action`` on the relay's thread at each ``signum`` from now on (main thread only, as
        ``signal.signal``)."""
        with self._lock:
            self._actions.setdefault(int(signum), []).append(action)
            if self._read_fd is None:
                self._read_fd = self._start()
        signal.signal(signum, _noted_by_the_wakeup_fd)

    def _start(self) -> int:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)  # the C handler must never block; a full pipe drops the byte, not the stop
        signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        threading.Thread(target=self._relay, args=(read_fd,), name="signal-relay", daemon=True).start()
        return read_fd

    def _relay(self, read_fd: int) -> None:
        while True:
            for signum in os.read(read_fd, 64):
                with self._lock:
                    actions = list(self._actions.get(signum, ()))
                for action in actions:
                    try:
                        action()
                    except Exception:  # noqa: BLE001 - one failing action must not end the relay
                        log.exception("the action for signal %d failed", signum)


def _noted_by_the_wakeup_fd(signum: int, _frame: object) -> None:
    """Installed so that the interpreter catches the signal (and writes it to the wakeup fd); acts on nothing."""


_RELAY = SignalRelay()


def relay(signum: signal.Signals, action: Callable[[], None]) -> None:
    """Run ``action`` on the process's relay thread whenever ``signum`` arrives."""
    _RELAY.on(signum, action)
