"""Restarting crashed programs, as a pod's restart policy does: after a back-off, on a thread of the fleet's own.

A crash is seen on the crashed process's watcher thread, which ends right after; the replacement must not be
started there. A child dies with the *thread* that started it (``PR_SET_PDEATHSIG``, ``testbed.children``), so
the restarts run on one thread that lives as long as the fleet: it waits for the next restart that is due, starts
it, and ends only at the fleet's close, after every member it started was stopped. Nothing is restarted once the
close began; a restart still waiting for its back-off is dropped then.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

JOIN_TIMEOUT_S = 10.0  # close(): a restart under way (a process start) is done in well under this


@dataclass(order=True)
class RestartOrder:
    """A crashed member's replacement, due at ``due`` (``time.monotonic()``)."""

    due: float
    slot: int = field(compare=False)
    crashed: Any = field(compare=False)  # the crashed Member
    attempt: int = field(compare=False)  # 1 for the first restart of this member (as the scenario names it)
    backoff_s: float = field(compare=False)


class Restarter:
    """``schedule`` restarts from any thread; ``start`` runs each on this object's thread when due."""

    def __init__(self, start: Callable[[RestartOrder], None]) -> None:
        self._start = start
        self._orders: list[RestartOrder] = []
        self._cond = threading.Condition()
        self._closing = False  # no restart any more
        self._ending = False  # the thread may end: the members it started are stopped
        self._busy = False  # a restart is being started right now
        self._thread = threading.Thread(target=self._run, daemon=True, name="member-restarts")
        self._thread.start()

    def schedule(self, order: RestartOrder) -> bool:
        """Queue a restart; False once the close began (nothing is restarted then)."""
        with self._cond:
            if self._closing:
                return False
            self._orders.append(order)
            self._orders.sort()
            self._cond.notify_all()
            return True

    def cancel(self, slot: int) -> None:
        """Drop a waiting restart of ``slot``: a step stopped, killed or replaced its member meanwhile."""
        with self._cond:
            self._orders = [o for o in self._orders if o.slot != slot]

    def pending(self) -> bool:
        """Whether a restart waits for its back-off or is being started."""
        with self._cond:
            return bool(self._orders) or self._busy

    def stop_scheduling(self) -> None:
        """The close began: drop every waiting restart and start none; a restart under way finishes first (its
        member is then stopped with the others)."""
        with self._cond:
            self._closing = True
            self._orders.clear()
            self._cond.notify_all()
            self._cond.wait_for(lambda: not self._busy, timeout=JOIN_TIMEOUT_S)

    def close(self) -> None:
        """End the thread. Call once the members it started are stopped: they die with it."""
        self.stop_scheduling()
        with self._cond:
            self._ending = True
            self._cond.notify_all()
        self._thread.join(JOIN_TIMEOUT_S)

    def _run(self) -> None:
        while True:
            with self._cond:
                # Once closing, the thread still waits (its children live as long as it does) until the end.
                while not self._ending and (self._closing or not self._orders
                                            or self._orders[0].due > time.monotonic()):
                    timeout = self._orders[0].due - time.monotonic() if self._orders and not self._closing else None
                    self._cond.wait(timeout)
                if self._ending:
                    return
                order = self._orders.pop(0)
                self._busy = True
            try:
                self._start(order)
            except Exception as exc:  # noqa: BLE001 - one failed restart must not end the others
                log.error("restarting slot %s (after %s) failed: %s", order.slot, order.crashed.member_id, exc)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()


__all__ = ["RestartOrder", "Restarter"]
