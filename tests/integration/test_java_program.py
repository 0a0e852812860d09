"""A JVM consumer program of the test's own, run unchanged under testbed's Java agent, counts as the VerifiableConsumer
runner does.

``programs/java/PlainConsumer.java`` is a plain ``KafkaConsumer`` loop as a team writes one (not a testbed runner),
compiled here with javac and started as ``java -cp ... PlainConsumer``: testbed attaches its agent through
``JAVA_TOOL_OPTIONS``. One shape on the session's brokers: three members on range (eager) under load, a rolling
bounce of all three, the drain. The members are the program: one instance that commits synchronously after each
batch and in its revoke callback, one that subscribes without a listener and commits asynchronously (the agent's
listener and callback stand in for the missing ones), one that leaves its commits to the client (auto-commit,
recorded at the classic coordinator). A clean bounce of such loops loses nothing and processes nothing twice: the
run must say so, and so must a recount of its raw history, which must also equal every count the analysis reported.
The same shape with testbed's Java runner (VerifiableConsumer, ``commit_mode: sync``) as the members must say the
same; that run is out of CI for time (about 35 s of JVMs): kip429-double-bounce and test_fleet_groups.py bounce
the runner on range in CI, and every scenario test recounts its run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from history_recount import jsonl, recount, reported

from testbed.history.events import Committed, Processed, Started, Stopped
from testbed.history.writer import read_events
from testbed.members.envs import java_classpath
from testbed.members.java.agent import kafka_clients_in, preflight
from testbed.members.spec import DEFAULT_JAVA_VERSION
from testbed.scenario.loader import load
from testbed.waits import wait_until

pytestmark = pytest.mark.integration

SOURCE = Path(__file__).parent / "programs" / "java" / "PlainConsumer.java"
SHAPE = """
name: {name}
topics: [{{name: events, partitions: 6}}]
load: {{topic: events, rate: 100, users: 2}}
members:
{members}
fleet: [{fleet}]
steps:
  - wait_stable: {{timeout_s: 90}}
  - wait: {{seconds: 3}}  # each first life processes before its bounce (a CI run bounced m0 before its first fetch)
  - rolling_bounce: {{interval_s: 1}}
  - drain: {{timeout_s: 60}}
expect:
  - lost_records == 0
  - duplicates_total == 0
"""
RUNNER = "  app: {client: java, assignors: [range], commit_mode: sync, session_timeout_ms: 10000}"
PROGRAM = ("  {name}: {{client: java, command: [java, -cp, '{classpath}', PlainConsumer], env: {{KAFKA_BOOTSTRAP: "
           "'{{bootstrap_servers}}', KAFKA_GROUP: '{{group_id}}', INPUT_TOPIC: '{{topic:events}}'{extra}}}}}")


@pytest.fixture(scope="module")
def program_classpath(tmp_path_factory) -> str:
    """The program compiled against kafka-clients (the project's Java version), as its team's build would."""
    kafka = java_classpath()
    classes = tmp_path_factory.mktemp("plain-consumer")
    subprocess.run(["javac", "-nowarn", "-cp", kafka, "-d", str(classes), str(SOURCE)], check=True)
    return f"{classes}:{kafka}"


def run_shape(name: str, members: str, fleet: str, run_scenario, cluster, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SHAPE.format(name=name, members=members, fleet=fleet))
    result = run_scenario(load(path), tmp_path / "reports", cluster=cluster)
    assert result.status == "pass", f"{name}: {result.status} {result.problems} {result.expectations}"
    return Path(result.run_dir)


def assert_clean_bounce(name: str, run: Path) -> None:
    """Nothing lost and nothing processed twice, by the analysis and by a recount of the raw history alike."""
    counts = recount(run)
    assert reported(run) == counts, f"{name}: the analysis against a recount of its history"
    assert counts["records_acked"] > 500, f"{name}: too little load to compare"
    assert counts["lost_records"] == counts["duplicates_total"] == counts["duplicate_records"] == 0, name


def test_a_jvm_program_under_the_agent_bounces_without_loss_or_duplicates(run_scenario, kafka_cluster,
                                                                         program_classpath, tmp_path: Path) -> None:
    program = "\n".join([
        PROGRAM.format(name="sync", classpath=program_classpath, extra=""),
        PROGRAM.format(name="bare", classpath=program_classpath, extra=", LISTENER: none, COMMIT: async"),
        PROGRAM.format(name="auto", classpath=program_classpath, extra=", AUTO_COMMIT: 'true'"),
    ])
    program_run = run_shape("java-program", program, "{spec: sync, count: 1}, {spec: bare, count: 1}, "
                            "{spec: auto, count: 1}", run_scenario, kafka_cluster, tmp_path)

    histories = {f.stem: jsonl(f) for f in sorted((program_run / "history" / "members").glob("*.jsonl"))}
    assert len(histories) == 6, sorted(histories)  # three first lives, three after the bounce
    for member, events in histories.items():
        names = [e["name"] for e in events]
        started = events[0]
        assert started["name"] == "started" and started["client"] == "java", f"{member}: {names[:5]}"
        assert started["instrumented"] and started["client_version"] == DEFAULT_JAVA_VERSION  # the classpath's
        assert started["commit_mode"] == ("auto" if started["spec"] == "auto" else "manual")
        # The client's default assignors, range first: the group rebalances eagerly.
        assert started["assignors"] == ["range", "cooperative-sticky"] and started["rebalance_protocol"] == "eager"
        assert started["session_timeout_ms"] == 10000 and started["group_protocol"] == "classic"
        assert "assigned" in names and "processed" in names, f"{member}: {names[:10]}"
        assert events[-1]["name"] == "stopped" and events[-1]["reason"] == "clean", f"{member} ends {names[-3:]}"
        assert not [e for e in events if e["name"] == "error"], f"{member}: {[e for e in events if e['name'] == 'error']}"
        commits = [e for e in events if e["name"] == "committed"]
        triggers = {c["trigger"] for c in commits}
        # A commit refused in a rebalance is recorded with its code (the program logs it and goes on: the records
        # come again); most go through.
        assert sum(c["error"] is None for c in commits) > len(commits) / 2, (member, commits)
        assert all(c["error"] is None or c["error"].isidentifier() for c in commits), (member, commits)
        if started["spec"] == "sync":
            assert "revoke" in triggers, f"{member}: its revoke callback commits"
        # The client's own commits (classic protocol: at polls, before a rebalance, at close) are the auto member's
        # only ones.
        assert (triggers == {"auto"}) if started["spec"] == "auto" else ("auto" not in triggers), (member, triggers)
    # The instance without a listener: the agent's listener recorded its partitions all the same, and its
    # asynchronous commits were recorded as they were answered.
    bare = [events for events in histories.values() if events[0]["spec"] == "bare"]
    assert bare and all(any(e["name"] == "revoked" for e in events) for events in bare)

    assert_clean_bounce("program", program_run)


@pytest.mark.full_matrix
def test_the_runner_in_the_same_shape_counts_the_same(run_scenario, kafka_cluster, tmp_path: Path) -> None:
    assert_clean_bounce("runner", run_shape("java-runner", RUNNER, "{spec: app, count: 3}", run_scenario,
                                            kafka_cluster, tmp_path))


def test_what_the_agent_cannot_run_is_refused_before_start(program_classpath, tmp_path: Path) -> None:
    """The preflight reads the program's java, its jar and the kafka-clients it carries without running it."""
    assert kafka_clients_in(Path(java_classpath().removesuffix("/*"))) is not None
    command = ["java", "-cp", program_classpath, "PlainConsumer"]
    assert preflight(command, None, {"PATH": "/usr/bin:/bin"}, None, (2, 5)) is None
    mismatch = preflight(command, None, {"PATH": "/usr/bin:/bin"}, "3.9.1", (2, 5))
    assert mismatch is not None and "client_version 3.9.1" in mismatch
    missing = preflight(["java", "-jar", "app.jar"], str(tmp_path), {"PATH": "/usr/bin:/bin"}, None, (2, 5))
    assert missing is not None and "app.jar: no such file" in missing
    assert "is not found" in (preflight(["no-such-launcher"], None, {"PATH": str(tmp_path)}, None, (2, 5)) or "")


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_testbed_instrument_runs_a_jvm_program_outside_a_scenario(kafka_cluster, topic_factory, program_classpath,
                                                                  tmp_path: Path, protocol: str) -> None:
    """``testbed instrument -- java ...``: the agent attached, every record processed once, a clean stop at SIGTERM
    (the JVM's shutdown hook wakes the loop, which closes). On the consumer protocol (KIP-848) the program
    auto-commits: the client makes those commits on its background thread, and at close through its own
    commitSync; the agent records them, the last one past every record."""
    topic = topic_factory(partitions=3)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    for i in range(300):
        producer.produce(topic, value=b'{"order": %d}' % i, partition=i % 3,
                         headers=[("ts", (time.time_ns() // 1_000_000).to_bytes(8, "big"))])
    assert producer.flush(30) == 0
    history = tmp_path / "program.jsonl"
    testbed = Path(sys.executable).with_name("testbed")
    env = {**os.environ, "KAFKA_BOOTSTRAP": kafka_cluster.bootstrap_servers, "KAFKA_GROUP": f"g-{topic}",
           "INPUT_TOPIC": topic, "GROUP_PROTOCOL": protocol, "AUTO_COMMIT": str(protocol == "consumer").lower()}
    log = tmp_path / "instrument.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(testbed), "instrument", "--history", str(history), "--", "java", "-cp",
                                 program_classpath, "PlainConsumer"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_until(lambda: history.exists() and sum(e.count for e in read_events(history)
                                                    if isinstance(e, Processed)) >= 300,
                   timeout_s=90, what="the program to process the 300 records",
                   diagnostics=lambda: log.read_text(errors="replace")[-2000:])
        if protocol == "consumer":  # the client's own commit at its interval (1 s), on its background thread
            wait_until(lambda: any(isinstance(e, Committed) for e in read_events(history)), timeout_s=30,
                       what="an auto-commit of the consumer protocol in the history",
                       diagnostics=lambda: log.read_text(errors="replace")[-2000:])
        else:  # the commit after the last batch: a SIGTERM during its commitSync wakes it (WakeupException, a CI run
            # of 2026-12-05), which the history rightly records as a failed commit
            wait_until(lambda: any(isinstance(e, Committed) and e.error is None and len(e.offsets) == 3
                                   and all(o.offset == 100 for o in e.offsets) for e in read_events(history)),
                       timeout_s=30, what="the program's commit past every record",
                       diagnostics=lambda: log.read_text(errors="replace")[-2000:])
        os.kill(proc.pid, signal.SIGTERM)  # testbed passes it on to the program's process group
        assert proc.wait(timeout=60) in (0, 128 + signal.SIGTERM), log.read_text(errors="replace")[-2000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    events = list(read_events(history))
    assert isinstance(events[0], Started) and events[0].client == "java" and events[0].command[0] == "java"
    offsets = sorted((e.partition, o) for e in events if isinstance(e, Processed)
                     for o in range(e.first_offset, e.last_offset + 1))
    assert offsets == sorted((p, o) for p in range(3) for o in range(100))
    assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"
    assert events[0].group_protocol == protocol, events[0]
    commits = [e for e in events if isinstance(e, Committed)]
    assert commits and all(c.error is None for c in commits), commits
    triggers = {c.trigger for c in commits}
    assert (triggers == {"auto"}) if protocol == "consumer" else ("auto" not in triggers), triggers
    assert len(commits) >= 2 or protocol == "classic", commits  # at its interval, and the one at close
    last = {(o.topic, o.partition): o.offset for c in commits for o in c.offsets}
    assert last == {(topic, p): 100 for p in range(3)}, last  # written in order: the last commit of each partition
