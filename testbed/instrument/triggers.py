"""Which ``trigger`` a commit is recorded with, as testbed's runners name them.

An explicit commit of the program's is ``revoke`` when made inside a revoke (or lost) callback,
``close`` when made inside ``close()``, else ``batch``; the client's own auto-commits are ``auto``
(also the final one a client makes in ``close()``, as the runners record it). The context is per
thread: kafka-python 3 runs the rebalance callbacks on its IO thread while the program's thread may
be inside ``close()``, and aiokafka in its coordinator's task while the program's task goes on.

An asynchronous commit is recorded when its callback answers, and the callback does not say which
commit it answers: ``AsyncCommits`` keeps the explicit ones in flight and matches each answer to one.
"""

from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Deque, Dict, Iterator, Optional, Tuple

TopicPartition = Tuple[str, int]
Offsets = Dict[TopicPartition, int]
MAX_IN_FLIGHT = 1000  # answers that never come (a consumer closed first) must not pile up


class CommitContext:
    """Where the caller is: inside a revoke callback, inside close(), or neither. Kept in context variables, so
    it is per thread (kafka-python's IO thread) and per asyncio task (aiokafka runs the rebalance callbacks in its
    coordinator's task while the program's task goes on)."""

    def __init__(self) -> None:
        self._depth = {kind: ContextVar(f"testbed_inside_{kind}_{id(self)}", default=0) for kind in ("revoke", "close")}

    @contextmanager
    def inside(self, kind: str) -> Iterator[None]:
        """``kind``: 'revoke' (a revoke or lost callback) or 'close'."""
        depth = self._depth[kind]
        token = depth.set(depth.get() + 1)
        try:
            yield
        finally:
            depth.reset(token)

    def trigger(self) -> str:
        """The trigger of an explicit commit made now: the innermost reason wins (a revoke inside close)."""
        if self._depth["revoke"].get():
            return "revoke"
        if self._depth["close"].get():
            return "close"
        return "batch"


class AsyncCommits:
    """Explicit asynchronous commits waiting for their answer, in the order they were made.

    An answer goes to the oldest commit in flight whose offsets equal its own or were not given (the
    program committed its current positions). Without auto-commit every answer is an explicit commit's,
    so an answer nothing matches still takes the oldest; with auto-commit it is an auto-commit. With
    auto-commit on and a commit of the current positions in flight, an auto-commit answered first
    takes that commit's trigger (and that commit, answered later, ``auto``): the offsets are right,
    only the two labels can swap.
    """

    def __init__(self, auto_commit: bool) -> None:
        self.auto_commit = auto_commit
        self._in_flight: Deque[Tuple[str, Optional[Offsets]]] = deque(maxlen=MAX_IN_FLIGHT)
        self._lock = threading.Lock()

    def sent(self, trigger: str, offsets: Optional[Offsets]) -> None:
        with self._lock:
            self._in_flight.append((trigger, offsets))

    def withdraw(self, trigger: str, offsets: Optional[Offsets]) -> None:
        """A commit that failed as it was made: no answer will come for it."""
        with self._lock:
            for i in range(len(self._in_flight) - 1, -1, -1):
                if self._in_flight[i] == (trigger, offsets):
                    del self._in_flight[i]
                    return

    def answered(self, offsets: Offsets) -> str:
        """The trigger of the commit this answer is for."""
        with self._lock:
            for i, (trigger, sent) in enumerate(self._in_flight):
                if sent is None or sent == offsets:
                    del self._in_flight[i]
                    return trigger
            if not self.auto_commit and self._in_flight:
                return self._in_flight.popleft()[0]
        return "auto" if self.auto_commit else "batch"
