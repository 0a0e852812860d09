"""A stall of the program's poll loop, on signals, as ``testbed.members.runtime.PollStall`` does for the runners.

SIGUSR1 starts a stall, SIGUSR2 ends it (``testbed.members.runtime.STALL_SIGNAL`` / ``UNSTALL_SIGNAL``,
the signals the fleet sends a member). While stalled, the instrumented ``poll`` / ``consume`` / ``next``
block before asking the client, so the program stops getting records while the client's own threads
(librdkafka's, kafka-python's heartbeat) run on: the member stays in the group until
max.poll.interval.ms says otherwise, the stall of a slow handler that the client is meant to notice.

The handlers are installed only when both signals still have their default action as the
instrumentation loads: a program (or whatever started it) that handles them itself keeps them. A
SIGTERM or SIGINT during a stall ends it before the program's own handler runs, so a program asked to
stop is not held in a stall until it is killed.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any, Optional

STALL_SIGNAL = signal.SIGUSR1
UNSTALL_SIGNAL = signal.SIGUSR2
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
HOLD_CHECK_S = 0.01  # how often a held call looks whether the stall ended (a signal handler ends it)


class Stall:
    """The process's one stall: ``on`` is read on every instrumented call, so it is a plain attribute."""

    def __init__(self) -> None:
        self.on = False
        self._saved: dict = {}  # the program's stop handlers, replaced while a stall is on

    # start and end run inside signal handlers, on the main thread, between any two of its bytecodes: they take
    # no lock (a threading.Event would deadlock when the main thread already held its lock inside hold's wait).
    def start(self) -> None:
        self.on = True
        self._watch_stop_signals()

    def end(self) -> None:
        self.on = False
        self._restore_stop_signals()

    def hold(self) -> None:
        """Blocks while a stall is on."""
        while self.on:
            time.sleep(HOLD_CHECK_S)

    # ---- a stop request ends the stall ----------------------------------------------------------

    def _watch_stop_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # signal.signal works only there (the signal handlers always run there)
        for signum in STOP_SIGNALS:
            if signum in self._saved:
                continue
            previous = signal.getsignal(signum)
            if previous == signal.SIG_IGN or previous is None:
                continue  # ignored (or set from C): a stop the program does not take does not end the stall
            self._saved[signum] = previous
            signal.signal(signum, self._stop_during_stall)

    def _restore_stop_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, previous in list(self._saved.items()):
            if signal.getsignal(signum) == self._stop_during_stall:  # unless the program replaced it since
                signal.signal(signum, previous)
            del self._saved[signum]

    def _stop_during_stall(self, signum: int, frame: Any) -> None:
        previous = self._saved.get(signum, signal.SIG_DFL)
        self.end()  # restores the program's handler
        if callable(previous):
            previous(signum, frame)
        else:  # SIG_DFL: the default action (termination), as if the stall had never been
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)


STALL = Stall()


def install_stall_signals(stall: Optional[Stall] = None) -> bool:
    """SIGUSR1 starts, SIGUSR2 ends a stall, if both still have their default action; True if installed."""
    stall = stall or STALL
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(STALL_SIGNAL) != signal.SIG_DFL or signal.getsignal(UNSTALL_SIGNAL) != signal.SIG_DFL:
        return False
    signal.signal(STALL_SIGNAL, lambda *_: stall.start())
    signal.signal(UNSTALL_SIGNAL, lambda *_: stall.end())
    return True
