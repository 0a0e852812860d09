"""The producer's acknowledgement log: one ``ack`` event a line, buffered but flushed often (the same writer keeps
its log of the records it gave up on, ``produce_failed``).

At thousands of acks per second a write per line would cost a system call each, so lines are
buffered and written together with one ``os.write`` on an ``O_APPEND`` descriptor. The buffer is
flushed when it is ``flush_interval_s`` old (checked on every append and by the caller's timer
when acks pause) and on close, so a run interrupted by SIGTERM keeps every ack, and a SIGKILL
loses at most the last ``flush_interval_s`` of them (and can tear only the last line, which
:func:`testbed.history.writer.read_events` skips).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ..history.events import Ack, ProduceFailed, _Event

DEFAULT_FLUSH_INTERVAL_S = 0.1


class AckLog:
    """Append-only writer of one producer process's ``history/acks/<producer-id>.jsonl`` (or of its
    ``history/produce_failures/<producer-id>.jsonl``)."""

    def __init__(self, path: Path, producer_id: str, flush_interval_s: float = DEFAULT_FLUSH_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.producer_id = producer_id
        self.flush_interval_s = flush_interval_s
        self.written = 0
        self._clock = clock
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lines: list[str] = []
        self._last_flush = clock()

    def append(self, topic: str, partition: int, offset: int | None, key: str, seq: int, produce_ts_ms: int) -> None:
        self.write(Ack(source=self.producer_id, topic=topic, partition=partition, offset=offset, key=key, seq=seq,
                       produce_ts_ms=produce_ts_ms))

    def append_failure(self, topic: str, key: str, seq: int, produce_ts_ms: int, error: str) -> None:
        self.write(ProduceFailed(source=self.producer_id, topic=topic, key=key, seq=seq, produce_ts_ms=produce_ts_ms,
                                 error=error))

    def write(self, event: _Event) -> None:
        self._lines.append(event.model_dump_json())
        self.flush_if_due()

    def flush_if_due(self) -> None:
        if self._lines and self._clock() - self._last_flush >= self.flush_interval_s:
            self.flush()

    def flush(self) -> None:
        self._last_flush = self._clock()
        if not self._lines or self._fd < 0:
            return
        data = ("\n".join(self._lines) + "\n").encode()
        count = len(self._lines)
        self._lines = []
        view = memoryview(data)
        while view:  # a regular file takes it all at once; the loop only guards short writes
            view = view[os.write(self._fd, view):]
        self.written += count

    @property
    def pending(self) -> int:
        return len(self._lines)

    def close(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> "AckLog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
