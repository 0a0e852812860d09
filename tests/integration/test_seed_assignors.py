"""The seed assignors in real kafka-python fleets: what each one promises, seen through the admin API.

- lag-aware (KIP-169): on a skewed backlog produced before the members start (nothing committed,
  ``auto_offset_reset=earliest``) its members' backlogs are closer together than range's. The heavy
  partitions are 0, 3 and 6: range puts two of them on one member, and a lag-aware leader whose offset
  fetch failed (count balance only, partitions in number order) would put all three on one member; only
  lags fetched from the broker spread them one per member.
- failover (seed 002, priority = -slot): every partition on the highest-priority live member, through
  that member leaving and coming back.
- sticky-stream-join (seed 003): two co-partitioned topics; each member owns the same partition numbers
  of both.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from testbed.assignors.lag_aware import PartitionOffsets, lags_from_offsets
from testbed.assignors.offsets_fetch import fetch_partition_offsets
from testbed.fleet import Fleet
from testbed.admin.kafka_admin import GroupView
from testbed.run.layout import RunDir
from testbed.members.spec import MemberSpec

pytestmark = pytest.mark.integration

PARTITIONS = 12
MEMBERS = 3
HEAVY_PARTITIONS = (0, 3, 6)
HEAVY_BACKLOG = 3000
LIGHT_BACKLOG = 100
STABLE_TIMEOUT_S = 60.0
LAG_AWARE = "testbed.assignors.kafka_python:LagAwareAssignor"
FAILOVER = "testbed.assignors.kafka_python:SlotPriorityFailoverAssignor"
STREAM_JOIN = "testbed.assignors.kafka_python:StickyStreamJoinAssignor"


@contextmanager
def fleet_of(kafka_cluster, topics: list[str], root: Path, label: str) -> Iterator[Fleet]:
    group = f"seed-{label}-{uuid.uuid4().hex[:6]}"
    with Fleet(kafka_cluster.bootstrap_servers, group, topics, RunDir(root / label)) as fleet:
        yield fleet


def produce_skewed_backlog(bootstrap: str, topic: str) -> dict[int, int]:
    """Heavy backlog on HEAVY_PARTITIONS, a little on the rest; returns records per partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    counts = {p: HEAVY_BACKLOG if p in HEAVY_PARTITIONS else LIGHT_BACKLOG for p in range(PARTITIONS)}
    for partition, count in counts.items():
        for i in range(count):
            producer.produce(topic, value=b"x" * 50, key=str(i).encode(), partition=partition)
            if i % 1000 == 0:
                producer.poll(0)
    remaining = producer.flush(30)
    assert remaining == 0, f"{remaining} records not acknowledged"
    return counts


def backlog_per_member(bootstrap: str, group: str, topic: str, view: GroupView) -> dict[str, int]:
    """Per member: sum over its partitions of end offset - committed offset (0 if never committed).

    Read with a confluent-kafka consumer that never joins the group, independent of the assignor's own fetch.
    """
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = {tp.partition: tp.offset for tp in probe.committed(tps, timeout=10)}
        ends = {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        probe.close()
    backlog = {p: ends[p] - max(committed[p], 0) for p in range(PARTITIONS)}  # -1001 = no commit: from 0
    return {m.client_id: sum(backlog[p] for _, p in m.partitions) for m in view.members}


def failed_offset_fetches(fleet: Fleet) -> list[str]:
    lines = []
    for proc in [*fleet.members.values(), *fleet.retired]:
        log = proc.config.log_path
        if log and log.exists():
            lines += [f"{proc.member_id}: {line}" for line in log.read_text(errors="replace").splitlines()
                      if "lag-aware:" in line]
    return lines


def measure_spread(kafka_cluster, topic: str, root: Path, assignor: str) -> tuple[int, dict[str, int], GroupView, list[str]]:
    # Slow processing keeps the backlog near its produced size while the group forms.
    spec = MemberSpec(client="kafka-python", assignors=[assignor], commit_mode="on_revoke",
                      auto_offset_reset="earliest", processing_ms_per_record=20, max_poll_records=10)
    label = assignor.rsplit(":", 1)[-1].lower()
    with fleet_of(kafka_cluster, [topic], root, label) as fleet:
        fleet.start(spec, MEMBERS)
        view = fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S)
        per_member = backlog_per_member(kafka_cluster.bootstrap_servers, fleet.group_id, topic, view)
        problems = failed_offset_fetches(fleet)
    return max(per_member.values()) - min(per_member.values()), per_member, view, problems


def test_lag_aware_spreads_a_skewed_backlog_better_than_range(kafka_cluster, topic_factory, tmp_path) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce_skewed_backlog(kafka_cluster.bootstrap_servers, topic)

    range_spread, range_members, _, _ = measure_spread(kafka_cluster, topic, tmp_path, "range")
    lag_spread, lag_members, lag_view, fetch_problems = measure_spread(kafka_cluster, topic, tmp_path, LAG_AWARE)

    print(f"\nbacklog spread (max - min of per-member backlog, records): range {range_spread} {range_members}; "
          f"lag-aware {lag_spread} {lag_members}")
    assert not fetch_problems, "the lag-aware leader did not use fetched lags:\n" + "\n".join(fetch_problems)
    heavy_owners = {m.client_id for m in lag_view.members for _, p in m.partitions if p in HEAVY_PARTITIONS}
    assert len(heavy_owners) == MEMBERS, f"heavy partitions not one per member: {lag_view.summary()}"
    counts = sorted(len(m.partitions) for m in lag_view.members)
    assert counts[-1] - counts[0] <= 1, f"lag-aware counts differ by more than one: {lag_view.summary()}"
    assert lag_spread < range_spread, f"lag-aware spread {lag_spread} not below range spread {range_spread}"


def test_offsets_fetch_reads_committed_beginning_and_end_offsets(kafka_cluster, topic_factory) -> None:
    """The lag-aware leader's fetch against a real broker: committed offsets where the group committed,
    None where it never did, beginning/end as produced (the topic starts at offset 0)."""
    topic = topic_factory(partitions=PARTITIONS)
    counts = produce_skewed_backlog(kafka_cluster.bootstrap_servers, topic)
    group = f"seed-offsets-{uuid.uuid4().hex[:6]}"
    committer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": group,
                          "enable.auto.commit": False})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 1000), TopicPartition(topic, 1, 40)], asynchronous=False)
    finally:
        committer.close()
    config = {"bootstrap_servers": kafka_cluster.bootstrap_servers, "group_id": group}
    offsets = fetch_partition_offsets(config, group, [(topic, p) for p in range(PARTITIONS)])
    committed = {0: 1000, 1: 40}
    assert offsets == {(topic, p): PartitionOffsets(beginning=0, end=counts[p], committed=committed.get(p))
                       for p in range(PARTITIONS)}
    lags = lags_from_offsets({topic: PARTITIONS}, offsets, "earliest")[topic]
    assert lags[0] == HEAVY_BACKLOG - 1000 and lags[1] == LIGHT_BACKLOG - 40
    assert lags[3] == HEAVY_BACKLOG  # never committed: the whole backlog under 'earliest'


def _only_owner(view: GroupView) -> str:
    owners = {m.client_id for m in view.members if m.partitions}
    assert len(owners) == 1, f"failover: expected one member to own everything: {view.summary()}"
    return owners.pop()


def test_failover_puts_every_partition_on_the_highest_priority_member(kafka_cluster, topic_factory, tmp_path) -> None:
    topic = topic_factory(partitions=6)
    spec = MemberSpec(client="kafka-python", assignors=[FAILOVER], commit_mode="on_revoke")
    with fleet_of(kafka_cluster, [topic], tmp_path, "failover") as fleet:
        fleet.start(spec, MEMBERS)
        assert _only_owner(fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S)) == "m0"  # slot 0: priority 0, highest
        fleet.stop_member("m0")
        assert _only_owner(fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S)) == "m1"  # next: priority -1
        fleet.restart_member("m0")  # a new process in slot 0 takes everything back
        assert _only_owner(fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S)) == "m0.1"


def test_stream_join_keeps_two_topics_co_partitioned_through_a_bounce(kafka_cluster, topic_factory, tmp_path) -> None:
    left, right = topic_factory(partitions=6), topic_factory(partitions=6)
    spec = MemberSpec(client="kafka-python", assignors=[STREAM_JOIN], commit_mode="on_revoke")

    def check(view: GroupView) -> None:
        for m in view.members:
            numbers = {t: sorted(p for tt, p in m.partitions if tt == t) for t in (left, right)}
            assert numbers[left] == numbers[right] and numbers[left], f"not co-partitioned: {view.summary()}"

    with fleet_of(kafka_cluster, [left, right], tmp_path, "stream-join") as fleet:
        fleet.start(spec, MEMBERS)
        check(fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S))
        fleet.restart_member("m1")
        check(fleet.wait_stable(timeout_s=STABLE_TIMEOUT_S))
