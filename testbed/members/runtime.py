"""What every runner shares: the history it writes, its stop signal, and simulated processing.

One MemberHistory per member, written through ``testbed.instrument.history.MemberHistoryFile``: the one writer of
member histories, which instrumented programs use as well, so a runner's lines and a program's are made by the
same code (each the JSON of its typed model in ``testbed.history.events``, held so by a unit test). Each event is
one flushed line, so a SIGKILL leaves everything written so far intact.

Every event carries ``mono_ms``, CLOCK_MONOTONIC when it is written. Where a method is given an explicit ``ts_ms``
(a time the client reported, e.g. the JVM's timestamp of a VerifiableConsumer line), ``ts_ms`` is the event's time
and ``mono_ms`` still the time of writing: close to it, but not the same instant.
"""

from __future__ import annotations

import asyncio
import faulthandler
import importlib
import inspect
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from pydantic import BaseModel

from testbed.history.events import _Event
from testbed.instrument.history import MemberHistoryFile, mono_ms, wall_ms

from .batches import PartitionBatch, RecordView, summarize_batch
from .config import MemberConfig
from .defaults import effective_heartbeat_interval_ms, effective_timeouts
from .signal_relay import relay

PartitionSet = Iterable[tuple[str, int]]


class MemberHistory(MemberHistoryFile):
    """A runner's history: the shared file's events, with ``started`` built from the member's config, and the
    events only runners write (share groups, the user's handler, the JVM's typed lines)."""

    def __init__(self, config: MemberConfig) -> None:
        super().__init__(str(config.history_path), config.member_id)
        self.config = config
        self.open()  # a runner's file exists from its start, before its first event

    def started(
        self,
        client_version: str,
        *,
        session_timeout_ms: int | None = None,
        max_poll_interval_ms: int | None = None,
        heartbeat_interval_ms: int | None = None,
        settings: dict[str, object] | None = None,
        ts_ms: int | None = None,
        **extra: object,
    ) -> None:
        """The member's configuration. ``settings``: the client settings the runner built
        (``testbed.members.client_settings``), without callbacks or other objects. Timeouts and the heartbeat
        interval not given are the effective ones from the spec, the settings and the client's defaults
        (``testbed.members.defaults``); ``ts_ms`` defaults to now."""
        spec = self.config.spec
        settings = dict(settings or {})
        session, max_poll = effective_timeouts(
            spec, client_version=client_version, broker_session_timeout_ms=self.config.broker_session_timeout_ms
        )
        if heartbeat_interval_ms is None:
            heartbeat_interval_ms = effective_heartbeat_interval_ms(
                spec, settings, broker_heartbeat_interval_ms=self.config.broker_heartbeat_interval_ms)
        self.event("started", dict(
            client=spec.client,
            client_version=client_version,
            group_id=self.config.group_id,
            topics=list(self.config.topics),
            assignors=list(spec.assignors),
            group_protocol=spec.group_protocol,
            remote_assignor=spec.remote_assignor,
            rebalance_protocol=spec.rebalance_protocol,
            group_instance_id=self.config.group_instance_id,
            commit_mode=spec.commit_mode,
            pid=os.getpid(),
            spec=spec.name,
            session_timeout_ms=session if session_timeout_ms is None else session_timeout_ms,
            max_poll_interval_ms=max_poll if max_poll_interval_ms is None else max_poll_interval_ms,
            heartbeat_interval_ms=heartbeat_interval_ms,
            settings=settings,
            **extra,
        ), ts_ms)

    def processed(self, batch: PartitionBatch, *, ts_ms: int | None = None) -> None:
        """One poll batch's records of one partition, processed now (or at ``ts_ms``)."""
        self.processed_runs([(batch.topic, batch.partition, batch.first_offset, batch.last_offset, batch.count,
                         batch.produce_ts_min_ms, batch.produce_ts_max_ms,
                         wall_ms() if ts_ms is None else ts_ms, mono_ms())])

    def share_acquired(self, topic: str, partition: int, acquired: list[tuple[int, int | None]],
                       produce_ts: list[int], *, ts_ms: int | None = None) -> None:
        """Records of one partition that one poll of a share member returned, with their delivery counts."""
        self.event("share_acquired", dict(
            topic=topic, partition=partition, acquired=[list(a) for a in acquired],
            produce_ts_min_ms=min(produce_ts) if produce_ts else None,
            produce_ts_max_ms=max(produce_ts) if produce_ts else None), ts_ms)

    def share_acknowledged(self, topic: str, partition: int, offsets: list[int], type_: str, mode: str,
                           sent_ms: int | None, error: str | None, *, ts_ms: int | None = None) -> None:
        """The broker's answer to acknowledgements of one type for one partition (written when it arrives)."""
        self.event("share_acknowledged", dict(
            topic=topic, partition=partition, acknowledged=sorted(offsets), type=type_, mode=mode, sent_ms=sent_ms,
            error=error), ts_ms)

    def share_ack_sent(self, topic: str, partition: int, offsets: list[int], type_: str, mode: str, *,
                       ts_ms: int | None = None) -> None:
        """Acknowledgements of one type for one partition handed to the client, before the call that sends them."""
        self.event("share_ack_sent", dict(topic=topic, partition=partition, acknowledged=sorted(offsets),
                                          type=type_, mode=mode), ts_ms)

    def handler_error(self, error_type: str, message: str, records: int, batches: list[PartitionBatch],
                      action: str) -> None:
        """The user's handler raised on a batch of ``records`` records."""
        ranges = [dict(topic=b.topic, partition=b.partition, first_offset=b.first_offset, last_offset=b.last_offset,
                       count=b.count) for b in batches]
        self.event("handler_error", dict(error_type=error_type, message=message[:2000], records=records,
                                         ranges=ranges, action=action))

    def write_event(self, event: BaseModel) -> None:
        """An event the runner built as its model (the JVM runners' lines, read into ``testbed.history.events``)."""
        self.append_line(json.dumps(event.model_dump(mode="json"), separators=(",", ":")) + "\n")

    def write(self, model: type[_Event], *, ts_ms: int | None = None, **fields: object) -> None:
        """Any member event of ``model`` with these fields (``ts_ms``: when it happened, default now): the
        Kafka Streams events, whose fields the JVM gives and the model checks."""
        if ts_ms is not None:
            fields["ts_ms"] = ts_ms
        self.write_event(model(source=self.source, **fields))


def poll_failed(history: MemberHistory, exc: BaseException, code: str) -> bool:
    """A poll that raised a client error (``code``): recorded; True when it is fatal (not retriable)."""
    fatal = not getattr(exc, "retriable", False)
    history.error(code, str(exc), fatal=fatal)
    return fatal


def log_rebalances(coordinator_logger: str) -> None:
    """The member's log (logs/<member>.log) tells its side of every rebalance: joins, SyncGroup refusals,
    generations, revocations, which the Python clients' coordinators log at INFO; the rest stays at WARNING."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger(coordinator_logger).setLevel(logging.INFO)


def install_stop_signals() -> threading.Event:
    """SIGTERM and SIGINT ask for a clean stop: the poll loop ends, the client closes and leaves. The signals are
    relayed (``signal_relay``): the stop is set from a thread of its own, never from inside a signal handler. A
    member whose loop or close hangs all the same leaves its stacks when the fleet gives up (``STACKS_SIGNAL``)."""
    stop = threading.Event()
    relay(signal.SIGTERM, stop.set)
    relay(signal.SIGINT, stop.set)
    return stop


STALL_SIGNAL, UNSTALL_SIGNAL = signal.SIGUSR1, signal.SIGUSR2

# Asked by the fleet just before it SIGKILLs a member that did not stop in time. A Python member dumps every
# thread's stack from faulthandler's C handler, which runs whichever thread the kernel picks and whatever the main
# thread is blocked in (a Python-level SIGTERM handler does not run while the main thread waits in C); a JVM prints
# its thread dump on the same signal by default.
STACKS_SIGNAL = signal.SIGQUIT


def dump_stacks_on_request() -> None:
    """Every thread's stack to stderr (the member's log) on ``STACKS_SIGNAL``, for the life of the process."""
    faulthandler.register(STACKS_SIGNAL, all_threads=True)


class PollStall:
    """A stall of the poll loop the harness asks for, ended by ``end()`` or a stop.

    Only the loop stops calling poll; the client's own threads (librdkafka's, kafka-python's heartbeat)
    run on, so the member stays in the group until max.poll.interval.ms says otherwise. Unlike SIGSTOP,
    this is the stall of a slow handler, which the client is meant to notice.
    """

    def __init__(self, stop: threading.Event) -> None:
        self._stalled = threading.Event()
        self._released = threading.Event()
        self._stop = stop

    def start(self) -> None:
        self._released.clear()
        self._stalled.set()

    def end(self) -> None:
        self._stalled.clear()
        self._released.set()

    def hold(self) -> None:
        """Called at the top of each loop turn: blocks while a stall is on (until released or stopped)."""
        while self._stalled.is_set() and not self._stop.is_set():
            self._released.wait(0.1)

    async def hold_async(self) -> None:
        """``hold`` for a loop on an event loop, which must not block: the other members on it run on."""
        while self._stalled.is_set() and not self._stop.is_set():
            await asyncio.sleep(0.1)


@dataclass
class MemberControls:
    """What the harness can ask of one member's poll loop: stop (close and leave) and stall.

    A member alone in its process takes them from signals (``signal_controls``); a member host
    (``testbed.members.host``) holds one per member and sets them from its control channel.
    """

    stop: threading.Event = field(default_factory=threading.Event)
    stall: PollStall = field(init=False)

    def __post_init__(self) -> None:
        self.stall = PollStall(self.stop)


def signal_controls() -> MemberControls:
    """SIGTERM/SIGINT stop, SIGUSR1 starts a stall, SIGUSR2 ends it (set up from the main thread; relayed)."""
    controls = MemberControls(stop=install_stop_signals())
    relay(STALL_SIGNAL, controls.stall.start)
    relay(UNSTALL_SIGNAL, controls.stall.end)
    return controls


def simulate_processing(count: int, ms_per_record: float) -> None:
    """The configured per-record work. A deliberate delay, not a wait: it is what makes polls slow."""
    if ms_per_record > 0 and count > 0:
        time.sleep(count * ms_per_record / 1000.0)


class ProcessedOffsets:
    """Next offset to commit per partition, from what this member finished processing.

    Guarded by a lock: kafka-python 3 commits from its IO thread while the poll loop records.
    """

    def __init__(self) -> None:
        self._next: dict[tuple[str, int], int] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()

    def record(self, batch: PartitionBatch) -> None:
        with self._lock:
            key = (batch.topic, batch.partition)
            self._next[key] = max(self._next.get(key, 0), batch.last_offset + 1)

    def pending(self, partitions: PartitionSet | None = None) -> dict[tuple[str, int], int]:
        """Processed but not yet committed offsets, optionally only of ``partitions``."""
        with self._lock:
            keys = set(self._next) if partitions is None else set(partitions) & set(self._next)
            return {k: self._next[k] for k in keys if self._committed.get(k) != self._next[k]}

    def mark_committed(self, offsets: dict[tuple[str, int], int]) -> None:
        with self._lock:
            self._committed.update(offsets)

    def commit_done(self, history: MemberHistory, offsets: dict[tuple[str, int], int], trigger: str,
                    error: str | None = None) -> None:
        """A commit of ``offsets`` ended (``error``: its error code): marked committed when it succeeded, and
        recorded either way."""
        if error is None:
            self.mark_committed(offsets)
        history.committed(offsets, trigger, error)

    def forget(self, partitions: PartitionSet) -> None:
        """A partition given away: its next owner's progress is not ours to commit."""
        with self._lock:
            for key in partitions:
                self._next.pop(key, None)
                self._committed.pop(key, None)


def load_handler(path: str, handler_path: str | None = None) -> Callable[[list[RecordView]], object]:
    """The user's batch handler 'pkg.module:function' (``handler_path`` first on the import path).

    The harness checked before the start that it imports here (testbed.members.preflight); a failure now is
    the member's start failing, with the import error's text."""
    if handler_path is not None and os.path.abspath(handler_path) not in sys.path:
        sys.path.insert(0, os.path.abspath(handler_path))
    module_name, _, attr = path.partition(":")
    handler = getattr(importlib.import_module(module_name), attr)
    if not callable(handler):
        raise TypeError(f"handler: {path!r} is a {type(handler).__name__}, not callable")
    return handler


class BatchProcessor:
    """The poll loop's work on one batch: process per partition, record it, count toward max_records.

    The work is the spec's simulated time per record, or the user's handler called with the whole batch: the
    batch is processed when the handler returns. A handler that raises is recorded (``handler_error``) and its
    batch is not processed (nor its offsets committed by this member; a later batch's commit still moves past
    them, as it would in the user's service); ``on_handler_error: stop`` then ends the member.
    """

    def __init__(self, history: MemberHistory, offsets: ProcessedOffsets) -> None:
        self.history = history
        self.offsets = offsets
        self.spec = history.config.spec
        self.max_records = history.config.max_records
        self.total = 0
        self.handler = load_handler(self.spec.handler, self.spec.handler_path) if self.spec.handler else None
        self.stop_requested = False  # the handler failed and on_handler_error is 'stop'

    def process(self, records: list[RecordView]) -> int:
        batches = summarize_batch(records)
        if self.handler is not None and records:
            try:
                self.handler(records)
            except Exception as exc:  # noqa: BLE001 - the user's code: recorded, never the end of the run
                self._handler_failed(exc, batches, len(records))
                return 0
        for batch in batches:
            if self.handler is None:
                simulate_processing(batch.count, self.spec.processing_ms_per_record)
            self._done(batch)
        self.total += len(records)
        return len(records)

    async def process_async(self, records: list[RecordView]) -> int:
        """``process`` on an event loop: an async handler is awaited, and the simulated work sleeps without
        blocking the loop's other members."""
        batches = summarize_batch(records)
        if self.handler is not None and records:
            try:
                result = self.handler(records)
                if inspect.isawaitable(result):
                    await result
            except Exception as exc:  # noqa: BLE001 - the user's code: recorded, never the end of the run
                self._handler_failed(exc, batches, len(records))
                return 0
        for batch in batches:
            if self.handler is None and self.spec.processing_ms_per_record > 0:
                await asyncio.sleep(batch.count * self.spec.processing_ms_per_record / 1000.0)
            self._done(batch)
        self.total += len(records)
        return len(records)

    def _done(self, batch: PartitionBatch) -> None:
        self.history.processed(batch)
        self.offsets.record(batch)

    def _handler_failed(self, exc: Exception, batches: list[PartitionBatch], count: int) -> None:
        kind = type(exc)
        name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
        self.history.handler_error(name, str(exc) or repr(exc), count, batches, self.spec.on_handler_error)
        self.stop_requested = self.spec.on_handler_error == "stop"

    @property
    def reached_max_records(self) -> bool:
        return self.max_records is not None and self.total >= self.max_records

    @property
    def end_reason(self) -> str | None:
        """Why the loop must end after this batch (its ``stopped`` reason), or None to go on: ``error`` when the
        user's handler failed and on_handler_error is 'stop', ``max_records`` when the member processed its quota."""
        if self.stop_requested:
            return "error"
        return "max_records" if self.reached_max_records else None
