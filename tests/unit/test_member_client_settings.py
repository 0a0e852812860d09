"""A member's client settings: one builder per client family (testbed.members.client_settings), the settings testbed
owns refused with the field to use instead (testbed.members.owned_settings), and what ``started`` records.

The expected dicts below are what the runners built by hand before the builders (confluent.consumer_conf,
confluent_share.share_consumer_conf, KafkaPythonMember.__init__, java_host.consumer_properties,
java_share.share_consumer_properties): for the spec shapes that existed then, nothing changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from testbed.history.events import Started
from testbed.history.writer import read_events
from testbed.members.confluent_kafka import member as confluent_runner
from testbed.members.kafka_python import member as kafka_python_runner
from testbed.members.client_settings import (
    confluent_settings,
    java_settings,
    java_value,
    kafka_python_settings,
    properties_text,
)
from testbed.members.config import MemberConfig
from testbed.members.defaults import effective_heartbeat_interval_ms
from testbed.members.java.member import verifiable_consumer_args, verifiable_settings
from testbed.members.owned_settings import owned_settings
from testbed.members.runtime import MemberHistory
from testbed.members.spec import MemberSpec
from testbed.scenario.model import Scenario
from testbed.scenario.refusals import describe_errors

COOP = dict(assignors=["cooperative-sticky"], session_timeout_ms=6000, static=True, commit_mode="sync",
            max_poll_interval_ms=7000)


def config(tmp_path: Path, **spec: Any) -> MemberConfig:
    return MemberConfig(member_id="m3", slot=3, group_id="g", topics=["events"],
                        bootstrap_servers="127.0.0.1:9,127.0.0.1:10", spec=MemberSpec(name="app", **spec),
                        history_path=tmp_path / "m3.jsonl")


# ---- the builders: today's settings for today's specs ---------------------------------------------------------


def test_confluent_consumer_settings(tmp_path: Path) -> None:
    base = {"bootstrap.servers": "127.0.0.1:9,127.0.0.1:10", "group.id": "g", "client.id": "m3"}
    assert confluent_settings(config(tmp_path, client="confluent-kafka")) == {
        **base, "enable.auto.commit": True, "auto.offset.reset": "earliest"}
    assert confluent_settings(config(tmp_path, client="confluent-kafka", **COOP)) == {
        **base, "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 6000,
        "max.poll.interval.ms": 7000, "group.instance.id": "g-slot-3"}
    assert confluent_settings(config(tmp_path, client="confluent-kafka", group_protocol="consumer",
                                     remote_assignor="uniform", auto_offset_reset="latest")) == {
        **base, "enable.auto.commit": True, "auto.offset.reset": "latest", "group.protocol": "consumer",
        "group.remote.assignor": "uniform"}


def test_confluent_share_settings_have_their_own_keys(tmp_path: Path) -> None:
    spec = dict(client="confluent-kafka", group_protocol="share", share_acknowledgement="explicit",
                max_poll_records=50, max_poll_interval_ms=9000)
    assert confluent_settings(config(tmp_path, **spec)) == {
        "bootstrap.servers": "127.0.0.1:9,127.0.0.1:10", "group.id": "g", "client.id": "m3",
        "share.acknowledgement.mode": "explicit", "max.poll.records": 50, "max.poll.interval.ms": 9000}


def test_kafka_python_settings(tmp_path: Path) -> None:
    base = {"bootstrap_servers": ["127.0.0.1:9", "127.0.0.1:10"], "group_id": "g", "client_id": "m3",
            "max_poll_records": 500, "auto_offset_reset": "earliest"}
    assert kafka_python_settings(config(tmp_path, client="kafka-python")) == {**base, "enable_auto_commit": True}
    assert kafka_python_settings(config(tmp_path, client="kafka-python", **COOP)) == {
        **base, "enable_auto_commit": False, "partition_assignment_strategy": ["cooperative-sticky"],
        "session_timeout_ms": 6000, "max_poll_interval_ms": 7000, "group_instance_id": "g-slot-3"}


def test_java_settings(tmp_path: Path) -> None:
    base = {"bootstrap.servers": "127.0.0.1:9,127.0.0.1:10", "group.id": "g", "client.id": "m3",
            "enable.auto.commit": "true", "auto.offset.reset": "earliest", "max.poll.records": "500"}
    assert java_settings(config(tmp_path, client="java")) == base
    assert java_settings(config(tmp_path, client="java", assignors=["testbed.assignors.SlotPriorityFailoverAssignor"],
                                max_poll_interval_ms=70000)) == {
        **base, "partition.assignment.strategy": "testbed.assignors.SlotPriorityFailoverAssignor",
        "testbed.member.slot": "3", "max.poll.interval.ms": "70000"}
    assert java_settings(config(tmp_path, client="java", group_protocol="consumer", remote_assignor="range",
                                static=True)) == {
        **base, "group.protocol": "consumer", "group.remote.assignor": "range", "group.instance.id": "g-slot-3"}


def test_java_share_settings_carry_the_acknowledgement_mode(tmp_path: Path) -> None:
    # share_consumer_properties had no share.acknowledgement.mode: TestbedShareMember puts the same value itself
    assert java_settings(config(tmp_path, client="java", group_protocol="share", max_poll_records=7)) == {
        "bootstrap.servers": "127.0.0.1:9,127.0.0.1:10", "group.id": "g", "client.id": "m3",
        "share.acknowledgement.mode": "implicit", "max.poll.records": "7"}


def test_client_config_goes_on_top_as_given(tmp_path: Path) -> None:
    extra = {"fetch.min.bytes": 1024, "check.crcs": False, "fetch.wait.max.ms": "100", "socket.keepalive.enable": True}
    settings = confluent_settings(config(tmp_path, client="confluent-kafka", client_config=extra))
    assert {k: settings[k] for k in extra} == extra  # passed through: librdkafka takes ints and booleans
    kp = kafka_python_settings(config(tmp_path, client="kafka-python", client_config={"fetch_min_bytes": 1024,
                                                                                     "check_crcs": False}))
    assert kp["fetch_min_bytes"] == 1024 and kp["check_crcs"] is False
    java = java_settings(config(tmp_path, client="java", client_config={"fetch.min.bytes": 1024, "check.crcs": False,
                                                                       "heartbeat.interval.ms": 1500.0}))
    assert (java["fetch.min.bytes"], java["check.crcs"], java["heartbeat.interval.ms"]) == ("1024", "false", "1500.0")
    assert java_value(True) == "true" and java_value("True") == "True"  # only booleans are lowered


def test_the_kafka_python_runner_builds_its_consumer_from_the_settings(tmp_path: Path, monkeypatch) -> None:
    built: dict[str, Any] = {}
    monkeypatch.setattr(kafka_python_runner, "KafkaConsumer", lambda **kwargs: built.update(kwargs))
    cfg = config(tmp_path, client="kafka-python", **COOP, client_config={"fetch_min_bytes": 7})
    member = kafka_python_runner.KafkaPythonMember(cfg)
    assert member.settings == kafka_python_settings(cfg)
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

    assert built.pop("partition_assignment_strategy") == [CooperativeStickyAssignor]
    assert built.pop("default_offset_commit_callback") == member._on_auto_commit
    assert built == {k: v for k, v in member.settings.items() if k != "partition_assignment_strategy"}


def test_a_custom_assignor_is_given_the_members_settings_and_slot(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(kafka_python_runner, "KafkaConsumer", lambda **kwargs: None)
    cfg = config(tmp_path, client="kafka-python",
                 assignors=["testbed.assignors.kafka_python:SlotPriorityFailoverAssignor"],
                 client_config={"security_protocol": "PLAINTEXT"})
    given: list[dict[str, Any]] = []
    monkeypatch.setattr(kafka_python_runner, "build_assignor", lambda name, conf: given.append(conf))
    import testbed.assignors.kafka_python as adapters

    monkeypatch.setattr(adapters, "attach_to_consumer", lambda consumer: None)
    kafka_python_runner.KafkaPythonMember(cfg)
    (conf,) = given
    assert conf["testbed_member_slot"] == 3 and conf["security_protocol"] == "PLAINTEXT"
    assert conf["bootstrap_servers"] == ["127.0.0.1:9", "127.0.0.1:10"] and "partition_assignment_strategy" not in conf


def test_the_confluent_runner_adds_only_its_callbacks(tmp_path: Path, monkeypatch) -> None:
    built: dict[str, Any] = {}
    monkeypatch.setattr(confluent_runner, "Consumer", lambda conf: built.update(conf))
    member = confluent_runner.ConfluentMember(config(tmp_path, client="confluent-kafka",
                                                     client_config={"fetch.min.bytes": 7}))
    assert set(built) - set(member.settings) == {"error_cb", "on_commit"}
    assert {k: built[k] for k in member.settings} == member.settings


# ---- VerifiableConsumer: the settings in its file, only the flags it needs ----------------------------------


def test_verifiable_consumer_takes_the_settings_file_and_the_flags_it_would_override(tmp_path: Path) -> None:
    cfg = config(tmp_path, client="java", static=True, client_config={"fetch.min.bytes": 10})
    settings = verifiable_settings(cfg)
    # its --assignment-strategy default, written down so the started event says what the consumer runs
    assert settings["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.RangeAssignor"
    assert settings["fetch.min.bytes"] == "10" and "session.timeout.ms" not in settings  # 4.x: the client's default
    cfg = cfg.model_copy(update={"topics": ["events"]})
    args = verifiable_consumer_args(cfg, tmp_path / "p.properties")
    flags = dict(zip(args[::2], args[1::2]))
    assert flags["--bootstrap-server"] == "127.0.0.1:9,127.0.0.1:10" and flags["--group-id"] == "g"
    assert flags["--reset-policy"] == "earliest" and "--enable-autocommit" in args
    assert "--group-instance-id" not in args and "--session-timeout" not in args


def test_verifiable_consumer_3_9_always_sets_a_session_timeout(tmp_path: Path) -> None:
    cfg = config(tmp_path, client="java", client_version="3.9.1", group_protocol="consumer", remote_assignor="uniform")
    settings = verifiable_settings(cfg)
    assert settings["session.timeout.ms"] == "30000" and "partition.assignment.strategy" not in settings
    args = verifiable_consumer_args(cfg, tmp_path / "p.properties")
    assert args[args.index("--group-protocol") + 1] == "consumer" and "--group-remote-assignor" not in args
    assert args[args.index("--session-timeout") + 1] == "30000"


def test_properties_text_escapes_what_properties_load_would_change() -> None:
    text = properties_text({"a b": "x=y", "p": "C:\\dir", "e": "é", "sp": " lead", "nl": "a\nb", "#k": "v"})
    assert text.splitlines() == ["a\\ b=x=y", "p=C:\\\\dir", "e=\\u00e9", "sp=\\ lead", "nl=a\\nb", "\\#k=v"]


# ---- owned settings: refused before anything starts, with the field to use ------------------------------------


def refusal(**spec: Any) -> str:
    with pytest.raises(ValidationError) as exc:
        MemberSpec(**spec)
    return str(exc.value)


@pytest.mark.parametrize("client, key, field", [
    ("confluent-kafka", "group.id", "group_id"),
    ("confluent-kafka", "metadata.broker.list", "cluster"),
    ("confluent-kafka", "enable.auto.commit", "commit_mode"),
    ("confluent-kafka", "partition.assignment.strategy", "assignors"),
    ("confluent-kafka", "group.instance.id", "static"),
    ("confluent-kafka", "max.poll.records", "max_poll_records"),
    ("confluent-kafka", "error_cb", "callbacks"),
    ("kafka-python", "bootstrap_servers", "cluster"),
    ("kafka-python", "max_poll_records", "max_poll_records"),
    ("kafka-python", "session_timeout_ms", "session_timeout_ms"),
    ("kafka-python", "default_offset_commit_callback", "callbacks"),
    ("java", "max.poll.records", "max_poll_records"),
    ("java", "group.protocol", "group_protocol"),
    ("java", "testbed.member.slot", "slot"),
    ("java", "key.deserializer", "deserializers"),
])
def test_an_owned_setting_is_refused_naming_the_field_to_use(client: str, key: str, field: str) -> None:
    message = refusal(client=client, client_config={key: "x"})
    assert f"client_config.{key}: set by testbed (" in message and field in message


def test_share_members_own_their_acknowledgement_mode_and_leave_group_keys_to_the_client() -> None:
    message = refusal(client="confluent-kafka", group_protocol="share",
                      client_config={"share.acknowledgement.mode": "explicit"})
    assert "client_config.share.acknowledgement.mode: set by testbed (share_acknowledgement)" in message
    # a consumer-group setting a share consumer has not: the client's own refusal (the preflight)
    assert "enable.auto.commit" not in owned_settings("confluent-kafka", share=True)
    assert "share.acknowledgement.mode" in owned_settings("java", share=True)


def test_every_owned_key_is_refused_on_its_own_line() -> None:
    message = refusal(client="kafka-python", client_config={"group_id": "x", "fetch_min_bytes": 1, "client_id": "y"})
    lines = [line for line in message.splitlines() if "client_config." in line]
    assert len(lines) == 2 and "group_id" in lines[0] and "client_id" in lines[1]


def test_settings_testbed_does_not_own_pass() -> None:
    spec = MemberSpec(client="java", client_config={"heartbeat.interval.ms": 1000, "fetch.min.bytes": 1})
    assert spec.client_config == {"heartbeat.interval.ms": 1000, "fetch.min.bytes": 1}


SCENARIO = {"name": "t", "topics": [{"name": "events", "partitions": 6}], "load": {"topic": "events", "rate": 100},
            "fleet": [{"spec": "app", "count": 1}], "steps": []}


def scenario_errors(members: dict[str, Any]) -> list[str]:
    with pytest.raises(ValidationError) as exc:
        Scenario.model_validate({**SCENARIO, "members": members})
    return describe_errors(exc.value, Scenario)


def test_a_scenario_refusal_reads_as_a_field_path() -> None:
    app = {"client": "confluent-kafka", "client_config": {"group.id": "x", "client.id": "y"}}
    lines = scenario_errors({"app": app})
    assert lines[0] == ("members.app.client_config.group.id: set by testbed (the run's group); use the scenario's "
                        "group_id")
    assert lines[1].startswith("members.app.client_config.client.id: set by testbed (the member's name)")


def test_every_spec_error_reads_members_spec_field() -> None:
    lines = scenario_errors({"app": {"client": "confluent-kafka", "assignors": ["bogus"]},
                             "j": {"client": "java", "commit_mode": "on_revoke"},
                             "h": {"client": "kafka-python", "handler_path": "x"}})
    assert any(line.startswith("members.app.assignors: unknown assignor 'bogus'") for line in lines), lines
    assert any(line.startswith("members.j.commit_mode: VerifiableConsumer commits") for line in lines), lines
    assert any(line.startswith("members.h.handler_path, on_handler_error: only with a handler") for line in lines)


# ---- started: the settings and the heartbeat interval -------------------------------------------------------


def started(tmp_path: Path, cfg: MemberConfig, **kwargs: Any) -> Started:
    history = MemberHistory(cfg)
    history.started("x", **kwargs)
    history.close()
    (event,) = read_events(cfg.history_path)
    assert isinstance(event, Started)
    return event


def test_started_records_the_settings_and_the_heartbeat_interval(tmp_path: Path) -> None:
    cfg = config(tmp_path, client="confluent-kafka", client_config={"heartbeat.interval.ms": 1500})
    event = started(tmp_path, cfg, settings=confluent_settings(cfg))
    assert event.settings == confluent_settings(cfg) and event.heartbeat_interval_ms == 1500
    cfg = config(tmp_path / "j", client="java")
    (tmp_path / "j").mkdir()
    event = started(tmp_path, cfg, settings=java_settings(cfg))
    assert event.settings["client.id"] == "m3" and event.heartbeat_interval_ms == 3000


@pytest.mark.parametrize("spec, settings, broker, expected", [
    (dict(client="confluent-kafka"), {}, None, 3000),
    (dict(client="kafka-python"), {"heartbeat_interval_ms": 1000}, None, 1000),
    (dict(client="java"), {"heartbeat.interval.ms": "2500"}, None, 2500),
    (dict(client="java"), {"heartbeat.interval.ms": "soon"}, None, None),  # the client would refuse it
    (dict(client="confluent-kafka", group_protocol="consumer"), {}, 4000, 4000),  # the broker's
    (dict(client="confluent-kafka", group_protocol="consumer"), {}, None, None),  # the broker's, not known
    (dict(client="java", group_protocol="share"), {}, 4000, None),  # the share group's
])
def test_effective_heartbeat_interval(spec: dict[str, Any], settings: dict[str, Any], broker: int | None,
                                      expected: int | None) -> None:
    spec_ = MemberSpec(**spec)
    assert effective_heartbeat_interval_ms(spec_, settings, broker_heartbeat_interval_ms=broker) == expected
