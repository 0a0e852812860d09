"""Small consumer programs of the kind users write, run unchanged under testbed's instrumentation on real brokers.

Each program (tests/integration/programs/) knows nothing of testbed but its environment; the instrumentation
(testbed.instrument, loaded by its sitecustomize) must make its consumer write the member history testbed's own
runners write: started with the program's settings, assignments, every produced offset processed exactly once,
its commits, and revoked + stopped when SIGTERM makes it close its consumer. Few records and short timeouts:
the whole file runs in well under a minute once the session's cluster is up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from testbed.history.events import Assigned, Committed, Processed, Revoked, Started, Stopped
from testbed.history.writer import read_events
from testbed.instrument.launch import instrumented_env
from testbed.waits import wait_until

pytestmark = pytest.mark.integration

PROGRAMS = Path(__file__).parent / "programs"
# The programs' interpreter: this venv's (both clients, current versions) unless told otherwise, e.g. a venv
# of kafka-python 2.x or of an older Python, to check the instrumentation there by hand.
PROGRAM_PYTHON = os.environ.get("TESTBED_PROGRAM_PYTHON", sys.executable)
PARTITIONS = 3
RECORDS = 60
STALL_HOLD_S = 1.5  # a stall is an absence of processing: the program gets this long to (wrongly) process


def produce(bootstrap: str, topic: str, count: int, first_key: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first_key, first_key + count):
        stamp = time.time_ns() // 1_000_000
        producer.produce(topic, key=str(i), value=b"v", partition=i % PARTITIONS,
                         headers=[("ts", stamp.to_bytes(8, "big"))])
    assert producer.flush(30) == 0


class Program:
    """One program under the instrumentation, in its own process group."""

    def __init__(self, script: str, topic: str, bootstrap: str, tmp_path: Path, **env: str) -> None:
        self.history = tmp_path / "history" / "m0.jsonl"
        self.log = tmp_path / f"{script}.log"
        self.command = [PROGRAM_PYTHON, str(PROGRAMS / script)]
        self.group = f"g-{uuid.uuid4().hex[:8]}"
        config = tmp_path / "m0.json"
        # The shape of a MemberConfig as the fleet dumps it; the instrumentation reads what it needs.
        config.write_text(json.dumps({"member_id": "m0", "slot": 0, "group_id": self.group, "topics": [topic],
                                      "history_path": str(self.history),
                                      "spec": {"name": "app", "client": "confluent-kafka", "command": self.command}}))
        child = {**os.environ, "BOOTSTRAP": bootstrap, "GROUP": self.group, "TOPIC": topic, **env}
        child.update(instrumented_env(config, child))
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(self.command, env=child, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def events(self) -> list:
        return list(read_events(self.history)) if self.history.exists() else []

    def diagnostics(self) -> str:
        names = [e.name for e in self.events()]
        return f"exit={self.proc.poll()} events={names[-15:]}\noutput:\n{self.log.read_text(errors='replace')[-2000:]}"

    def wait_for(self, what: str, condition: Callable[[list], object], timeout_s: float = 30) -> None:
        def ended() -> str | None:
            return None if self.proc.poll() is None else f"the program exited with {self.proc.returncode}"

        wait_until(lambda: condition(self.events()), timeout_s=timeout_s, what=what, diagnostics=self.diagnostics,
                   abort=ended)

    def stop(self) -> int:
        os.killpg(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def start_program(kafka_cluster, tmp_path: Path) -> Iterator[Callable[..., Program]]:
    started: list[Program] = []

    def start(script: str, topic: str, **env: str) -> Program:
        program = Program(script, topic, kafka_cluster.bootstrap_servers, tmp_path, **env)
        started.append(program)
        return program

    yield start
    for program in started:
        program.kill()


def processed_offsets(events: list) -> list[tuple[int, int]]:
    return sorted((e.partition, o) for e in events if isinstance(e, Processed)
                  for o in range(e.first_offset, e.last_offset + 1))


def processed_count(events: list) -> int:
    return sum(e.count for e in events if isinstance(e, Processed))


def every_offset(count: int) -> list[tuple[int, int]]:
    return sorted((p, o) for p in range(PARTITIONS) for o in range(count // PARTITIONS))


def committed_ends(events: list) -> dict[int, int]:
    """Each partition's last successfully committed offset."""
    return {o.partition: o.offset for e in events if isinstance(e, Committed) and e.error is None
            for o in e.offsets}


def every_end(count: int) -> dict[int, int]:
    return {p: count // PARTITIONS for p in range(PARTITIONS)}


def assert_ends_with_a_clean_close(events: list, topic: str) -> None:
    assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"
    if events[0].client == "kafka-python" and events[0].client_version.startswith("2."):
        return  # kafka-python 2.x leaves at close() without calling the listener: no revoked
    revoked = [e for e in events if isinstance(e, Revoked)]
    assert revoked and {tp for e in revoked for tp in e.partitions} == {(topic, p) for p in range(PARTITIONS)}
    last_processed = max(i for i, e in enumerate(events) if isinstance(e, Processed))
    assert last_processed < events.index(revoked[-1])  # processed records are written before the revoke


def test_confluent_poll_loop_with_manual_commits(kafka_cluster, topic_factory, start_program) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    program = start_program("confluent_manual_commit.py", topic)
    program.wait_for(f"{RECORDS} records processed", lambda ev: processed_count(ev) >= RECORDS)
    assert program.stop() == 0

    events = program.events()
    started = events[0]
    assert isinstance(started, Started) and started.client == "confluent-kafka"
    assert (started.group_id, started.topics, started.commit_mode) == (program.group, [topic], "manual")
    assert (started.assignors, started.rebalance_protocol) == (["range", "roundrobin"], "eager")
    assert (started.session_timeout_ms, started.max_poll_interval_ms, started.heartbeat_interval_ms) == (
        10000, 300000, 3000)
    assert started.spec == "app" and started.command == program.command and started.pid == program.proc.pid
    assert started.settings["enable.auto.commit"] is False and started.model_extra["instrumented"] is True
    assert {tp for e in events if isinstance(e, Assigned) for tp in e.partitions} == {
        (topic, p) for p in range(PARTITIONS)}
    assert all(e.model_extra["kafka_member_id"] for e in events if isinstance(e, Assigned))
    assert processed_offsets(events) == every_offset(RECORDS)  # each exactly once
    assert all(e.produce_ts_min_ms > 1_600_000_000_000 for e in events if isinstance(e, Processed))
    commits = [e for e in events if isinstance(e, Committed)]
    assert commits and all(c.error is None and c.trigger in ("batch", "revoke") for c in commits)
    assert {(o.partition, o.offset) for c in commits for o in c.offsets} >= {
        (p, RECORDS // PARTITIONS) for p in range(PARTITIONS)}  # everything committed by the end
    assert_ends_with_a_clean_close(events, topic)


def test_kafka_python_iteration_with_auto_commit(kafka_cluster, topic_factory, start_program) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    program = start_program("kafka_python_auto_commit.py", topic)
    program.wait_for(f"{RECORDS} records processed and an auto-commit",
                     lambda ev: processed_count(ev) >= RECORDS and any(isinstance(e, Committed) for e in ev))
    assert program.stop() == 0

    events = program.events()
    started = events[0]
    assert isinstance(started, Started) and started.client == "kafka-python"
    assert (started.group_id, started.topics, started.commit_mode) == (program.group, [topic], "auto")
    assert started.rebalance_protocol == "eager" and started.model_extra["listener_thread"] in ("io", "poll")
    assigned = [e for e in events if isinstance(e, Assigned)]
    assert assigned and assigned[0].generation is not None and assigned[0].model_extra["kafka_member_id"]
    assert processed_offsets(events) == every_offset(RECORDS)
    commits = [e for e in events if isinstance(e, Committed)]
    assert all(c.trigger == "auto" for c in commits) and any(c.offsets for c in commits)
    assert_ends_with_a_clean_close(events, topic)


def test_a_program_that_marks_its_records_counts_only_those(kafka_cluster, topic_factory, start_program) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    skip_every = 7
    written = [(p, o) for p, o in every_offset(RECORDS) if o % skip_every != skip_every - 1]
    program = start_program("confluent_marks_processed.py", topic, SKIP_EVERY=str(skip_every))
    program.wait_for(f"{len(written)} marked records processed, their commits answered",
                     lambda ev: processed_count(ev) >= len(written) and any(isinstance(e, Committed) for e in ev))
    assert program.stop() == 0

    events = program.events()
    assert processed_offsets(events) == written  # what it skipped is not processed, what it wrote is, once
    commits = [e for e in events if isinstance(e, Committed)]
    assert commits and all(c.trigger == "batch" for c in commits)
    assert_ends_with_a_clean_close(events, topic)


def test_sigusr1_stalls_processing_and_sigusr2_resumes_it(kafka_cluster, topic_factory, start_program) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, 6)
    program = start_program("confluent_manual_commit.py", topic, DESERIALIZING="1")  # DeserializingConsumer
    program.wait_for("the first records processed", lambda ev: processed_count(ev) >= 6)

    os.killpg(program.proc.pid, signal.SIGUSR1)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS - 6, first_key=6)
    held_from = time.monotonic()
    wait_until(lambda: time.monotonic() - held_from >= STALL_HOLD_S, timeout_s=STALL_HOLD_S + 5,
               what="the stall's hold")
    assert processed_count(program.events()) == 6
    resumed_ms = time.time_ns() // 1_000_000
    os.killpg(program.proc.pid, signal.SIGUSR2)
    program.wait_for(f"{RECORDS} records processed after the stall", lambda ev: processed_count(ev) >= RECORDS)
    assert program.stop() == 0

    events = program.events()
    late = [e for e in events if isinstance(e, Processed) and e.last_offset >= 2]
    assert late and min(e.ts_ms for e in late) >= resumed_ms
    assert processed_offsets(events) == every_offset(RECORDS)


@pytest.mark.parametrize("iterate", [False, True], ids=["getmany-commit-per-batch", "async-for-auto-commit"])
def test_aiokafka_service(kafka_cluster, topic_factory, start_program, iterate: bool) -> None:
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    program = start_program("aiokafka_service.py", topic, ITERATE="1" if iterate else "0")
    program.wait_for(f"{RECORDS} records processed and a commit",
                     lambda ev: processed_count(ev) >= RECORDS and any(isinstance(e, Committed) and e.offsets
                                                                        for e in ev))
    assert program.stop() == 0

    events = program.events()
    started = events[0]
    assert isinstance(started, Started) and started.client == "aiokafka"
    assert (started.group_id, started.topics) == (program.group, [topic])
    assert started.commit_mode == ("auto" if iterate else "manual")
    assert started.rebalance_protocol == "eager" and started.model_extra["listener_thread"] == "event_loop"
    assert started.session_timeout_ms == 10_000  # aiokafka's own default
    assigned = [e for e in events if isinstance(e, Assigned)]
    assert assigned and assigned[0].generation is not None and assigned[0].model_extra["kafka_member_id"]
    assert processed_offsets(events) == every_offset(RECORDS)
    commits = [e for e in events if isinstance(e, Committed) and e.offsets]
    assert commits and {c.trigger for c in commits} == ({"auto"} if iterate else {"batch"})
    # every processed record's offset committed by the end (the last commit of each partition covers it)
    assert committed_ends(events) == every_end(RECORDS)
    # aiokafka's stop() leaves without calling the listener: no revoked, a clean stop
    assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"


def test_a_faststream_service_runs_unchanged(kafka_cluster, topic_factory, start_program) -> None:
    """FastStream builds its consumer from aiokafka.AIOKafkaConsumer at connect time, after the instrumentation
    replaced it: the service's history is the aiokafka member's, with nothing of testbed in the service."""
    topic = topic_factory(partitions=PARTITIONS)
    produce(kafka_cluster.bootstrap_servers, topic, RECORDS)
    program = start_program("faststream_service.py", topic)
    program.wait_for(f"{RECORDS} records processed and an auto-commit of them all",
                     lambda ev: processed_count(ev) >= RECORDS and committed_ends(ev) == every_end(RECORDS))
    assert program.stop() == 0

    events = program.events()
    started = events[0]
    assert isinstance(started, Started) and started.client == "aiokafka"
    assert (started.group_id, started.topics, started.commit_mode) == (program.group, [topic], "auto")
    assert [e for e in events if isinstance(e, Assigned)]
    assert processed_offsets(events) == every_offset(RECORDS)
    assert {c.trigger for c in events if isinstance(c, Committed) and c.offsets} == {"auto"}
    assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"
