"""A spec's client_config and handler checked by the real client libraries, no broker (testbed.members.preflight,
testbed.members.member_checks): each check is a child process of a few tenths of a second (the Java one compiles
its class once per kafka-clients version, then takes about as long as a JVM start).

The messages are the clients' own: librdkafka's, kafka-python's constructor's, kafka-clients' ConfigException's.
"""

from __future__ import annotations

import shutil
import sys
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testbed.errors import ConfigError
from testbed.members import member_checks
from testbed.members.envs import EnvBuildError, java_classpath, java_dir, python_for
from testbed.members.member_checks import check_member, describe, needs_check
from testbed.members.preflight import find_errors
from testbed.members.spec import DEFAULT_JAVA_VERSION, MemberSpec
from testbed.scenario.loader import check_members, expand


@pytest.fixture(autouse=True)
def fresh_checks() -> None:
    member_checks._checked.clear()


def spec(client: str = "confluent-kafka", **fields: Any) -> MemberSpec:
    return MemberSpec(name="app", client=client, **fields)


# ---- the parts without a child -----------------------------------------------------------------------------


def test_each_problem_is_put_on_the_key_it_is_about() -> None:
    def construct(settings: dict[str, Any]) -> str | None:
        if "bad" in settings:
            return "no such property: bad"
        if settings.get("heartbeat", 0) > settings["session"]:
            return "heartbeat must be below the session"  # names no key: found by taking keys out
        return None

    errors = find_errors(construct, {"session": 10, "heartbeat": 20, "bad": 1, "fine": 1}, ["fine", "heartbeat", "bad"])
    assert errors == [{"key": "bad", "message": "no such property: bad"},
                      {"key": "heartbeat", "message": "heartbeat must be below the session"}]


def test_a_problem_of_testbeds_own_settings_is_reported_once_without_a_key() -> None:
    errors = find_errors(lambda settings: "broken", {"a": 1}, ["a"])
    assert errors == [{"key": None, "message": "broken"}]


def test_answers_become_field_paths() -> None:
    answer = {"errors": [{"key": "fetch.min.bytes", "message": "Invalid value"}, {"key": None, "message": "both"}],
              "handler": "ModuleNotFoundError: No module named 'x'"}
    assert describe(spec(client_config={"fetch.min.bytes": 1}), answer) == [
        "members.app.client_config.fetch.min.bytes: Invalid value", "members.app.client_config: both",
        "members.app.handler: ModuleNotFoundError: No module named 'x'"]


def test_a_spec_with_nothing_to_check_starts_nothing(monkeypatch) -> None:
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a check was started"))
    assert check_member(spec(assignors=["range"])) == []
    command = MemberSpec(name="c", client="kafka-python", command=["python", "-m", "svc"])
    assert not needs_check(command) and check_member(command) == []


# ---- confluent-kafka and kafka-python in the project venv ------------------------------------------------------


def test_confluent_takes_good_settings() -> None:
    assert check_member(spec(client_config={"fetch.min.bytes": 1024, "statistics.interval.ms": 0,
                                            "enable.partition.eof": False})) == []


def test_confluent_refuses_an_unknown_key_and_a_bad_value_in_its_own_words() -> None:
    lines = check_member(spec(client_config={"fetch.min.bytes": "lots", "fetch.wait.max.msec": 100}))
    assert lines == ['members.app.client_config.fetch.min.bytes: Invalid value for configuration property '
                     '"fetch.min.bytes"',
                     'members.app.client_config.fetch.wait.max.msec: No such configuration property: '
                     '"fetch.wait.max.msec"']


def test_a_confluent_share_consumer_refuses_a_consumer_group_setting() -> None:
    lines = check_member(spec(group_protocol="share", client_config={"enable.auto.commit": False}))
    assert lines == ["members.app.client_config.enable.auto.commit: Failed to create share consumer: "
                     "`enable.auto.commit` is not applicable for share consumer"]


def test_kafka_python_takes_good_settings_and_refuses_bad_ones() -> None:
    assert check_member(spec("kafka-python", assignors=["range"], client_config={"fetch_min_bytes": 1024})) == []
    lines = check_member(spec("kafka-python", client_config={"fetch_min_byte": 1, "heartbeat_interval_ms": 60000}))
    assert lines == [
        "members.app.client_config.fetch_min_byte: KafkaConfigurationError: Unrecognized configs: {'fetch_min_byte'}",
        "members.app.client_config.heartbeat_interval_ms: KafkaConfigurationError: Heartbeat interval must be lower "
        "than the session timeout (60000 v 45000)"]


def test_the_handler_must_import_where_the_member_runs(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "handlers").mkdir()
    (tmp_path / "handlers" / "mine.py").write_text("print('imported')\ndef handle(batch):\n    pass\nLIMIT = 3\n")
    monkeypatch.chdir(tmp_path)  # handler_path is relative to where testbed runs
    assert check_member(spec("kafka-python", handler="mine:handle", handler_path="handlers")) == []
    assert check_member(spec(handler="mine:handle")) == [
        "members.app.handler: ModuleNotFoundError: No module named 'mine'"]
    assert check_member(spec(handler="mine:LIMIT", handler_path="handlers")) == [
        "members.app.handler: TypeError: 'mine:LIMIT' is a int, not callable"]


def test_validate_reports_every_refusal_of_a_scenario(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("""\
name: t
topics: [{name: events, partitions: 6}]
load: {topic: events, rate: 100}
members:
  a: {client: confluent-kafka, client_config: {fetch.min.bytes: lots}}
  b: {client: kafka-python, handler: "nowhere:handle"}
  c: {client: confluent-kafka}
fleet: [{spec: a, count: 1}, {spec: b, count: 1}, {spec: c, count: 1}]
""")
    with pytest.raises(ConfigError) as exc:
        check_members(path, expand(path))
    assert str(exc.value).splitlines() == [
        f"{path}: members refused before a run would start (2 error(s))",
        '  members.a.client_config.fetch.min.bytes: Invalid value for configuration property "fetch.min.bytes"',
        "  members.b.handler: ModuleNotFoundError: No module named 'nowhere'"]


def test_validate_makes_a_runs_checks_of_programs_and_versions(tmp_path: Path, monkeypatch, capsys) -> None:
    """What a run refuses before it starts, validate refuses too: a program whose interpreter is missing, a client
    version PyPI never had; --set reaches the checked runs."""
    from testbed import cli

    path = tmp_path / "s.yaml"
    path.write_text("""\
name: t
topics: [{name: events, partitions: 2}]
members:
  prog: {client: kafka-python, command: [/opt/nowhere/bin/python, app.py]}
  old: {client: confluent-kafka, client_version: "0.0.1"}
fleet: [{spec: prog, count: 1}, {spec: old, count: 1}]
""")
    monkeypatch.setattr(sys, "argv", ["testbed", "validate", str(path)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out = " ".join("".join(capsys.readouterr()).split())
    assert exit_.value.code == 1
    assert "members.prog.command: '/opt/nowhere/bin/python app.py' could not start" in out
    assert "members.old.client_version: confluent-kafka 0.0.1 does not exist on PyPI" in out
    monkeypatch.setattr(sys, "argv", ["testbed", "validate", str(path), "--set", "cluster.kafka_version=4.x"])
    with pytest.raises(SystemExit):
        cli.main()
    out = " ".join("".join(capsys.readouterr()).split())
    assert "cluster.kafka_version: must be a Kafka release number like 4.3.1" in out


@pytest.mark.integration  # builds kafka-python 2.3.3's installation from PyPI when the cache has none
def test_kafka_python_2_is_checked_in_its_own_version() -> None:
    python_for("kafka-python", "2.3.3")
    lines = check_member(spec("kafka-python", client_version="2.3.3", client_config={"heartbeat_interval_ms": 20000}))
    assert lines == ["members.app.client_config.heartbeat_interval_ms: KafkaConfigurationError: Heartbeat interval "
                     "must be lower than the session timeout (20000 v 10000)"]  # 2.x: a 10 s session by default


# ---- Java: kafka-clients' ConsumerConfig -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def java_ready() -> None:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not on PATH (install a JDK 17)")
    if not (java_dir(DEFAULT_JAVA_VERSION) / ".ready").exists() and shutil.which("mvn") is None:
        pytest.skip("no cached kafka-clients classpath and no mvn to fetch it (apt-get install -y maven)")
    try:
        java_classpath()
    except EnvBuildError as exc:
        pytest.skip(f"the kafka-clients classpath could not be fetched: {exc}")


def test_java_takes_good_settings_and_refuses_bad_ones(java_ready: None) -> None:
    assert check_member(spec("java", client_config={"fetch.min.bytes": 1024, "check.crcs": False})) == []
    lines = check_member(spec("java", client_config={"fetch.min.bytes": "lots", "fetch.min.byte": 1}))
    assert lines == [
        f"members.app.client_config.fetch.min.byte: Unknown configuration 'fetch.min.byte' (not a consumer setting of "
        f"kafka-clients {DEFAULT_JAVA_VERSION})",
        "members.app.client_config.fetch.min.bytes: Invalid value lots for configuration fetch.min.bytes: Not a "
        "number of type INT"]


def test_java_knows_what_the_protocol_forbids_and_what_a_seed_assignor_reads(java_ready: None) -> None:
    assert check_member(spec("java", group_protocol="consumer", client_config={"heartbeat.interval.ms": 1000})) == [
        "members.app.client_config.heartbeat.interval.ms: heartbeat.interval.ms cannot be set when "
        "group.protocol=CONSUMER"]
    assert check_member(spec("java", assignors=["testbed.assignors.FailoverAssignor"],
                             client_config={"assignment.consumer.priority": 3})) == []
    assert check_member(spec("java", group_protocol="share", client_config={"enable.auto.commit": False})) == [
        "members.app.client_config.enable.auto.commit: enable.auto.commit cannot be set when using a share group."]
