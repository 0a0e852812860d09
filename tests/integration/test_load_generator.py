"""LoadGenerator against real brokers: every acknowledged record is in the topic as logged."""

from __future__ import annotations

import csv
import time
from collections import defaultdict
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, TopicPartition

from testbed.history.events import CLOCK_CORRECTION_ENV, Ack, Action, HarnessAction, now_ms
from testbed.run.layout import RunDir
from testbed.history.writer import read_events
from testbed.load import TS_HEADER, LoadGenerator, LoadSummary, decode_ts, decode_value
from testbed.waits import wait_until

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class StoredRecord:
    key: str
    seq: int
    value_ts_ms: int
    header_ts_ms: int


def read_topic(bootstrap_servers: str, topic: str, partitions: int) -> dict[tuple[int, int], StoredRecord]:
    """Every record of the topic by (partition, offset), read up to each partition's end."""
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"readback-{topic}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        stored: dict[tuple[int, int], StoredRecord] = {}

        def all_read() -> bool:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                assert msg.error() is None, msg.error()
                key, seq, value_ts = decode_value(msg.value())
                assert msg.key().decode() == key
                header_ts = decode_ts(dict(msg.headers())[TS_HEADER])
                stored[(msg.partition(), msg.offset())] = StoredRecord(key, seq, value_ts, header_ts)
            return sum(ends.values()) == len(stored)

        wait_until(all_read, timeout_s=60, what=f"all {sum(ends.values())} records of {topic}",
                   diagnostics=lambda: f"read {len(stored)} so far; ends {ends}")
        return stored
    finally:
        consumer.close()


def acks_of(run_dir: RunDir) -> list[Ack]:
    return [e for path in sorted(run_dir.acks.glob("*.jsonl")) for e in read_events(path) if isinstance(e, Ack)]


def csv_produce_row(load: LoadGenerator) -> dict[str, str]:
    with open(f"{load.csv_prefix}_stats.csv", newline="") as f:
        (row,) = [r for r in csv.DictReader(f) if r["Type"] == "produce" and r["Name"] == load.spec.topic]
    return row


def assert_acks_match_topic(load: LoadGenerator, summary: LoadSummary, bootstrap_servers: str,
                            partitions: int, check_csv: bool = True) -> list[Ack]:
    acks = acks_of(load.run_dir)
    stored = read_topic(bootstrap_servers, load.spec.topic, partitions)
    assert summary.acked == len(acks)
    # Nothing failed, so the topic holds exactly the acknowledged records, each as logged, and each producer's log of
    # the records it gave up on is there, empty.
    assert summary.failures == 0
    assert {p: load.run_dir.produce_failure_log(p).read_text() for p in load.ack_logs} == {p: "" for p in load.ack_logs}
    assert len(stored) == len(acks)
    for ack in acks:
        record = stored[(ack.partition, ack.offset)]
        assert (record.key, record.seq, record.value_ts_ms, record.header_ts_ms) == (
            ack.key, ack.seq, ack.produce_ts_ms, ack.produce_ts_ms)
    # Per key: sequence numbers unique, from 0 without gaps, increasing with the offset.
    by_key: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for ack in acks:
        by_key[ack.key].append((ack.partition, ack.offset, ack.seq))
    for key, entries in by_key.items():
        assert len({p for p, _, _ in entries}) == 1, f"key {key} in several partitions"
        seqs = [s for _, _, s in sorted(entries)]
        assert seqs == list(range(len(seqs))), f"key {key}: sequence {seqs[:20]}..."
    # Locust's own stats count the same deliveries, in JSON and (after a full run) CSV.
    assert summary.locust_delivered == len(acks)
    if check_csv:
        row = csv_produce_row(load)
        assert (int(row["Request Count"]), int(row["Failure Count"])) == (len(acks), 0)
    return acks


def test_ten_seconds_at_500_per_second_are_all_acknowledged_and_stored(
        kafka_cluster, topic_factory, run_dir: RunDir) -> None:
    topic = topic_factory(partitions=6)
    with LoadGenerator(run_dir, bootstrap_servers=kafka_cluster.bootstrap_servers, topic=topic, rate=500,
                       users=5, duration_s=10, key_space=200, key_distribution="zipf", seed=1) as load:
        assert load.wait() == {"single": 0}
    summary = load.summary()
    acks = assert_acks_match_topic(load, summary, kafka_cluster.bootstrap_servers, 6)
    assert len(acks) == pytest.approx(5000, rel=0.05)
    assert summary.achieved_rate == pytest.approx(500, rel=0.05), summary
    assert {a.source for a in acks} == {"producer-0"}
    for name in ("locust_stats.csv", "locust_stats_history.csv", "locust_failures.csv", "report.html",
                 "stats.json"):
        assert (run_dir.load / name).stat().st_size > 0, name


def test_two_workers_split_keys_and_agree_with_locust_master(kafka_cluster, topic_factory, run_dir: RunDir,
                                                            monkeypatch) -> None:
    topic = topic_factory(partitions=4)
    # as a worker on a node whose clock runs a minute ahead is told: its records and acks on the driver's clock
    monkeypatch.setenv(CLOCK_CORRECTION_ENV, "-60000")
    started_ms = now_ms()
    with LoadGenerator(run_dir, bootstrap_servers=kafka_cluster.bootstrap_servers, topic=topic, rate=400,
                       users=4, duration_s=5, workers=2, key_space=50) as load:
        assert load.wait() == {"master": 0, "worker-0": 0, "worker-1": 0}
    summary = load.summary()
    acks = assert_acks_match_topic(load, summary, kafka_cluster.bootstrap_servers, 4)
    assert len(acks) == pytest.approx(2000, rel=0.05)
    keys_by_producer: dict[str, set[str]] = defaultdict(set)
    for ack in acks:
        keys_by_producer[ack.source].add(ack.key)
    assert set(keys_by_producer) == {"producer-0", "producer-1"}
    assert not keys_by_producer["producer-0"] & keys_by_producer["producer-1"]
    # the stored records' header and value times equal the acks' (above): all a minute behind this clock
    assert all(started_ms - 60_000 <= a.produce_ts_ms <= now_ms() - 59_000 for a in acks)


def test_stop_on_demand_keeps_every_ack_and_the_reports(kafka_cluster, topic_factory, run_dir: RunDir) -> None:
    topic = topic_factory(partitions=3)
    with LoadGenerator(run_dir, bootstrap_servers=kafka_cluster.bootstrap_servers, topic=topic, rate=300,
                       users=3, duration_s=120) as load:
        ack_log = load.ack_logs["producer-0"]
        wait_until(lambda: ack_log.exists() and ack_log.stat().st_size > 20_000, timeout_s=60,
                   what="some acks in the log", diagnostics=load.diagnostics)
        t0 = time.monotonic()
        load.stop()
        assert time.monotonic() - t0 < load.spec.stop_timeout_s
        assert not load.running
    summary = load.summary()
    assert 0 < summary.acked < 300 * 120
    # Locust writes its CSV stats only periodically, not at shutdown: after a stop, JSON is final.
    assert_acks_match_topic(load, summary, kafka_cluster.bootstrap_servers, 3, check_csv=False)
    assert (run_dir.load / "report.html").exists()


def test_a_spawned_load_produces_nothing_until_started_then_all_of_it(kafka_cluster, topic_factory,
                                                                      run_dir: RunDir) -> None:
    topic = topic_factory(partitions=2)
    actions: list[HarnessAction] = []
    load = LoadGenerator(run_dir, bootstrap_servers=kafka_cluster.bootstrap_servers, topic=topic, rate=200, users=2,
                         duration_s=3, recorder=actions.append)
    load.spawn()
    log = load.processes[0].log_path
    wait_until(lambda: "waiting at the start gate" in log.read_text(), timeout_s=60, what="Locust at its gate",
               diagnostics=load.diagnostics, abort=load.ended_early)
    assert "Starting Locust" not in log.read_text()
    assert not load.ack_logs["producer-0"].exists() and actions == [], "a spawned load produces and records nothing"
    with load:  # start(): the gate opened
        assert load.wait() == {"single": 0}
    assert [a.kind for a in actions] == [Action.LOAD_START, Action.LOAD_END]
    summary = load.summary()
    acks = assert_acks_match_topic(load, summary, kafka_cluster.bootstrap_servers, 2)
    assert len(acks) == pytest.approx(600, rel=0.05)


def test_a_load_spawned_and_never_started_ends_with_its_close_and_records_nothing(run_dir: RunDir) -> None:
    actions: list[HarnessAction] = []
    # No broker behind it: the gate is never opened, the producer never needed.
    load = LoadGenerator(run_dir, bootstrap_servers="127.0.0.1:1", topic="t", rate=10, users=1, duration_s=60,
                         recorder=actions.append)
    load.spawn()
    t0 = time.monotonic()
    load.close()
    assert time.monotonic() - t0 < load.spec.stop_timeout_s, "killed at once: it has nothing to drain or report"
    assert not load.running
    assert actions == [] and not load.ack_logs["producer-0"].exists()
