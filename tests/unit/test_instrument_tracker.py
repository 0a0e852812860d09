"""When records count as processed (testbed.instrument.tracker), and the record fields of either client."""

from __future__ import annotations

import json
import time
from collections import namedtuple
from pathlib import Path

import confluent_kafka
import pytest

from testbed.instrument.config import InstrumentConfig
from testbed.instrument.confluent import MessageTracker, make_consumer_class, message_fields, settle_messages
from testbed.instrument.history import MemberHistoryFile
from testbed.instrument.python_records import record_fields as kafka_python_fields
from testbed.instrument.python_records import RecordTracker, settle_records
from testbed.instrument.records import record_fields
from testbed.instrument.runs import ProcessedRuns
from testbed.instrument.state import Instrumentation
from testbed.instrument.tracker import ConsumerTracker, Trackers

# kafka-python's ConsumerRecord, reduced to what the instrumentation reads
Record = namedtuple("Record", "topic partition offset timestamp headers")
STAMP = 1_700_000_000_000


def ts_header(ms: int) -> list[tuple[str, bytes]]:
    return [("ts", ms.to_bytes(8, "big", signed=True))]


def rec(partition: int, offset: int, topic: str = "t") -> Record:
    return Record(topic, partition, offset, STAMP - 5, ts_header(STAMP + offset))


def processed(path: Path) -> list[tuple]:
    if not path.exists():
        return []
    return [(e["partition"], e["first_offset"], e["last_offset"], e["count"])
            for e in map(json.loads, path.read_text().splitlines()) if e["name"] == "processed"]


@pytest.fixture
def tracked(tmp_path: Path) -> tuple[ConsumerTracker, Path]:
    path = tmp_path / "m0.jsonl"
    return ConsumerTracker(MemberHistoryFile(str(path), "m0"), kafka_python_fields), path


def test_records_handed_over_count_when_the_program_asks_again(tracked) -> None:
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.settle(1)
    tracker.handed_many([rec(0, 1), rec(1, 7)])
    tracker.before_commit()  # a commit: everything handed over so far is processed, and written
    assert sorted(processed(path)) == [(0, 0, 1, 2), (1, 7, 7, 1)]


def test_a_run_written_late_keeps_the_time_its_last_record_was_processed(tracked) -> None:
    """A program that stops calling leaves its run open until it calls again: the event is stamped (wall and
    monotonic alike) when the record was processed, so the analysis sees no wall-clock step in the lag."""
    tracker, path = tracked
    then_ns = time.monotonic_ns() - 5_000_000_000
    tracker.handed_one(rec(0, 0))
    tracker.settle(then_ns)
    tracker.at_exit()
    (event,) = map(json.loads, path.read_text().splitlines())
    assert event["mono_ms"] == then_ns // 1_000_000
    offset_now = time.time_ns() // 1_000_000 - time.monotonic_ns() // 1_000_000
    assert abs((event["ts_ms"] - event["mono_ms"]) - offset_now) <= 5


def test_records_still_held_at_exit_are_not_processed(tracked) -> None:
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.settle(1)
    tracker.handed_one(rec(0, 1))  # the program never asked again
    tracker.at_exit()
    assert processed(path) == [(0, 0, 0, 1)]


def test_a_close_counts_what_the_program_holds(tracked) -> None:
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.before_close()
    assert processed(path) == [(0, 0, 0, 1)]


def test_a_close_while_an_exception_unwinds_the_program_leaves_the_record_it_failed_on_unprocessed(tracked) -> None:
    """``finally: consumer.close()`` on the way to a crash: the record it raised on is held, not processed."""
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.settle(1)
    tracker.handed_one(rec(0, 1))  # the poison record
    with pytest.raises(ValueError):
        try:
            raise ValueError("cannot parse the record")
        finally:
            tracker.before_close()
    assert processed(path) == [(0, 0, 0, 1)]
    tracker.before_revoke([("t", 0)])  # the close's own revoke callback, which comes after
    tracker.at_exit()
    assert processed(path) == [(0, 0, 0, 1)]


def test_only_a_close_reads_an_exception_as_unprocessed_not_a_commit(tracked) -> None:
    """A commit inside an ``except`` may follow handling the batch otherwise (a dead-letter topic)."""
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    try:
        raise ValueError("handled: sent to the dead-letter topic")
    except ValueError:
        tracker.before_commit()
    assert processed(path) == [(0, 0, 0, 1)]


def test_a_confluent_consumer_closed_while_an_exception_unwinds_drops_what_its_last_poll_returned(tmp_path) -> None:
    path = tmp_path / "m0.jsonl"
    tracker = MessageTracker(MemberHistoryFile(str(path), "m0"))
    message = lambda offset: confluent_kafka.Message(topic="t", partition=0, offset=offset,  # noqa: E731
                                                     headers=ts_header(STAMP + offset))
    tracker.call_begins()
    tracker.hand_over([message(0)])
    tracker.call_begins()  # the next poll: record 0 is processed
    tracker.hand_over([message(1)])  # the poison record
    with pytest.raises(ValueError):
        try:
            raise ValueError("cannot parse the record")
        finally:
            tracker.before_close()
    tracker.before_revoke([("t", 0)])
    tracker.at_exit()
    assert processed(path) == [(0, 0, 0, 1)]


def test_a_revoke_writes_the_revoked_partitions_runs_first(tracked) -> None:
    tracker, path = tracked
    tracker.handed_many([rec(0, 0), rec(1, 0)])
    tracker.before_revoke([("t", 1)])
    assert processed(path) == [(1, 0, 0, 1)]
    tracker.before_commit()
    assert processed(path)[1:] == [(0, 0, 0, 1)]


def test_from_the_first_mark_only_marked_records_count(tracked) -> None:
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.mark([kafka_python_fields(rec(0, 0))], 1)
    tracker.handed_one(rec(0, 1))  # handed over, never marked
    tracker.settle(2)
    tracker.before_commit()
    assert processed(path) == [(0, 0, 0, 1)]


def test_records_counted_before_the_first_mark_are_not_counted_again(tracked) -> None:
    """A program polls records into a buffer and marks the buffer later: the polls already counted some."""
    tracker, path = tracked
    for offset in range(4):
        tracker.settle(offset)
        tracker.handed_one(rec(0, offset))  # each poll settles the one before
    tracker.mark([kafka_python_fields(rec(0, o)) for o in range(4)], 10)
    tracker.mark([kafka_python_fields(rec(0, 4))], 11)
    tracker.before_commit()
    offsets = [o for _, first, last, _ in processed(path) for o in range(first, last + 1)]
    assert sorted(offsets) == [0, 1, 2, 3, 4]


def test_a_mark_goes_to_the_consumer_that_owns_the_partition(tmp_path: Path) -> None:
    trackers = Trackers()
    first = ConsumerTracker(MemberHistoryFile(str(tmp_path / "a.jsonl"), "a"), kafka_python_fields)
    second = ConsumerTracker(MemberHistoryFile(str(tmp_path / "b.jsonl"), "b"), kafka_python_fields)
    trackers.add(first)
    trackers.add(second)
    trackers.assigned(first, [("t", 0)])
    trackers.mark([rec(0, 3), rec(5, 1)])  # partition 5 has no owner: the newest consumer takes it
    trackers.mark({("t", 0): [rec(0, 4)]})  # kafka-python's poll() result as it is
    trackers.at_exit()
    assert processed(tmp_path / "a.jsonl") == [(0, 3, 4, 2)]
    assert processed(tmp_path / "b.jsonl") == [(5, 1, 1, 1)]
    assert second.marked and first.marked


def test_record_fields_of_either_client_and_the_produce_time_rule() -> None:
    message = confluent_kafka.Message(topic="t", partition=2, offset=9, headers=[("k", b"v"), *ts_header(STAMP)],
                                      timestamp=(1, STAMP - 1))
    assert record_fields(message) == message_fields(message) == ("t", 2, 9, STAMP)
    plain = confluent_kafka.Message(topic="t", partition=2, offset=9, timestamp=(1, STAMP - 1))
    assert record_fields(plain) == ("t", 2, 9, STAMP - 1)  # no header: the record's timestamp
    none = confluent_kafka.Message(topic="t", partition=2, offset=9, timestamp=(0, -1))
    assert record_fields(none)[3] is None
    assert record_fields(rec(1, 4)) == ("t", 1, 4, STAMP + 4)
    assert record_fields(Record("t", 1, 4, -1, None))[3] is None
    assert record_fields(Record("t", 1, 4, 5, [("ts", b"short")]))[3] == 5


def messages(specs: list[tuple]) -> list:
    out = []
    for partition, offset, headers, timestamp in specs:
        out.append(confluent_kafka.Message(topic="t", partition=partition, offset=offset, headers=headers,
                                           timestamp=timestamp))
    return out


def test_the_inlined_confluent_paths_agree_with_processed_runs(tmp_path: Path) -> None:
    """settle_messages and the instrumented poll inline ProcessedRuns.add and the produce-time rule for speed."""
    specs = [(0, 0, ts_header(STAMP + 3), (1, 1)), (0, 1, None, (1, STAMP - 9)), (1, 5, [("x", b"1")], (0, -1)),
             (0, 2, [("x", None), *ts_header(STAMP - 4)], (1, 1)), (0, 4, ts_header(-7), (1, 1)),
             (1, 6, ts_header(STAMP), (1, 1)), (0, 3, None, (1, STAMP))]
    expected_out: list = []
    expected = ProcessedRuns(expected_out.extend)
    batch_out: list = []
    batch = ProcessedRuns(batch_out.extend)
    for i, msg in enumerate(messages(specs)):
        expected.add(*message_fields(msg), i)
        settle_messages(batch, [msg], i)
    expected.flush()
    batch.flush()

    def shape(out: list) -> list[tuple]:
        return [(r.partition, r.first, r.last, r.count, r.produce_ts_min, r.produce_ts_max) for r in out]

    assert shape(batch_out) == shape(expected_out)
    assert (0, 4, 4, 1, -7, -7) in shape(expected_out)  # the header is signed

    class Polled:  # what the instrumented poll wraps: it hands the messages out one by one
        def __init__(self, conf: dict) -> None:
            self.queue = messages(specs)

        def poll(self, timeout=None):
            return self.queue.pop(0) if self.queue else None

        subscribe = consume = commit = close = lambda self, *a, **k: None

    inst = Instrumentation(InstrumentConfig("m0", str(tmp_path / "m0.jsonl")), Trackers())
    consumer = make_consumer_class(Polled, inst)({"group.id": "g"})
    for _ in range(len(specs) + 1):
        consumer.poll(1.0)
    consumer._testbed_tracker.at_exit()
    polled = [(e["partition"], e["first_offset"], e["last_offset"], e["count"], e["produce_ts_min_ms"],
               e["produce_ts_max_ms"]) for e in map(json.loads, (tmp_path / "m0.jsonl").read_text().splitlines())]
    assert sorted(polled) == sorted(shape(expected_out))


def test_the_inlined_kafka_python_paths_agree_with_processed_runs(tmp_path: Path) -> None:
    records = [Record("t", 0, 0, 5, ts_header(STAMP + 3)), Record("t", 0, 1, STAMP - 9, None),
               Record("t", 1, 5, -1, [("x", b"1")]), Record("t", 0, 2, 1, [("x", None), *ts_header(STAMP - 4)]),
               Record("t", 0, 4, 1, ts_header(-7)), Record("u", 0, 5, 1, None), Record("t", 0, 5, 1, None)]
    expected_out: list = []
    expected = ProcessedRuns(expected_out.extend)
    inlined_out: list = []
    inlined = ProcessedRuns(inlined_out.extend)
    nexted_out: list = []
    tracker = RecordTracker(MemberHistoryFile(str(tmp_path / "m.jsonl"), "m"), kafka_python_fields)
    tracker.runs = ProcessedRuns(nexted_out.extend, window_ns=10**18)
    for i, record in enumerate(records):
        expected.add(*kafka_python_fields(record), i)
        settle_records(inlined, [record], i)
        tracker.handed_one(record)
        tracker.settle_next(i)
    expected.flush()
    inlined.flush()
    tracker.runs.flush()

    def shape(out: list) -> list[tuple]:
        return [(r.topic, r.partition, r.first, r.last, r.count, r.produce_ts_min, r.produce_ts_max, r.last_ns)
                for r in out]

    assert shape(inlined_out) == shape(nexted_out) == shape(expected_out)
    assert ("t", 0, 4, 5, 2, -7, 1, 6) in shape(expected_out)  # a signed header; a bare timestamp


def test_the_flusher_writes_a_due_run_while_the_program_makes_no_call(tracked) -> None:
    """A program blocked in a long poll or its own work: its last records are written within the window."""
    from testbed.waits import wait_until

    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.settle(time.monotonic_ns())  # the run opens; nothing more happens on the program's side
    wait_until(lambda: processed(path) == [(0, 0, 0, 1)], timeout_s=5, interval_s=0.01,
               what="the flusher to write the run")


def test_a_commits_answer_is_written_after_the_runs_already_processed(tracked) -> None:
    tracker, path = tracked
    tracker.handed_one(rec(0, 0))
    tracker.settle(1)
    tracker.handed_one(rec(0, 1))  # still held by the program
    tracker.before_answer()
    assert processed(path) == [(0, 0, 0, 1)]


def test_a_batch_is_settled_by_stretches_as_record_by_record_would_count_it(tmp_path: Path) -> None:
    """settle_messages cuts a batch into one-partition stretches without Python per record; what it writes is
    what ProcessedRuns.add, record by record, writes (counts and offsets; produce times from the stretches' ends).
    A partition's records come in offset order, as librdkafka delivers them (gaps allowed)."""
    def msg(topic: str, partition: int, offset: int) -> confluent_kafka.Message:
        return confluent_kafka.Message(topic=topic, partition=partition, offset=offset,
                                       headers=ts_header(STAMP + offset), timestamp=(1, 1))

    batch = ([msg("t", 0, o) for o in range(10, 20)] + [msg("t", 1, o) for o in range(3, 5)]
             + [msg("u", 1, 5)]  # another topic's partition 1 continuing the offsets: not the same run
             + [msg("t", 0, o) for o in (20, 21, 23, 24)]  # a gap (a transaction marker at 22)
             + [msg("t", 2, o) for o in (7, 8, 10)]  # a compacted record: record by record
             + [msg("t", 0, 25)])

    def shape(out: list) -> list[tuple]:
        return sorted((r.topic, r.partition, r.first, r.last, r.count) for r in out)

    expected_out: list = []
    expected = ProcessedRuns(expected_out.extend)
    for m in batch:
        expected.add(*message_fields(m), 1)
    expected.flush()
    settled_out: list = []
    settled = ProcessedRuns(settled_out.extend)
    settle_messages(settled, batch, 1)
    settled.flush()
    assert shape(settled_out) == shape(expected_out)
    assert ("t", 0, 10, 21, 12) in shape(settled_out) and ("u", 1, 5, 5, 1) in shape(settled_out)
    first_run = next(r for r in settled_out if (r.topic, r.partition, r.first) == ("t", 0, 10))
    assert (first_run.produce_ts_min, first_run.produce_ts_max) == (STAMP + 10, STAMP + 21)

    one_topic_out: list = []  # the one topic subscribed to: topic() is not asked, the same runs come out
    one_topic = ProcessedRuns(one_topic_out.extend)
    settle_messages(one_topic, [m for m in batch if m.topic() == "t"], 1, topic="t")
    one_topic.flush()
    assert shape(one_topic_out) == [s for s in shape(expected_out) if s[0] == "t"]


class Served:
    """What the instrumented confluent class wraps, serving given messages: one per poll, all to a consume."""

    def __init__(self, conf: dict) -> None:
        self.queue: list = []

    def poll(self, timeout=None):
        return self.queue.pop(0) if self.queue else None

    def consume(self, num_messages=1, timeout=None):
        out, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        return out

    subscribe = commit = close = seek = lambda self, *a, **k: None


def served_consumer(tmp_path: Path, window_ns: int | None = None):
    inst = Instrumentation(InstrumentConfig("m0", str(tmp_path / "m0.jsonl")), Trackers())
    consumer = make_consumer_class(Served, inst)({"group.id": "g"})
    if window_ns is not None:
        consumer._testbed_tracker.runs.window_ns = window_ns
    return consumer, tmp_path / "m0.jsonl"


def test_records_of_the_latest_call_stay_the_programs_while_those_before_it_are_written(tmp_path: Path) -> None:
    """Settled in batches, the rule is unchanged: a record is processed once the program calls again; the
    flusher writes those while the program works on its last one, and never that last one."""
    from testbed.waits import wait_until

    consumer, path = served_consumer(tmp_path)
    consumer.queue = messages([(0, o, ts_header(STAMP), (1, 1)) for o in range(5)])
    consumer.poll(1.0)
    consumer.poll(1.0)
    consumer.consume(3, 1.0)  # records 0 and 1 are processed; 2..4 are the program's, it works on them
    wait_until(lambda: processed(path) == [(0, 0, 1, 2)], timeout_s=5, interval_s=0.01,
               what="the flusher to write the records handed before the latest call")
    time.sleep(0.1)  # the flusher comes back while the program holds records: it must still write nothing more
    consumer._testbed_tracker.at_exit()
    assert processed(path) == [(0, 0, 1, 2)]


def test_a_seek_settles_first_so_records_read_again_count_twice(tmp_path: Path) -> None:
    """Between two calls that move a position a partition's records come in offset order; a seek settles what
    came before it. Unsettled, 0 1 2 | seek 1 | 1 | seek 4 | 4 would read as the stretch 0..4 (five records
    from 0 to 4): offset 3 processed, offset 1 once."""
    consumer, path = served_consumer(tmp_path)
    consumer.subscribe(["t"])
    for offsets, seek_to in (((0, 1, 2), 1), ((1,), 4), ((4,), None)):
        consumer.queue = messages([(0, o, None, (1, STAMP)) for o in offsets])
        for _ in offsets:
            consumer.poll(1.0)
        if seek_to is not None:
            consumer.poll(1.0)  # nothing more: the program is done with what it has
            consumer.seek(confluent_kafka.TopicPartition("t", 0, seek_to))
    consumer.commit()
    assert processed(path) == [(0, 0, 2, 3), (0, 1, 1, 1), (0, 4, 4, 1)]


def test_a_program_polling_fast_holds_at_most_hold_max_messages(tmp_path: Path) -> None:
    """Messages kept alive past a few thousand slow librdkafka's fetching: the call that finds HOLD_MAX held
    settles them itself, the window or no."""
    from testbed.instrument.confluent import HOLD_MAX

    consumer, path = served_consumer(tmp_path, window_ns=10**12)  # the flusher would come much later
    consumer.subscribe(["t"])
    consumer.queue = messages([(0, o, None, (1, STAMP)) for o in range(3 * HOLD_MAX)])
    held = []
    for _ in range(3 * HOLD_MAX):
        consumer.poll(1.0)
        held.append(len(consumer._testbed_tracker.handed))
    assert max(held) == HOLD_MAX
    consumer.commit()
    assert processed(path) == [(0, 0, 3 * HOLD_MAX - 1, 3 * HOLD_MAX)]
