"""Processed records coalesced into runs: one ``processed`` event per partition per contiguous run.

A program that polls one record at a time would otherwise write a line per record. A run is the
records of one partition whose offsets follow each other without a gap; records of other
partitions in between do not break it (each partition has its run). A run is written when the next
record of its partition does not follow it, when the owner flushes (a commit, a revoke or loss of the
partition, close, interpreter exit), and at most ``window_ns`` after the first record of the oldest
run (checked on the program's calls, or by the flusher thread). The event's ``ts_ms`` is when the run's last
record became processed (for a confluent consumer, whose records are settled in batches by the flusher, when
they were settled: at most a window later).

What a SIGKILL loses: the runs still open, i.e. the records processed in the last 20 ms at most
(``testbed.instrument.flusher`` writes a run once its window is over even while the program makes no call; a
death by a signal left at its default action skips the exit flush too). They then read as re-delivered to the
next owner, or as lost if a commit the client made on its own in those milliseconds (librdkafka auto-commits
from its own thread) passed them: every commit the instrumentation records is written after the runs before it.

Pure bookkeeping, no clock and no I/O: the caller passes the time, an ``emit`` that writes a list of runs (a
flush's runs in one call, so the history can write them as one line group: a commit per batch flushes a run per
partition each time) and an ``on_due`` that learns when the oldest open run must be written.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, List, Optional, Tuple

TopicPartition = Tuple[str, int]
WINDOW_NS = 20_000_000  # a run is written at most 20 ms after its first record
NEVER = float("inf")


NO_TS_MIN = 1 << 64  # sentinels instead of None keep the per-record comparisons to one or two
NO_TS_MAX = -(1 << 64)


class Run:
    """Consecutive processed records of one partition."""

    __slots__ = ("topic", "partition", "first", "last", "count", "ts_min", "ts_max", "last_ns")

    def __init__(self, topic: str, partition: int, offset: int, produce_ts: Optional[int], now_ns: int) -> None:
        self.topic = topic
        self.partition = partition
        self.first = offset
        self.last = offset
        self.count = 1
        self.ts_min = NO_TS_MIN if produce_ts is None else produce_ts
        self.ts_max = NO_TS_MAX if produce_ts is None else produce_ts
        self.last_ns = now_ns  # when its last record became processed (monotonic ns)

    def extend(self, offset: int, produce_ts: Optional[int], now_ns: int) -> None:
        self.last = offset
        self.count += 1
        self.last_ns = now_ns
        if produce_ts is not None:
            if produce_ts < self.ts_min:
                self.ts_min = produce_ts
            if produce_ts > self.ts_max:
                self.ts_max = produce_ts

    @property
    def produce_ts_min(self) -> Optional[int]:
        return None if self.ts_min == NO_TS_MIN else self.ts_min

    @property
    def produce_ts_max(self) -> Optional[int]:
        return None if self.ts_max == NO_TS_MAX else self.ts_max

    def __repr__(self) -> str:
        return f"Run({self.topic}[{self.partition}] {self.first}..{self.last} x{self.count})"


class ProcessedRuns:
    """The open runs of one consumer; ``emit(runs)`` is called with the runs written together, in order."""

    def __init__(self, emit: Callable[[List[Run]], None], window_ns: int = WINDOW_NS,
                 on_due: Optional[Callable[[float], None]] = None) -> None:
        self._emit = emit
        self._on_due = on_due  # told when the first run of a window opens, with the time it is due
        self._runs: Dict[TopicPartition, Run] = {}
        # The run the last record went to: the common case is that the next record continues it.
        self.current: Optional[Run] = None
        self._written_last: Dict[TopicPartition, int] = {}
        self.window_ns = window_ns
        self.due_ns: float = NEVER  # when the oldest open run must be written

    def add(self, topic: str, partition: int, offset: int, produce_ts: Optional[int], now_ns: int) -> None:
        """One processed record."""
        run = self.current
        if run is not None and run.last + 1 == offset and run.partition == partition and run.topic == topic:
            run.last = offset  # Run.extend inlined: the per-record path of poll-per-record programs
            run.count += 1
            run.last_ns = now_ns
            if produce_ts is not None:
                if produce_ts < run.ts_min:
                    run.ts_min = produce_ts
                if produce_ts > run.ts_max:
                    run.ts_max = produce_ts
            return
        self.add_new(topic, partition, offset, produce_ts, now_ns)

    def add_new(self, topic: str, partition: int, offset: int, produce_ts: Optional[int], now_ns: int) -> None:
        """``add`` of a record that does not continue the current run (the caller checked)."""
        key = (topic, partition)
        run = self._runs.get(key)
        if run is not None:
            if run.last + 1 == offset:
                run.extend(offset, produce_ts, now_ns)
                self.current = run
                return
            self._write([run])  # not contiguous: a seek, a redelivery, a gap the program left
        run = self._runs[key] = Run(topic, partition, offset, produce_ts, now_ns)
        self.current = run
        self._opened(now_ns)

    def add_range(self, topic: str, partition: int, first: int, last: int, first_ts: Optional[int],
                  last_ts: Optional[int], now_ns: int) -> None:
        """The processed records ``first``..``last`` of one partition, every offset between them once, whose
        first and last records were produced at ``first_ts`` and ``last_ts``: the run's produce times are
        taken from those two (a partition's records are produced in about their offsets' order, so the
        others lie between them but for the few ms two producers' batches may overlap)."""
        key = (topic, partition)
        run = self._runs.get(key)
        if run is not None and run.last + 1 != first:
            self._write([run])
            run = None
        if run is None:
            run = self._runs[key] = Run(topic, partition, first, first_ts, now_ns)
            self._opened(now_ns)
        else:
            run.extend(first, first_ts, now_ns)
        if last > first:
            run.extend(last, last_ts, now_ns)
            run.count += last - first - 1  # the records between them
        self.current = run

    def _opened(self, now_ns: int) -> None:
        """A run opened: the window starts with the first of them."""
        if self.due_ns == NEVER:
            self.due_ns = now_ns + self.window_ns
            if self._on_due is not None:
                self._on_due(self.due_ns)

    def flush_due(self, now_ns: int) -> None:
        """Write every open run if the oldest has waited its window."""
        if now_ns >= self.due_ns:
            self.flush()

    def flush(self, partitions: Optional[Iterable[TopicPartition]] = None) -> None:
        """Write the open runs (of ``partitions``, default all), oldest last record first."""
        if partitions is None:
            runs = list(self._runs.values())
            self._runs.clear()
            self.current = None
            self.due_ns = NEVER
        else:
            runs = [r for r in (self._runs.pop(tp, None) for tp in partitions) if r is not None]
            if self.current in runs:
                self.current = None
            if not self._runs:
                self.due_ns = NEVER
        if runs:
            runs.sort(key=lambda r: r.last_ns)
            self._write(runs)

    def _write(self, runs: List[Run]) -> None:
        for run in runs:
            self._written_last[(run.topic, run.partition)] = run.last
        self._emit(runs)

    def open_runs(self) -> List[Run]:
        return list(self._runs.values())

    def last_offsets(self) -> Dict[TopicPartition, int]:
        """The last offset processed per partition, written or not (since ``forget``)."""
        last = dict(self._written_last)
        for key, run in self._runs.items():
            last[key] = max(last.get(key, run.last), run.last)
        return last

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions given away: what this consumer processed of them is history, not a reference any more."""
        for tp in partitions:
            self._written_last.pop(tp, None)
