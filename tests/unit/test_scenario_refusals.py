"""Scenario files written wrong the way people write them: each is refused, before anything starts, with one
message that names the file, the field path and what is allowed, and never with a traceback."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from testbed import cli
from testbed.errors import ConfigError
from testbed.scenario.loader import expand
from testbed.scenario.model import Scenario

HEAD = """\
name: t
topics:
  - {name: events, partitions: 6}
load: {topic: events, rate: 100}
members:
  main: {client: confluent-kafka, assignors: [range]}
fleet:
  - {spec: main, count: 4}
"""
STEPS = HEAD + "steps:\n"

# name -> (file content, pieces the message must hold besides the file's path)
MALFORMED: dict[str, tuple[str | bytes, list[str]]] = {
    "member the fleet never has": (STEPS + "  - pause: {member: m9}\n",
                                   ["steps.0.pause.member", "'m9'", "m0, m1, m2, m3"]),
    "options not indented under the step": (STEPS + "  - kill:\n    member: m1\n",
                                            ["steps.0", "kill, member", "indented", "- pause: {member: m1"]),
    "step written as one string": (STEPS + "  - kill m1\n", ["steps.0", "'kill m1'", "- kill: {...}", "'drain'"]),
    "options that are not a mapping": (STEPS + "  - wait: 5\n", ["steps.0", "options of 'wait'", "got the value 5"]),
    "unknown step kind": (STEPS + "  - explode: {}\n", ["steps.0", "unknown step 'explode'", "'rolling_bounce'"]),
    "misspelled option": (STEPS + "  - wait: {secnds: 5}\n",
                          ["steps.0.wait.secnds", "did you mean 'seconds'", "allowed fields: seconds"]),
    "duration with a unit": (STEPS + "  - wait: {seconds: 10 seconds}\n",
                             ["steps.0.wait.seconds", "valid number", "'10 seconds'"]),
    "negative duration": (STEPS + "  - wait_stable: {timeout_s: -5}\n",
                          ["steps.0.wait_stable.timeout_s", "greater than 0", "got -5"]),
    "endless timeout": (STEPS + "  - wait_stable: {timeout_s: .inf}\n",
                        ["steps.0.wait_stable.timeout_s", "finite number", "got inf"]),
    "duration that is not a number": (STEPS + "  - pause: {member: m0, seconds: .nan}\n",
                                      ["steps.0.pause.seconds", "finite number", "got nan"]),
    "tabs": (STEPS + "\t- drain\n", [":10:1:", "not valid YAML", "spaces, not tabs"]),
    "empty file": ("", ["is empty", "name, topics, members, fleet"]),
    "two documents": (HEAD + "---\nname: u\n", [":9:1:", "single document", "remove the '---' line"]),
    "duplicate key": (HEAD + "name: again\n", [":9:1:", "'name' is given twice", "first on line 1"]),
    "unknown metric": (HEAD + "expect: [lost_recordz == 0]\n",
                       ["expect.0.metric", "did you mean 'lost_records'", "duplicates_total"]),
    "bad operator": (HEAD + "expect: [lost_records = 0]\n", ["expect.0", "<metric> <op> <number>", "==, !="]),
    "matrix over a field that does not exist": (HEAD + "matrix: {load.rat: [1, 2]}\n",
                                                ["matrix point 0 (load.rat=1)", "load.rat: unknown field",
                                                 "did you mean 'rate'", "key_distribution"]),
    "matrix into a list the file lacks": (HEAD + "matrix: {steps.4.seconds: [1, 2]}\n",
                                          ["matrix key steps.4.seconds", "steps is not in the file"]),
    "number where text is expected": (HEAD + "cluster: {kafka_version: 3.9}\n",
                                      ["cluster.kafka_version", "must be text", "'3.9'"]),
    "list where a mapping is expected": (HEAD + "cluster:\n  - brokers: 3\n",
                                         ["cluster: must be a mapping", "brokers, kafka_version", "got a list"]),
    "mapping where a list is expected": (HEAD.replace("  - {spec: main, count: 4}", "  spec: main\n  count: 4"),
                                         ["fleet: must be a list", "got a mapping"]),
    "scale-in past the running members": (STEPS + "  - kill: {member: m0}\n  - scale_in: {count: 4}\n",
                                          ["steps.1.scale_in.count", "3 running member"]),
    "binary file": (bytes(range(256)), ["not UTF-8 text", "offset 128"]),
    "Latin-1 text": ("name: café\n".encode("latin-1"), ["not UTF-8 text (byte 0xe9"]),
    "a list, not a scenario": ("- name: t\n", ["a scenario is a mapping", "got a list"]),
    "a Java member of its own process on two topics": (
        HEAD.replace("partitions: 6}", "partitions: 6}\n  - {name: more, partitions: 6}")
        .replace("members:\n", "members:\n  j: {client: java, assignors: [range]}\n")
        + "steps:\n  - rolling_bounce: {to: j}\n",
        ["steps.0.rolling_bounce.to", "'j'", "exactly one topic", "events, more", "members_per_process > 1"]),
    "the load on a topic the group does not read": (
        HEAD.replace("partitions: 6}", "partitions: 6, consumed: false}\n  - {name: other, partitions: 6}"),
        ["load.topic", "'events' is consumed: false", "consumed topics: other"]),
    "no topic the group reads": (HEAD.replace("partitions: 6}", "partitions: 6, consumed: false}"),
                                 ["topics: every topic is consumed: false", "the group reads at least one"]),
}


def write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "s.yaml"
    (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)
    return path


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_file_is_refused_naming_file_field_and_allowed_values(tmp_path: Path, name: str) -> None:
    content, pieces = MALFORMED[name]
    with pytest.raises(ConfigError) as exc:
        expand(write(tmp_path, content))
    msg = str(exc.value)
    assert msg.startswith(str(tmp_path / "s.yaml")), msg
    for piece in pieces:
        assert piece in msg, (piece, msg)


@pytest.mark.parametrize("where", ["missing.yaml", "."], ids=["missing file", "directory"])
def test_a_path_that_is_no_file_is_refused(tmp_path: Path, where: str) -> None:
    with pytest.raises(ConfigError, match="no such scenario file|is a directory"):
        expand(tmp_path / where)


def test_the_refusal_keeps_a_list_the_terminal_markup_would_eat(tmp_path, monkeypatch, capsys) -> None:
    path = write(tmp_path, MALFORMED["member the fleet never has"][0])
    monkeypatch.setattr(sys, "argv", ["testbed", "validate", str(path)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 1 and "members then: m0, m1, m2, m3" in err


@pytest.mark.parametrize("name", ["member the fleet never has", "binary file", "duplicate key", "tabs"])
def test_run_refuses_before_anything_starts(tmp_path, monkeypatch, capsys, name: str) -> None:
    from testbed.scenario import runner

    def must_not_start(*args: object, **kwargs: object) -> None:
        raise AssertionError("a run started for an invalid file")

    monkeypatch.setattr(runner.ScenarioRunner, "__init__", must_not_start)
    path = write(tmp_path, MALFORMED[name][0])
    monkeypatch.setattr(sys, "argv", ["testbed", "run", str(path), "--reports", str(tmp_path / "reports")])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and f"error: {path}" in err and "Traceback" not in err
    assert not (tmp_path / "reports").exists()


NETWORK_BASE = {"name": "n", "topics": [{"name": "t", "partitions": 2}],
                "members": {"a": {"client": "confluent-kafka"}}, "fleet": [{"spec": "a", "count": 2}]}


@pytest.mark.parametrize(("steps", "message"), [
    ([{"partition": {"member": "m0", "broker": 1}}], "name exactly one of member"),
    ([{"partition": {}}], "name exactly one of member"),
    ([{"partition": {"broker": 1, "brokers": "all"}}], "partition.brokers: only with member"),
    ([{"partition": {"broker": 2}}], "steps.0.partition.broker: must be 1..1"),
    ([{"partition": {"member": "m5"}}], "steps.0.partition.member: 'm5' is not a member"),
    ([{"heal": {"member": "m0"}}], "steps.0.heal: member m0 has no partition or latency at this step"),
    ([{"partition": {"member": "m0", "seconds": 3}}, {"heal": {"member": "m0"}}],
     "steps.1.heal: member m0 has no partition or latency"),
    ([{"partition": {"member": "m0"}}, {"partition": {"member": "m0"}}],
     "steps.1.partition: member m0 already has one from an earlier partition step"),
    ([{"latency": {"broker": 1, "ms": 200}}, {"latency": {"broker": 1, "ms": 300}}],
     "steps.1.latency: broker 1 already has one from an earlier latency step; heal it first"),
    ([{"latency": {"broker": 2, "ms": 200}}], "steps.0.latency.broker: must be 1..1"),
    ([{"latency": {"broker": 1, "ms": 0}}], "steps.0.latency.ms"),
    ([{"latency": {"broker": 1, "ms": 100, "seconds": 2}}, {"heal": {"broker": 1}}],
     r"steps.1.heal: broker 1 has no partition or latency at this step \(one with seconds ends by itself\); "
     "in place then: nothing"),
    ([{"partition": {"member": "m0", "loss": 1}}], "less than 1"),
])
def test_network_steps_refused_naming_the_field(steps, message):
    with pytest.raises(ValidationError, match=message):
        Scenario.model_validate({**NETWORK_BASE, "steps": steps})


def test_network_steps_accepted_and_refused_on_an_external_cluster():
    steps = [{"partition": {"member": "m0", "brokers": "coordinator"}}, {"partition": {"broker": "coordinator"}},
             {"latency": {"broker": "coordinator", "ms": 300}}, {"heal": {"member": "m0"}}, {"heal": {}},
             {"latency": {"broker": 1, "ms": 50, "jitter_ms": 20}}, {"partition": {"broker": 1}},
             {"heal": {"broker": 1}}]
    Scenario.model_validate({**NETWORK_BASE, "steps": steps})
    with pytest.raises(ValidationError, match="network steps need a cluster testbed starts"):
        Scenario.model_validate({**NETWORK_BASE, "cluster": {"bootstrap_servers": "127.0.0.1:9092"},
                                 "steps": [{"partition": {"member": "m0", "seconds": 1}}]})


UPGRADE_BASE = {**NETWORK_BASE, "cluster": {"brokers": 3, "kafka_version": "3.9.1"},
                "members": {"a": {"client": "confluent-kafka"},
                            "kip848": {"client": "confluent-kafka", "group_protocol": "consumer"}}}


@pytest.mark.parametrize(("cluster", "steps", "message"), [
    ({}, [{"broker_upgrade": {"to": "3.9.1"}}], "broker 1 runs 3.9.1 at this step; an upgrade needs a newer"),
    ({}, [{"broker_upgrade": {"to": "4.3"}}], r"steps.0.broker_upgrade.to\n.*release number like 4.3.1"),
    ({}, [{"broker_upgrade": {"to": "4.3.1", "brokers": [1]}}], r"finalize: raises the feature levels, which needs "
                                                                 r"every broker on 4.3.1.*\{1: '4.3.1', 2: '3.9.1'"),
    ({}, [{"broker_upgrade": {"to": "4.3.1", "finalize": False}}, {"broker_upgrade": {"to": "4.0.0"}}],
     "broker 1 runs 4.3.1 at this step"),
    ({"kafka_version": "3.2.3"}, [{"broker_upgrade": {"to": "4.3.1"}}], "takes over clusters of 3.3 or newer only"),
    ({}, [{"rolling_bounce": {"to": "kip848"}}],
     r"steps.0.rolling_bounce.to: member spec 'kip848' uses group_protocol 'consumer', but the brokers run Kafka "
     r"3.9.1"),
    ({}, [{"broker_upgrade": {"to": "4.3.1", "finalize": False}}, {"scale_out": {"spec": "kip848", "count": 1}}],
     "steps.1.scale_out.spec: .*finalize: false.*group.version stays 0"),
    ({"bootstrap_servers": "127.0.0.1:9092"}, [{"broker_upgrade": {"to": "4.3.1"}}],
     "broker steps need a cluster testbed starts"),
])
def test_broker_upgrades_refused_naming_the_field(cluster, steps, message):
    with pytest.raises(ValidationError, match=message):
        Scenario.model_validate({**UPGRADE_BASE, "cluster": {**UPGRADE_BASE["cluster"], **cluster}, "steps": steps})


def test_an_upgrade_path_with_a_mixed_cluster_then_migration_is_accepted():
    steps = [{"broker_upgrade": {"to": "4.3.1", "brokers": [2], "finalize": False}},
             {"broker_upgrade": {"to": "4.3.1", "brokers": [1, 3], "interval_s": 5}},
             {"rolling_bounce": {"to": "kip848"}}]
    Scenario.model_validate({**UPGRADE_BASE, "steps": steps})
    preview = {**UPGRADE_BASE["cluster"], "broker_settings": {"group.coordinator.rebalance.protocols": "classic,consumer"}}
    Scenario.model_validate({**UPGRADE_BASE, "cluster": preview, "fleet": [{"spec": "kip848", "count": 1}]})


def test_a_partial_rolling_bounce_replaces_only_its_first_members():
    steps = [{"rolling_bounce": {"count": 2}}, {"kill": {"member": "m2"}}, {"kill": {"member": "m1.1"}}]
    Scenario.model_validate({**NETWORK_BASE, "fleet": [{"spec": "a", "count": 3}], "steps": steps})
    with pytest.raises(ValidationError, match=r"steps.1.kill.member: 'm1' .*m0.1, m1.1, m2"):
        Scenario.model_validate({**NETWORK_BASE, "fleet": [{"spec": "a", "count": 3}],
                                 "steps": [{"rolling_bounce": {"count": 2}}, {"kill": {"member": "m1"}}]})


def models_of(model: type[BaseModel]) -> set[type[BaseModel]]:
    """``model`` and every model its fields hold, through lists, mappings, unions and step kinds."""
    found = {model}

    def walk(annotation: Any) -> None:
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation not in found:
                found.update(models_of(annotation))
        for arg in get_args(annotation):
            walk(arg)

    for field in model.model_fields.values():
        walk(field.annotation)
    return found


def test_every_number_of_the_scenario_format_must_be_finite() -> None:
    """An infinite timeout waits forever and nan passes no bound: refused in every part of the format, the
    member specs (testbed.members' own) included."""
    parts = {m for m in models_of(Scenario) if m.__module__.startswith(("testbed.scenario.", "testbed.members."))}
    assert len(parts) > 20 and any(m.__name__ == "MemberSpec" for m in parts)
    assert [m.__name__ for m in parts if m.model_config.get("allow_inf_nan", True)] == []
    for value in (float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="load.rate\n.*finite number"):
            Scenario.model_validate({**NETWORK_BASE, "load": {"topic": "t", "rate": value}})
        with pytest.raises(ValidationError, match="effects.timeout_s\n.*finite number"):
            Scenario.model_validate({**NETWORK_BASE, "effects": {"command": ["x"], "timeout_s": value}})


JAVA_OUTPUT_TOPIC = HEAD.replace("partitions: 6}", "partitions: 6}\n  - {name: out, partitions: 6, consumed: false}")


@pytest.mark.parametrize("member", [
    "{client: java, assignors: [range]}",  # VerifiableConsumer: one topic, the one consumed
    "{client: java, command: [java, -jar, app.jar], env: {OUT: '{topic:out}'}}",  # a program reads what it subscribes
], ids=["verifiable consumer", "jvm program"])
def test_a_java_member_of_its_own_process_may_run_beside_a_topic_only_written(tmp_path: Path, member: str) -> None:
    text = JAVA_OUTPUT_TOPIC.replace("members:\n", f"members:\n  j: {member}\n") + "steps:\n  - rolling_bounce: {to: j}\n"
    [run] = expand(write(tmp_path, text))
    assert [t.name for t in run.scenario.topics if t.consumed] == ["events"]


def test_a_jvm_program_may_read_several_topics(tmp_path: Path) -> None:
    text = (HEAD.replace("partitions: 6}", "partitions: 6}\n  - {name: more, partitions: 6}")
            .replace("members:\n", "members:\n  j: {client: java, command: [java, -jar, app.jar]}\n")
            + "steps:\n  - rolling_bounce: {to: j}\n")
    assert len(expand(write(tmp_path, text))) == 1
