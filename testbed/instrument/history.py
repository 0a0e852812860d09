"""A member's history file, written the one way every Python member writes it: testbed's runners and instrumented
programs alike (``testbed.members.runtime.MemberHistory`` writes through this class).

It runs in a user's interpreter too, which has neither pydantic nor testbed's venv, so it uses only the stdlib:
each line is byte for byte the JSON of the event's typed model in ``testbed.history.events`` (``model_dump``
then ``json.dumps`` with compact separators: the models' fields in their order, defaults written out, extra
fields after them). ``MEMBER_FIELDS`` is that order and those defaults, one row per event written here; a unit
test holds the table and every method's lines to the models.

One ``os.write`` per event (per call for the ``processed`` runs of one flush) on an ``O_APPEND`` descriptor, so a
SIGKILL loses at most the write under way (its lines, or a torn last one, which the readers drop). Each line
carries ``ts_ms`` (wall ms), ``mono_ms`` (CLOCK_MONOTONIC ms at writing, also where ``ts_ms`` is given: a time
the client reported), ``source`` (the member id) and ``name``. The file is opened at the first event, so a
program that never builds a consumer leaves no file (a runner opens it at once: ``open``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

TopicPartition = Tuple[str, int]
PARTITION_EVENTS = ("assigned", "revoked", "lost")
# topic, partition, first_offset, last_offset, count, produce_ts_min_ms, produce_ts_max_ms, ts_ms, mono_ms
ProcessedRun = Tuple[str, int, int, int, int, Optional[int], Optional[int], int, int]


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # a field without a default: the caller must give it

_PARTITIONS = (("partitions", REQUIRED), ("generation", None), ("member_epoch", None))
# After ts_ms, mono_ms and source: each member event's fields in its model's order (``name`` where the model
# declares it), with the model's default. Never mutated: the defaults are only serialised.
MEMBER_FIELDS: Dict[str, Tuple[Tuple[str, Any], ...]] = {
    "started": (("name", "started"), ("client", REQUIRED), ("client_version", REQUIRED), ("group_id", REQUIRED),
                ("topics", REQUIRED), ("assignors", []), ("group_protocol", "classic"), ("streams", None),
                ("remote_assignor", None), ("rebalance_protocol", None), ("group_instance_id", None),
                ("commit_mode", "auto"), ("pid", REQUIRED), ("spec", None), ("session_timeout_ms", None),
                ("max_poll_interval_ms", None), ("heartbeat_interval_ms", None), ("settings", {}),
                ("handler", None), ("command", None), ("reports_lost", None)),
    "assigned": _PARTITIONS + (("name", "assigned"),),
    "revoked": _PARTITIONS + (("name", "revoked"),),
    "lost": _PARTITIONS + (("name", "lost"),),
    "processed": (("name", "processed"), ("topic", REQUIRED), ("partition", REQUIRED), ("first_offset", REQUIRED),
                  ("last_offset", REQUIRED), ("count", REQUIRED), ("produce_ts_min_ms", None),
                  ("produce_ts_max_ms", None)),
    "committed": (("name", "committed"), ("offsets", REQUIRED), ("trigger", REQUIRED), ("error", None)),
    "error": (("name", "error"), ("code", REQUIRED), ("message", REQUIRED), ("fatal", False)),
    "handler_error": (("name", "handler_error"), ("error_type", REQUIRED), ("message", REQUIRED),
                      ("records", REQUIRED), ("ranges", []), ("action", REQUIRED)),
    "stopped": (("name", "stopped"), ("reason", REQUIRED)),
    "share_acquired": (("name", "share_acquired"), ("topic", REQUIRED), ("partition", REQUIRED),
                       ("acquired", REQUIRED), ("produce_ts_min_ms", None), ("produce_ts_max_ms", None)),
    "share_acknowledged": (("name", "share_acknowledged"), ("topic", REQUIRED), ("partition", REQUIRED),
                           ("acknowledged", REQUIRED), ("type", REQUIRED), ("mode", REQUIRED), ("sent_ms", None),
                           ("error", None)),
    "share_ack_sent": (("name", "share_ack_sent"), ("topic", REQUIRED), ("partition", REQUIRED),
                       ("acknowledged", REQUIRED), ("type", REQUIRED), ("mode", REQUIRED)),
}


def _int_or_null(value: Optional[int]) -> str:
    return "null" if value is None else str(int(value))


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def mono_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def event_line(name: str, source: str, fields: Dict[str, Any], ts_ms: int, at_mono_ms: int) -> str:
    """One event's line: its model's fields in order, defaults for those not given, extra fields after them."""
    obj: Dict[str, Any] = {"ts_ms": ts_ms, "mono_ms": at_mono_ms, "source": source}
    for key, default in MEMBER_FIELDS[name]:
        value = fields.get(key, default)
        if value is REQUIRED:
            raise TypeError(f"{name}: field {key!r} missing")
        obj[key] = value
    for key, value in fields.items():
        if key not in obj:
            obj[key] = value
    return json.dumps(obj, separators=(",", ":")) + "\n"


class MemberHistoryFile:
    """Typed writes of one member's history file (thread-safe: kafka-python 3 calls back on its IO thread)."""

    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.source = source
        self._fd = -1
        self._lock = threading.Lock()
        self._source_json = json.dumps(source)
        self._topic_json: Dict[str, str] = {}

    # ---- lines ------------------------------------------------------------------------------

    def open(self) -> None:
        """Make the file now rather than at the first event (its directory too)."""
        with self._lock:
            self._open()

    def _open(self) -> None:
        if self._fd < 0:
            directory = os.path.dirname(self.path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def event(self, name: str, fields: Dict[str, Any], ts_ms: Optional[int] = None,
              at_mono_ms: Optional[int] = None) -> None:
        """One event of ``MEMBER_FIELDS``: ``ts_ms`` defaults to now, ``mono_ms`` to the time of writing."""
        self.append_line(event_line(name, self.source, fields, wall_ms() if ts_ms is None else ts_ms,
                                    mono_ms() if at_mono_ms is None else at_mono_ms))

    def append_line(self, line: str) -> None:
        """Whole lines in one ``os.write``, so the lines of one call land together (a SIGKILL during the write may
        still tear it at a page boundary)."""
        data = line.encode()
        with self._lock:
            self._open()
            os.write(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # ---- events -----------------------------------------------------------------------------

    def partitions(self, kind: str, partitions: Iterable[TopicPartition], *, generation: Optional[int] = None,
                   member_epoch: Optional[int] = None, ts_ms: Optional[int] = None, **extra: Any) -> None:
        """assigned / revoked / lost. Empty revoked and lost sets are not written: an eager client revokes nothing
        before its first join, and no ownership ends there; an empty assigned is (the end of this member's part of
        a rebalance)."""
        if kind not in PARTITION_EVENTS:
            raise ValueError(f"kind: one of {', '.join(PARTITION_EVENTS)}, got {kind!r}")
        tps = sorted(partitions)
        if not tps and kind != "assigned":
            return
        fields: Dict[str, Any] = {"partitions": [list(tp) for tp in tps], "generation": generation,
                                  "member_epoch": member_epoch}
        fields.update(extra)
        self.event(kind, fields, ts_ms)

    def processed_runs(self, runs: Iterable[ProcessedRun]) -> None:
        """``processed`` events, one per run ``(topic, partition, first_offset, last_offset, count,
        produce_ts_min_ms, produce_ts_max_ms, ts_ms, mono_ms)``, written in one call: a program that commits each
        batch writes a run per partition at every commit, and json.dumps and a write per line were most of what a
        commit cost it (formatted here by hand: a unit test holds these lines to ``event_line`` and the model).

        An instrumented program's runs are written up to 20 ms (or, for a program that stops calling, much) after
        their last record became processed: ``ts_ms`` and ``mono_ms`` are both that moment, so their difference
        stays the wall clock's offset (the analysis reads a change of it as a wall-clock step)."""
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
            self.append_line("".join(lines))

    def committed(self, offsets: Dict[TopicPartition, int], trigger: str, error: Optional[str] = None, *,
                  ts_ms: Optional[int] = None) -> None:
        rows: List[Dict[str, Any]] = [{"topic": t, "partition": p, "offset": o}
                                      for (t, p), o in sorted(offsets.items())]
        self.event("committed", {"offsets": rows, "trigger": trigger, "error": error}, ts_ms)

    def error(self, code: str, message: str, fatal: bool = False, *, ts_ms: Optional[int] = None) -> None:
        self.event("error", {"code": code, "message": message, "fatal": fatal}, ts_ms)

    def stopped(self, reason: str, *, ts_ms: Optional[int] = None) -> None:
        self.event("stopped", {"reason": reason}, ts_ms)
