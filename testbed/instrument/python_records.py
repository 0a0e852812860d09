"""What the instrumentation of the two Python clients with kafka-python's record type shares: kafka-python's
``ConsumerRecord`` and aiokafka's have the same fields, so both settle handed-over records into processed runs
the same way, and name partitions, offsets and errors alike. Imports neither client.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .records import header_ts, kafka_python_produce_ts
from .tracker import ConsumerTracker

TopicPartition = Tuple[str, int]

SIGN_BIT, WRAP = 1 << 63, 1 << 64  # the 'ts' header is a signed 8-byte integer
from_bytes = int.from_bytes


def record_fields(rec: Any) -> Tuple[str, int, int, Optional[int]]:
    return rec.topic, rec.partition, rec.offset, kafka_python_produce_ts(rec)


def settle_records(runs: Any, records: Any, now_ns: int) -> None:
    """Add records to the runs: ``ProcessedRuns.add`` and ``records.kafka_python_produce_ts`` inlined in one loop
    (an iterating program settles one record per ``next``). Called under the tracker's lock."""
    add_new = runs.add_new
    for rec in records:
        topic, partition, offset = rec.topic, rec.partition, rec.offset
        ts = None
        headers = rec.headers
        if headers:
            key, value = headers[0]
            if key == "ts" and value is not None and len(value) == 8:
                ts = from_bytes(value, "big")
                if ts >= SIGN_BIT:
                    ts -= WRAP
            else:
                ts = header_ts(headers)
        if ts is None:
            stamp = rec.timestamp
            if stamp is not None and stamp >= 0:
                ts = stamp
        run = runs.current
        if run is not None and run.last + 1 == offset and run.partition == partition and run.topic == topic:
            run.last = offset
            run.count += 1
            run.last_ns = now_ns
            if ts is not None:
                if ts < run.ts_min:
                    run.ts_min = ts
                if ts > run.ts_max:
                    run.ts_max = ts
        else:
            add_new(topic, partition, offset, ts, now_ns)


class RecordTracker(ConsumerTracker):
    """The tracker of a kafka-python consumer: settles ConsumerRecords with the inlined loop above."""

    def settle_next(self, now_ns: int) -> None:
        """``settle`` of an iterating program (``next`` hands over one record): ``settle_records``' body inlined, as
        each call of ours costs about as much as the work (tests/unit/test_instrument_tracker.py holds both copies
        to ProcessedRuns.add)."""
        lock = self.lock
        lock.acquire()
        try:
            rec = self.pending_one
            runs = self.runs
            if rec is not None and self.pending_many is None:
                self.pending_one = None
                topic, partition, offset = rec.topic, rec.partition, rec.offset
                ts = None
                headers = rec.headers
                if headers:
                    key, value = headers[0]
                    if key == "ts" and value is not None and len(value) == 8:
                        ts = from_bytes(value, "big")
                        if ts >= SIGN_BIT:
                            ts -= WRAP
                    else:
                        ts = header_ts(headers)
                if ts is None:
                    stamp = rec.timestamp
                    if stamp is not None and stamp >= 0:
                        ts = stamp
                run = runs.current
                if run is not None and run.last + 1 == offset and run.partition == partition and run.topic == topic:
                    run.last = offset
                    run.count += 1
                    run.last_ns = now_ns
                    if ts is not None:
                        if ts < run.ts_min:
                            run.ts_min = ts
                        if ts > run.ts_max:
                            run.ts_max = ts
                else:
                    runs.add_new(topic, partition, offset, ts, now_ns)
            else:
                self._settle(now_ns)
            if now_ns >= runs.due_ns:
                runs.flush()
        finally:
            lock.release()

    def _settle(self, now_ns: int) -> None:
        one, many = self.pending_one, self.pending_many
        if one is not None:
            self.pending_one = None
            settle_records(self.runs, (one,), now_ns)
        if many is not None:
            self.pending_many = None
            settle_records(self.runs, many, now_ns)


def error_code(exc: BaseException) -> str:
    """Kafka's error code name (e.g. FENCED_INSTANCE_ID) when the exception carries one."""
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message.isupper() else type(exc).__name__


def offsets_of(offsets: Any) -> Dict[TopicPartition, int]:
    """{TopicPartition: OffsetAndMetadata} (or bare ints, or aiokafka's (offset, metadata)) as
    {(topic, partition): offset}."""
    return {(tp.topic, tp.partition): _offset(om) for tp, om in (offsets or {}).items()}


def _offset(value: Any) -> int:
    """An OffsetAndMetadata's offset, an aiokafka ``(offset, metadata)`` pair's, or the bare offset."""
    if hasattr(value, "offset"):
        return value.offset
    return value[0] if isinstance(value, tuple) else value


def partitions_of(partitions: Any) -> List[TopicPartition]:
    return [(tp.topic, tp.partition) for tp in partitions]


def subscribed_topics(topics: Any, pattern: Any) -> List[str]:
    if pattern is not None:
        return [getattr(pattern, "pattern", pattern)]  # a regex subscription: the pattern as given
    return [str(t) for t in topics or ()]


def before_close(inst: Any, st: Any, where: str) -> None:
    """A consumer's close begins (kafka-python ``close()``, aiokafka ``stop()``): what it handed over is processed,
    unless an exception unwinds the program (``ConsumerTracker.before_close``)."""
    try:
        st.tracker.before_close()
    except Exception as exc:  # noqa: BLE001
        inst.failed(where, exc)


def after_close(inst: Any, st: Any, where: str, exc: Optional[BaseException] = None) -> None:
    """The close ended (``exc``: it raised): ``stopped`` (clean), after an ``error`` when it failed."""
    st.closed = True
    try:
        if st.started and st.recording:
            if exc is not None:
                inst.history.error(error_code(exc), f"close failed: {exc}")
            inst.history.stopped("clean")
    except Exception as failure:  # noqa: BLE001
        inst.failed(where, failure)


class ConsumerState:
    """What the instrumentation keeps on one consumer: the program's settings, its tracker (by default one of
    kafka-python's record type), whether its ``started`` is written and whether it closed. Its callbacks hold this,
    never the consumer (no cycle)."""

    def __init__(self, inst: Any, user_settings: Dict[str, Any], tracker: Optional[ConsumerTracker] = None) -> None:
        self.inst = inst
        self.user_settings = user_settings
        self.tracker = tracker if tracker is not None else RecordTracker(inst.history, record_fields)
        self.started = False
        self.closed = False
        inst.trackers.add(self.tracker)

    @property
    def recording(self) -> bool:
        return not self.inst.exiting


def partition_recorder(st: ConsumerState, consumer_ref: Any,
                       generation_of: Any) -> Any:
    """``record(kind, partitions)``: an ``assigned`` / ``revoked`` / ``lost`` event with the coordinator's
    generation and member id (``generation_of(consumer)``); returns the partitions as pairs."""
    history = st.inst.history

    def record(kind: str, partitions: Any) -> List[TopicPartition]:
        tps = partitions_of(partitions)
        if st.recording:
            generation, member_id = generation_of(consumer_ref())
            history.partitions(kind, tps, generation=generation, kafka_member_id=member_id)
        return tps

    return record
