"""Effective timeouts in the started event, the monotonic stamp, and the Java runner's started at startup_complete."""

from __future__ import annotations

import json
import os
import signal
import stat
import time
from pathlib import Path

import pytest

from testbed.history.events import Assigned, ClientError, Started, Stopped, parse_event
from testbed.history.writer import read_events
from testbed.members.java import member as java_runner
from testbed.members.config import MemberConfig
from testbed.members.defaults import (
    BROKER_CONSUMER_SESSION_TIMEOUT_MS,
    broker_consumer_session_timeout_ms,
    default_timeouts,
    effective_timeouts,
)
from testbed.members.runtime import MemberHistory
from testbed.members.spec import MemberSpec
from testbed.members.java.verifiable import startup_complete_ts

# ---- the defaults table ------------------------------------------------------------------------


@pytest.mark.parametrize("client, version, expected", [
    ("confluent-kafka", "2.3.0", (45000, 300000)),
    ("confluent-kafka", None, (45000, 300000)),
    ("kafka-python", "2.0.2", (10000, 300000)),
    ("kafka-python", "2.3.3", (10000, 300000)),
    ("kafka-python", "3.0.12", (45000, 300000)),
    ("kafka-python", None, (45000, 300000)),  # the project venv's kafka-python is 3.x
    ("java", "3.9.1", (30000, 300000)),  # VerifiableConsumer 3.9's own --session-timeout default
    ("java", "4.0.0", (45000, 300000)),
    ("java", "4.1.1", (45000, 300000)),
    ("java", None, (45000, 300000)),  # DEFAULT_JAVA_VERSION
])
def test_client_defaults(client: str, version: str | None, expected: tuple[int, int]) -> None:
    assert default_timeouts(client, version) == expected


def test_the_spec_value_wins_under_the_classic_protocol() -> None:
    spec = MemberSpec(client="kafka-python", client_version="2.3.3", session_timeout_ms=6000)
    assert effective_timeouts(spec) == (6000, 300000)
    java = MemberSpec(client="java", client_version="3.9.1", session_timeout_ms=7000)
    assert effective_timeouts(java) == (7000, 300000)


def test_the_running_version_beats_the_spec_version() -> None:
    spec = MemberSpec(client="kafka-python")
    assert effective_timeouts(spec, client_version="2.3.3") == (10000, 300000)


def test_the_consumer_protocol_session_timeout_is_the_brokers_or_unknown() -> None:
    spec = MemberSpec(client="confluent-kafka", group_protocol="consumer", remote_assignor="uniform")
    assert effective_timeouts(spec) == (None, 300000)
    assert effective_timeouts(spec, broker_session_timeout_ms=20000) == (20000, 300000)
    # java ignores a spec session timeout under 'consumer' (the runner does not pass it)
    java = MemberSpec(client="java", group_protocol="consumer", session_timeout_ms=6000)
    assert effective_timeouts(java, broker_session_timeout_ms=45000) == (45000, 300000)


def test_broker_session_timeout_of_a_testbed_cluster() -> None:
    assert broker_consumer_session_timeout_ms({}) == BROKER_CONSUMER_SESSION_TIMEOUT_MS == 45000
    assert broker_consumer_session_timeout_ms(None) == 45000
    assert broker_consumer_session_timeout_ms({"group.consumer.session.timeout.ms": "12000"}) == 12000


# ---- the started event and the monotonic stamp ---------------------------------------------------


def config_for(tmp_path: Path, spec: MemberSpec, **extra: object) -> MemberConfig:
    return MemberConfig(member_id="m0", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1", spec=spec,
                        history_path=tmp_path / "m0.jsonl", **extra)


def test_started_carries_the_effective_timeouts(tmp_path: Path) -> None:
    history = MemberHistory(config_for(tmp_path, MemberSpec(client="confluent-kafka")))
    history.started("2.3.0")
    history.close()
    (event,) = read_events(tmp_path / "m0.jsonl")
    assert isinstance(event, Started)
    assert (event.session_timeout_ms, event.max_poll_interval_ms) == (45000, 300000)


def test_started_of_a_consumer_protocol_member_takes_the_brokers_value(tmp_path: Path) -> None:
    spec = MemberSpec(client="confluent-kafka", group_protocol="consumer")
    history = MemberHistory(config_for(tmp_path, spec, broker_session_timeout_ms=15000))
    history.started("2.16.1")
    history.close()
    (event,) = read_events(tmp_path / "m0.jsonl")
    assert (event.session_timeout_ms, event.max_poll_interval_ms) == (15000, 300000)


def test_started_takes_values_read_back_from_the_client_and_a_given_time(tmp_path: Path) -> None:
    history = MemberHistory(config_for(tmp_path, MemberSpec(client="kafka-python")))
    history.started("3.0.12", session_timeout_ms=30000, max_poll_interval_ms=1000, ts_ms=1234, listener_thread="io")
    history.close()
    (event,) = read_events(tmp_path / "m0.jsonl")
    assert (event.session_timeout_ms, event.max_poll_interval_ms, event.ts_ms) == (30000, 1000, 1234)
    assert event.model_extra == {"listener_thread": "io"}


def test_every_event_gets_a_monotonic_stamp_of_this_machine() -> None:
    before = time.monotonic_ns() // 1_000_000
    event = Stopped(source="m0", reason="clean")
    after = time.monotonic_ns() // 1_000_000
    assert before <= event.mono_ms <= after
    # written and read back: kept
    assert parse_event(event.model_dump(mode="json")).mono_ms == event.mono_ms


def test_an_older_history_without_mono_ms_reads_as_unknown_not_as_now() -> None:
    old = {"name": "stopped", "ts_ms": 5, "source": "m0", "reason": "clean"}
    assert parse_event(old).mono_ms is None
    assert parse_event({"name": "from_the_future", "ts_ms": 5, "source": "m0"}).mono_ms is None


# ---- Java: started at startup_complete ------------------------------------------------------------


def test_startup_complete_line() -> None:
    assert startup_complete_ts('{"name":"startup_complete","timestamp":1700000000123}') == (True, 1700000000123)
    assert startup_complete_ts('{"name":"startup_complete"}') == (True, None)
    assert startup_complete_ts('{"name":"partitions_assigned","timestamp":1}') == (False, None)
    assert startup_complete_ts("SLF4J: noise") == (False, None)


@pytest.fixture
def fake_java(tmp_path: Path, monkeypatch):
    """A 'java' on PATH that prints what the test says, instead of running VerifiableConsumer."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(java_runner, "java_member_classpath", lambda version: "unused")
    monkeypatch.setattr(java_runner, "java_log_config", lambda version: tmp_path / "log4j2.properties")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}

    def write(lines: list[str], exit_code: int) -> None:
        body = "".join(f"echo {json.dumps(line)}\n" for line in lines)
        script = bin_dir / "java"
        script.write_text(f"#!/bin/sh\n{body}exit {exit_code}\n")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)

    yield write
    for sig, handler in handlers.items():  # run() installs its own; the test process keeps pytest's
        signal.signal(sig, handler)


def test_java_started_is_written_at_startup_complete_with_its_timestamp(tmp_path: Path, fake_java) -> None:
    fake_java([
        "SLF4J: some JVM noise",
        json.dumps({"name": "startup_complete", "timestamp": 1000}),
        json.dumps({"name": "partitions_assigned", "timestamp": 1100, "partitions": [{"topic": "t", "partition": 0}]}),
        json.dumps({"name": "shutdown_complete", "timestamp": 1200}),
    ], exit_code=0)
    config = config_for(tmp_path, MemberSpec(client="java", client_version="4.1.1"))
    assert java_runner.run(config) == 0
    started, assigned, stopped = read_events(config.history_path)
    assert isinstance(started, Started) and started.ts_ms == 1000 and started.model_extra["jvm_pid"] > 0
    assert (started.session_timeout_ms, started.max_poll_interval_ms) == (45000, 300000)
    assert isinstance(assigned, Assigned) and assigned.ts_ms == 1100
    assert isinstance(stopped, Stopped) and stopped.reason == "clean"
    assert started.mono_ms <= assigned.mono_ms <= stopped.mono_ms


def test_java_that_dies_before_startup_complete_still_writes_started_first(tmp_path: Path, fake_java) -> None:
    fake_java(["Error: Could not find or load main class"], exit_code=1)
    config = config_for(tmp_path, MemberSpec(client="java", client_version="3.9.1", session_timeout_ms=6000))
    before = time.time_ns() // 1_000_000
    assert java_runner.run(config) == 1
    started, error, stopped = read_events(config.history_path)
    assert isinstance(started, Started) and started.ts_ms >= before and started.session_timeout_ms == 6000
    assert isinstance(error, ClientError) and error.code == "JVM_EXIT" and "could not find" in error.message.lower()
    assert isinstance(stopped, Stopped) and stopped.reason == "error"
