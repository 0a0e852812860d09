"""When a consumed record counts as processed: the at-least-once rule, or the program's own marks.

Implicit rule: the records a consumer handed the program (``poll``, ``consume``, iteration) are processed
when the program next asks for records, commits or closes, and before a revoke or loss of their partition
is recorded (a program's revoke callback runs after it finished its batch). Records handed over when the
interpreter exits without any of these are not processed: the program never said it was done with them. Nor
are they when the program closes while an exception unwinds it (``finally: consumer.close()`` on its way to a
crash): the record it failed on was not processed, whatever its close does on the way out.

Marks: a program may call ``testbed.instrument.processed(records)`` itself. From its first call on, a
consumer counts only marked records. Records it already counted by the implicit rule (handed over and
settled before that first mark, e.g. polled into a buffer the program marks later) are not counted a
second time when marked: the program is then catching up to where the implicit rule had got.

Processed records go into per-partition runs (``testbed.instrument.runs``) written as ``processed``
events, by the consumer's calls or, once due, by ``testbed.instrument.flusher``. One lock per consumer: kafka-python 3 calls the rebalance callbacks on its IO thread, and a
program may mark records from its worker threads. A reentrant one: a program's signal handler may close
the consumer while the interrupted main thread is inside this bookkeeping (a plain lock would deadlock
there; the handler's flush may then miss the one record being added, a window of a microsecond).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .flusher import FLUSHER, Flusher
from .history import MemberHistoryFile, wall_ms
from .records import RecordFields, record_fields
from .runs import NEVER, ProcessedRuns, Run

TopicPartition = Tuple[str, int]
monotonic_ns = time.monotonic_ns


class ConsumerTracker:
    """Processed records of one instrumented consumer."""

    def __init__(self, history: MemberHistoryFile, fields: Callable[[Any], RecordFields] = record_fields,
                 flusher: Flusher = FLUSHER) -> None:
        self.history = history
        self.fields = fields  # the client's own, faster than record_fields' guess
        self.flusher = flusher
        self.runs = ProcessedRuns(self._emit, on_due=lambda due_ns: flusher.due(self, due_ns))
        self.lock = threading.RLock()
        self.marked = False
        self.pending_one: Any = None  # the record the last single-record call (poll, next) handed over
        self.pending_many: Optional[Iterable[Any]] = None  # the records of the last batch call
        self._counted: Dict[TopicPartition, int] = {}  # marked mode: what the implicit rule counted first

    # ---- records handed to the program --------------------------------------------------------

    def settle(self, now_ns: int) -> None:
        """The program asks again (or commits, or closes): what it was handed is processed."""
        with self.lock:
            self._settle(now_ns)
            self.runs.flush_due(now_ns)

    def _settle(self, now_ns: int) -> None:
        one, many = self.pending_one, self.pending_many
        if one is not None:
            self.pending_one = None
            topic, partition, offset, ts = self.fields(one)
            self.runs.add(topic, partition, offset, ts, now_ns)
        if many is not None:
            self.pending_many = None
            add, fields = self.runs.add, self.fields
            for rec in many:
                topic, partition, offset, ts = fields(rec)
                add(topic, partition, offset, ts, now_ns)

    def handed_one(self, record: Any) -> None:
        """Called after ``settle``, on the same thread, with the record a call returned."""
        if not self.marked:
            self.pending_one = record

    def handed_many(self, records: Iterable[Any]) -> None:
        if not self.marked:
            self.pending_many = records

    # ---- the program's marks ------------------------------------------------------------------

    def mark(self, records: List[RecordFields], now_ns: int) -> None:
        """Records the program says it processed."""
        with self.lock:
            if not self.marked:
                self.marked = True
                self._drop_handed()  # from now on only marks count
                self._counted = self.runs.last_offsets()
            counted = self._counted
            for topic, partition, offset, ts in records:
                if counted:
                    done = counted.get((topic, partition))
                    if done is not None:
                        if offset <= done:
                            continue  # counted by the implicit rule before the program's first mark
                        del counted[(topic, partition)]  # caught up
                self.runs.add(topic, partition, offset, ts, now_ns)
            self.runs.flush_due(now_ns)

    # ---- flushes --------------------------------------------------------------------------------

    def before_commit(self) -> None:
        """A commit (or close) of the program's: its records so far are processed, and written before it."""
        with self.lock:
            self._settle(monotonic_ns())
            self.runs.flush()

    def before_answer(self) -> None:
        """A commit's answer is about to be written: the runs already processed go first (what the program still
        holds is not processed; an auto-commit past it is the loss auto-commit risks)."""
        with self.lock:
            self._settle_done()
            self.runs.flush()

    def before_close(self) -> None:
        """The program closes its consumer: as a commit, unless an exception is unwinding the program (a
        ``finally`` or ``except`` closing on its way out): then what it holds was not processed and never will
        be, so it is dropped, and the close's own revoke callback cannot count it either. Only a close is read
        this way: a commit inside an ``except`` may well follow handling the batch otherwise (a dead-letter
        topic)."""
        if sys.exc_info()[1] is None:
            self.before_commit()
            return
        with self.lock:
            self._drop_handed()
            self.runs.flush()

    def before_revoke(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions revoked or lost: their processed records are written before that is."""
        tps = list(partitions)
        with self.lock:
            self._settle(monotonic_ns())
            self.runs.flush(tps)
            self.runs.forget(tps)
            for tp in tps:
                self._counted.pop(tp, None)

    def flush_due(self) -> None:
        """The flusher's call: write the runs whose window is over (and register the next window, if one opened)."""
        with self.lock:
            self._settle_done()
            self.runs.flush_due(monotonic_ns())
            if self.runs.due_ns != NEVER:
                self.flusher.due(self, self.runs.due_ns)

    def at_exit(self) -> None:
        """The interpreter ends without close: write what was processed, count nothing more."""
        with self.lock:
            self._settle_done()
            self.runs.flush()

    # ---- what a client's tracker may keep differently ---------------------------------------------

    def _settle_done(self) -> None:
        """Off the program's calls (the flusher, a commit's answer, the exit): settle what is known processed.
        Here nothing: a record handed over is settled at the program's next call."""

    def _drop_handed(self) -> None:
        """The program marks from now on: what it holds is not counted by the implicit rule."""
        self.pending_one = self.pending_many = None

    def _emit(self, runs: List[Run]) -> None:
        # The time each run's last record became processed, on the wall clock, from its monotonic stamp.
        now_wall_ms, now_ns = wall_ms(), monotonic_ns()
        self.history.processed_runs([
            (run.topic, run.partition, run.first, run.last, run.count, run.produce_ts_min, run.produce_ts_max,
             now_wall_ms - (now_ns - run.last_ns) // 1_000_000, run.last_ns // 1_000_000) for run in runs])


class Trackers:
    """Every instrumented consumer of the process, and which one owns a partition (for the marks)."""

    def __init__(self) -> None:
        self._all: List[ConsumerTracker] = []
        self._owner: Dict[TopicPartition, ConsumerTracker] = {}
        self._lock = threading.Lock()

    def add(self, tracker: ConsumerTracker) -> None:
        with self._lock:
            self._all.append(tracker)

    def assigned(self, tracker: ConsumerTracker, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                self._owner[tp] = tracker

    def released(self, tracker: ConsumerTracker, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in partitions:
                if self._owner.get(tp) is tracker:
                    del self._owner[tp]

    def owner(self, tp: TopicPartition) -> Optional[ConsumerTracker]:
        """The consumer a record came from: the partition's owner, else the newest consumer."""
        tracker = self._owner.get(tp)
        if tracker is None and self._all:
            tracker = self._all[-1]
        return tracker

    def all(self) -> List[ConsumerTracker]:
        with self._lock:
            return list(self._all)

    def mark(self, records: Any) -> None:
        """``testbed.instrument.processed``: one record, a list of them, or kafka-python's ``poll()`` result (a dict
        of lists), of either client."""
        if isinstance(records, dict):
            items = [rec for recs in records.values() for rec in recs]
        else:
            items = records if isinstance(records, (list, tuple)) else [records]
        now = monotonic_ns()
        by_tracker: Dict[int, Tuple[ConsumerTracker, List[RecordFields]]] = {}
        for rec in items:
            fields = record_fields(rec)
            tracker = self.owner((fields[0], fields[1]))
            if tracker is not None:
                by_tracker.setdefault(id(tracker), (tracker, []))[1].append(fields)
        for tracker, fields_list in by_tracker.values():
            tracker.mark(fields_list, now)

    def at_exit(self) -> None:
        for tracker in self.all():
            try:
                tracker.at_exit()
            except Exception:  # noqa: BLE001 - one consumer's failure must not cost the others' records
                pass


TRACKERS = Trackers()
