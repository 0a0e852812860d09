"""Each member runner against a real broker: join, own all partitions, process, stop cleanly or die.

Uses the session ``kafka_cluster`` and ``topic_factory`` fixtures. For development without the
container cluster, set TESTBED_MEMBERS_DEV_BOOTSTRAP=host:port to a bare local broker; this
module then overrides both fixtures with that broker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from confluent_kafka import Producer

from testbed.history.events import Assigned, Processed, Started, Stopped
from testbed.history.writer import read_events
from testbed.members.config import MemberConfig
from testbed.members.launch import prepare_spec, runner_command
from testbed.members.spec import MemberSpec
from testbed.cache import pythonpath_with_testbed
from testbed.waits import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 12
RECORDS = 240
DEV_BOOTSTRAP = os.environ.get("TESTBED_MEMBERS_DEV_BOOTSTRAP")

if DEV_BOOTSTRAP:
    from confluent_kafka.admin import AdminClient, NewTopic

    @pytest.fixture(scope="session")
    def kafka_cluster() -> SimpleNamespace:
        return SimpleNamespace(bootstrap_servers=DEV_BOOTSTRAP)

    @pytest.fixture
    def topic_factory() -> Iterator[Callable[..., str]]:
        admin = AdminClient({"bootstrap.servers": DEV_BOOTSTRAP})
        made: list[str] = []

        def make(partitions: int = 1) -> str:
            name = f"t-members-{uuid.uuid4().hex[:8]}"
            admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=30)
            made.append(name)
            return name

        yield make
        if made:
            for future in admin.delete_topics(made).values():
                future.result(timeout=30)


def produce(bootstrap: str, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(count):
        stamp = time.time_ns() // 1_000_000
        producer.produce(topic, key=str(i), value=b"v", partition=i % PARTITIONS, headers=[("ts", stamp.to_bytes(8, "big"))])
    assert producer.flush(30) == 0


class RunningMember:
    def __init__(self, config: MemberConfig, log: Path) -> None:
        self.config = config
        self.log = log
        with log.open("wb") as err:
            self.proc = subprocess.Popen(runner_command(config), stderr=err, start_new_session=True,
                                         env={**os.environ, "PYTHONPATH": pythonpath_with_testbed()})

    def events(self) -> list:
        path = self.config.history_path
        return list(read_events(path)) if path.exists() else []

    def diagnostics(self) -> str:
        names = [e.name for e in self.events()]
        tail = self.log.read_text(errors="replace")[-1500:]
        return f"exit={self.proc.poll()} events={names[-12:]}\nstderr tail:\n{tail}"

    def wait_for(self, what: str, condition: Callable[[list], object], timeout_s: float = 60) -> None:
        wait_until(lambda: condition(self.events()), timeout_s=timeout_s, what=what, diagnostics=self.diagnostics)

    def signal(self, sig: int) -> int:
        os.killpg(self.proc.pid, sig)
        return self.proc.wait(timeout=30)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def start_member(kafka_cluster, tmp_path: Path) -> Iterator[Callable[..., RunningMember]]:
    started: list[RunningMember] = []

    def start(spec: MemberSpec, topic: str, member_id: str = "m0") -> RunningMember:
        config = MemberConfig(
            member_id=member_id, group_id=f"g-{uuid.uuid4().hex[:8]}", topics=[topic],
            bootstrap_servers=kafka_cluster.bootstrap_servers, spec=spec,
            history_path=tmp_path / "history" / "members" / f"{member_id}.jsonl",
        )
        prepare_spec(config.spec)
        member = RunningMember(config, tmp_path / f"{member_id}.stderr")
        started.append(member)
        return member

    yield start
    for member in started:
        member.cleanup()


def processed_count(events: list) -> int:
    return sum(e.count for e in events if isinstance(e, Processed))


def owned(events: list) -> set[tuple[str, int]]:
    return {tp for e in events if isinstance(e, Assigned) for tp in e.partitions}


SPECS = {
    "confluent-eager": MemberSpec(client="confluent-kafka", assignors=["range"], commit_mode="sync"),
    "confluent-coop-2.3.0": MemberSpec(client="confluent-kafka", client_version="2.3.0",
                                       assignors=["cooperative-sticky"], commit_mode="on_revoke"),
    "confluent-kip848": MemberSpec(client="confluent-kafka", group_protocol="consumer", remote_assignor="uniform"),
    "kafka-python-coop": MemberSpec(client="kafka-python", assignors=["cooperative-sticky"], commit_mode="on_revoke",
                                    static=True),
    "kafka-python-3.0.0": MemberSpec(client="kafka-python", client_version="3.0.0", assignors=["roundrobin"]),
    "kafka-python-2.3.3": MemberSpec(client="kafka-python", client_version="2.3.3", assignors=["sticky"],
                                     commit_mode="on_revoke"),
    "java-4.1.1": MemberSpec(client="java", client_version="4.1.1", assignors=["cooperative-sticky"],
                             commit_mode="sync"),
    "java-3.9.1": MemberSpec(client="java", client_version="3.9.1", commit_mode="auto"),
}


@pytest.mark.parametrize("name", list(SPECS))
def test_member_owns_all_partitions_processes_and_stops_cleanly(name: str, kafka_cluster, topic_factory,
                                                                  start_member) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    member = start_member(SPECS[name], topic)

    member.wait_for(f"{RECORDS} records processed", lambda ev: processed_count(ev) >= RECORDS)
    assert member.signal(signal.SIGTERM) == 0

    events = member.events()
    assert isinstance(events[0], Started) and events[0].client == SPECS[name].client
    assert owned(events) == {(topic, p) for p in range(PARTITIONS)}
    assert processed_count(events) == RECORDS
    offsets = {(e.partition, o) for e in events if isinstance(e, Processed) for o in range(e.first_offset, e.last_offset + 1)}
    assert len(offsets) == RECORDS
    if SPECS[name].client != "java":
        stamps = [e.produce_ts_min_ms for e in events if isinstance(e, Processed)]
        assert all(s is not None and s > 1_600_000_000_000 for s in stamps)
    assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"
    if SPECS[name].commit_mode != "auto":
        committed = {(o.partition, o.offset) for e in events if e.name == "committed" and not e.error for o in e.offsets}
        assert {p for p, _ in committed} == set(range(PARTITIONS))


@pytest.mark.parametrize("name", ["confluent-eager", "kafka-python-coop", "java-4.1.1"])
def test_sigkilled_member_leaves_its_history_intact(name: str, kafka_cluster, topic_factory, start_member) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    member = start_member(SPECS[name], topic)
    member.wait_for("some records processed", lambda ev: processed_count(ev) > 0)

    assert member.signal(signal.SIGKILL) == -signal.SIGKILL
    raw = member.config.history_path.read_bytes()
    assert raw.endswith(b"\n")  # nothing torn: every line written is whole
    events = member.events()
    assert len(events) == raw.count(b"\n")
    assert not any(isinstance(e, Stopped) for e in events)
    assert processed_count(events) > 0
