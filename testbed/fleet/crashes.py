"""A crash of the user's program: told apart from every other end, written down, and answered by its restart policy.

A crash is a finding about the program, not a failure of the run: a command member whose program ended by itself
(nobody asked it to stop or killed it) with a non-zero exit code or of a signal. Its ``member_crash`` action
carries the exit, the last lines of its output and the exception they show; the spec's restart policy
(``MemberSpec.restart_policy``) then decides whether a new incarnation starts in its slot, and after which
back-off. A program that ends by itself with exit code 0 chose to leave: no crash, no restart (``on-failure``,
as Kubernetes' and systemd's). A testbed runner's own crash is not handled here: it is testbed's defect, and a
wait that sees it ends the run as an error.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..history.events import Action
from ..history.harness import HarnessLog
from .crash_detail import LOG_TAIL_LINES, exception_of
from .restarts import RestartOrder, Restarter

log = logging.getLogger(__name__)


def is_crash(spec_is_command: bool, detail: dict[str, Any]) -> bool:
    """The user's program ended unasked with a failure (``member_exit`` detail, ``exits.exit_detail``)."""
    failed = detail.get("signal") is not None or detail.get("exit_code") not in (0, None)
    return spec_is_command and detail.get("cause") == "exited" and failed


def crash_detail(proc: Any, detail: dict[str, Any]) -> dict[str, Any]:
    """The ``member_crash`` detail of a crashed member process: its exit, output tail and exception."""
    tail = proc.log_tail(LOG_TAIL_LINES)
    return {"slot": proc.config.slot, "pid": detail.get("pid"), "exit_code": detail.get("exit_code"),
            "signal": detail.get("signal"), "log_tail": tail, "exception": exception_of(tail)}


class CrashRestarts:
    """The fleet's crashes and the restarts its members' policies ask for. ``on_exit`` runs on a watcher thread;
    ``start`` (the fleet's) runs on the restarter's thread when a back-off is over."""

    def __init__(self, harness: HarnessLog, start: Callable[[RestartOrder], None]) -> None:
        self.harness = harness
        self.restarter = Restarter(start)
        self._restarts_of: dict[str, int] = {}  # a member as the scenario names it -> its restarts over the run
        self._lock = threading.Lock()
        self._seen: list[tuple[float, str, str]] = []  # (monotonic time, member id, how it ended) of every crash

    def on_exit(self, proc: Any, detail: dict[str, Any], name: str, closing: bool) -> None:
        """Record a crash of ``proc`` (the scenario's ``name`` for it) and schedule its restart if its policy
        asks for one; any other end is not a crash and nothing happens."""
        spec = proc.config.spec
        if not is_crash(spec.is_command, detail):
            return
        policy = spec.restart_policy
        with self._lock:
            attempt = self._restarts_of.get(name, 0) + 1
            refused = ("the run was ending" if closing else "restart policy never" if policy.policy == "never"
                       else f"restart limit {policy.limit} reached" if attempt > policy.limit else None)
            backoff = None if refused else policy.backoff_before(attempt)
            if backoff is not None:
                self._restarts_of[name] = attempt
        crash = crash_detail(proc, detail)
        exception = crash["exception"] or {}
        how = (f"{exception.get('type')}: {exception.get('message') or ''}".strip().rstrip(":")
               if exception.get("type") else f"signal {detail['signal']}" if detail.get("signal")
               else f"exit code {detail.get('exit_code')}")
        with self._lock:
            self._seen.append((time.monotonic(), proc.member_id, how))
        self.harness.record(Action.MEMBER_CRASH, proc.member_id, **crash, restart_in_s=backoff,
                            restart_refused=refused)
        if backoff is not None:
            order = RestartOrder(time.monotonic() + backoff, proc.config.slot, proc, attempt, backoff)
            if not self.restarter.schedule(order):  # the close began between the two: nothing restarts now
                log.info("%s: restart dropped, the run was ending", proc.member_id)

    def pending(self) -> bool:
        return self.restarter.pending()

    def since(self, started: float) -> list[tuple[float, str, str]]:
        """(monotonic time, member id, how it ended) of each crash since ``started`` (monotonic)."""
        with self._lock:
            return [seen for seen in self._seen if seen[0] >= started]


__all__ = ["CrashRestarts", "crash_detail", "is_crash"]
