"""How a member ended, worked out once whoever ended it: the ``member_exit`` detail the fleet writes.

A member process and a member hosted in a shared process end differently (a watcher thread reaps the one, the
host reports the other), but keep the same books: what the harness asked of the member before it ended (a
stop, a kill) decides the cause, the detail is worked out once, and the fleet's ``on_exit`` is told once.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from typing import Any, Literal

from ..children import signal_name
from ..members.runtime import STACKS_SIGNAL

log = logging.getLogger(__name__)

# Why a member ended: 'stopped' = asked with SIGTERM and exited within the timeout;
# 'stop_timeout' = asked, did not exit in time, SIGKILLed; 'killed' = the harness's SIGKILL;
# 'exited' = ended by itself, unasked (crash, max_records, fatal client error).
ExitCause = Literal["stopped", "stop_timeout", "killed", "exited"]
ExitCallback = Callable[[Any, dict[str, Any]], None]  # (the member, its member_exit detail)
KILLING_SIGNALS = frozenset({signal.SIGKILL, STACKS_SIGNAL})


def exit_detail(returncode: int, *, stop_requested: bool, kill_cause: ExitCause | None,
                pid: int | None = None) -> dict[str, Any]:
    """The ``member_exit`` detail of a process that ended with ``returncode`` (Popen's: negative = signal).

    A requested SIGKILL counts as the cause only when the process did die of SIGKILL (or of the stacks signal
    sent just before it, which kills a program that does not handle it): one that had already ended by itself
    when the signal was sent is 'stopped' (if asked to stop) or 'exited'.
    """
    if kill_cause is not None and -returncode in KILLING_SIGNALS:
        cause: ExitCause = kill_cause
    elif stop_requested:
        cause = "stopped"
    else:
        cause = "exited"
    return {
        "exit_code": returncode if returncode >= 0 else None,
        "signal": signal_name(-returncode) if returncode < 0 else None,
        "cause": cause,
        "requested": stop_requested or kill_cause is not None,
        "pid": pid,
    }


class ExitBook:
    """One member's exit books: the stop and kill the harness asked for, then the detail of its end.

    The thread that sees the end (a watcher, a host's reader) calls ``record`` then ``announce``; the harness's
    threads call ``ask_stop`` and ``ask_kill`` beside it, hence the lock."""

    def __init__(self, on_exit: ExitCallback | None) -> None:
        self.on_exit = on_exit
        self.detail: dict[str, Any] | None = None
        self.stop_requested = False
        self.kill_cause: ExitCause | None = None
        self._lock = threading.Lock()
        self._announced = threading.Event()

    def ask_stop(self) -> None:
        with self._lock:
            self.stop_requested = True

    def ask_kill(self, cause: ExitCause) -> None:
        """A SIGKILL is on its way; it is the cause only if the member has not ended already."""
        with self._lock:
            if self.detail is None:
                self.kill_cause = cause

    def record(self, returncode: int, pid: int | None, **extra: Any) -> dict[str, Any] | None:
        """The detail of this end, worked out from what was asked; None when the end was recorded already (a
        second report of the same end)."""
        with self._lock:
            if self.detail is not None:
                return None
            self.detail = exit_detail(returncode, stop_requested=self.stop_requested, kill_cause=self.kill_cause,
                                      pid=pid) | extra
            return self.detail

    def announce(self, member: Any) -> None:
        """Tell ``on_exit`` of the recorded end; a failing callback is logged, never fatal to the thread calling."""
        try:
            if self.on_exit is not None and self.detail is not None:
                self.on_exit(member, self.detail)
        except Exception as exc:  # noqa: BLE001 - e.g. the harness log already closed
            log.warning("recording the exit of %s failed: %s", member.member_id, exc)
        finally:
            self._announced.set()

    def wait_announced(self, timeout_s: float) -> bool:
        return self._announced.wait(timeout_s)


__all__ = ["ExitBook", "ExitCallback", "ExitCause", "exit_detail"]
