"""The instrumented program's history: the events testbed's runners write, as JSON lines, with the stdlib.

The lines are those of ``testbed.history.writer.HistoryWriter``: one ``os.write`` per event (per flush for the
``processed`` runs of one flush) on an ``O_APPEND`` descriptor, so a SIGKILL loses at most the write under way
(its lines, or a torn last one, which the readers drop). Each line carries
``ts_ms`` (wall ms), ``mono_ms`` (CLOCK_MONOTONIC ms at writing), ``source`` (the member id),
``name`` and the fields of the typed model in ``testbed.history.events``; a unit test parses every
kind of line written here with ``parse_event`` so the two stay in step. The file is opened at the
first event, so a program that never builds a consumer leaves no file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Dict, Iterable, List, Optional, Tuple

TopicPartition = Tuple[str, int]
PARTITION_EVENTS = ("assigned", "revoked", "lost")
# topic, partition, first_offset, last_offset, count, produce_ts_min_ms, produce_ts_max_ms, ts_ms, mono_ms
ProcessedRun = Tuple[str, int, int, int, int, Optional[int], Optional[int], int, int]


def _int_or_null(value: Optional[int]) -> str:
    return "null" if value is None else str(int(value))


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def mono_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ProgramHistory:
    """Typed writes of one member's history file (thread-safe: kafka-python 3 calls back on its IO thread)."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self._fd = -1
        self._lock = threading.Lock()
        self._source_json = json.dumps(source)
        self._topic_json: Dict[str, str] = {}

    # ---- lines ------------------------------------------------------------------------------

    def write(self, name: str, fields: Dict[str, object], ts_ms: Optional[int] = None,
              at_mono_ms: Optional[int] = None) -> None:
        """One event: ``ts_ms`` defaults to now, ``mono_ms`` to the time of writing."""
        line = {"ts_ms": wall_ms() if ts_ms is None else ts_ms,
                "mono_ms": mono_ms() if at_mono_ms is None else at_mono_ms, "source": self.source, "name": name}
        line.update(fields)
        self._append((json.dumps(line, separators=(",", ":")) + "\n").encode())

    def _append(self, data: bytes) -> None:
        """Whole lines in one ``os.write``, so the lines of one call land together (a SIGKILL during the write may
        still tear it at a page boundary)."""
        with self._lock:
            if self._fd < 0:
                directory = os.path.dirname(self.path)
                if directory:
                    os.makedirs(directory, exist_ok=True)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            os.write(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # ---- events -----------------------------------------------------------------------------

    def started(self, fields: Dict[str, object]) -> None:
        self.write("started", fields)

    def partitions(self, kind: str, partitions: Iterable[TopicPartition], *, generation: Optional[int] = None,
                   member_epoch: Optional[int] = None, **extra: object) -> None:
        """assigned / revoked / lost; empty revoked and lost sets are not written, as the runners do (an eager
        client revokes nothing before its first join), an empty assigned is (the end of a rebalance)."""
        if kind not in PARTITION_EVENTS:
            raise ValueError(f"kind: one of {', '.join(PARTITION_EVENTS)}, got {kind!r}")
        tps = sorted(partitions)
        if not tps and kind != "assigned":
            return
        fields: Dict[str, object] = {"partitions": [list(tp) for tp in tps], "generation": generation,
                                     "member_epoch": member_epoch}
        fields.update(extra)
        self.write(kind, fields)

    def processed(self, runs: Iterable[ProcessedRun]) -> None:
        """``processed`` events, one per run ``(topic, partition, first_offset, last_offset, count,
        produce_ts_min_ms, produce_ts_max_ms, ts_ms, mono_ms)``, written in one call: a program that commits each
        batch writes a run per partition at every commit, and json.dumps and a write per line were most of what a
        commit cost it (a unit test holds these lines to json.dumps of the same fields).

        Written up to 20 ms (or, for a program that stops calling, much) after its last record became processed:
        ``ts_ms`` and ``mono_ms`` are both that moment, so their difference stays the wall clock's offset (the
        analysis reads a change of it as a wall-clock step)."""
        source, topics = self._source_json, self._topic_json
        lines = []
        for topic, partition, first, last, count, ts_min, ts_max, ts_ms, at_mono_ms in runs:
            topic_json = topics.get(topic)
            if topic_json is None:
                topic_json = topics[topic] = json.dumps(topic)
            lines.append(
                f'{{"ts_ms":{int(ts_ms)},"mono_ms":{int(at_mono_ms)},"source":{source},"name":"processed",'
                f'"topic":{topic_json},"partition":{int(partition)},"first_offset":{int(first)},'
                f'"last_offset":{int(last)},"count":{int(count)},"produce_ts_min_ms":{_int_or_null(ts_min)},'
                f'"produce_ts_max_ms":{_int_or_null(ts_max)}}}\n')
        if lines:
            self._append("".join(lines).encode())

    def committed(self, offsets: Dict[TopicPartition, int], trigger: str, error: Optional[str] = None) -> None:
        rows: List[Dict[str, object]] = [{"topic": t, "partition": p, "offset": o}
                                         for (t, p), o in sorted(offsets.items())]
        self.write("committed", {"offsets": rows, "trigger": trigger, "error": error})

    def error(self, code: str, message: str, fatal: bool = False) -> None:
        self.write("error", {"code": code, "message": message, "fatal": fatal})

    def stopped(self, reason: str) -> None:
        self.write("stopped", {"reason": reason})
