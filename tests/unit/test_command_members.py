"""Command members (the user's own program) before and at their start: the spec's refusals, the env the program
gets, and the fleet's watch of its first subscribe (real child processes; no Kafka)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testbed.fleet.process import MemberProcess
from testbed.fleet.programs import ProgramCrashedAtStart, ProgramStartError, wait_program_subscribed
from testbed.members.config import MemberConfig
from testbed.members.launch import Launch
from testbed.members.spec import MemberSpec, fill_env
from testbed.scenario.model import Scenario

RUN_GROUP, RUN_TOPICS = "run-group", ["events-ab12"]


def started_line(group: str, topics: list[str], client: str = "kafka-python") -> str:
    return json.dumps({"name": "started", "source": "m0", "ts_ms": 1, "client": client, "client_version": "3.0.0",
                       "group_id": group, "topics": topics, "pid": 1})


class ScriptedProgram(MemberProcess):
    """A stand-in for the user's program: a Python child that writes what the instrumentation would."""

    script = ""

    def launch(self) -> Launch:
        return Launch([sys.executable, "-c", self.script])


def program(tmp_path: Path, script: str, timeout_s: float = 10.0) -> ScriptedProgram:
    spec = MemberSpec(name="app", client="kafka-python", command=["python", "-m", "service"], start_timeout_s=timeout_s)
    history = tmp_path / "history" / "m0.jsonl"
    history.parent.mkdir(parents=True, exist_ok=True)
    config = MemberConfig(member_id="m0", group_id=RUN_GROUP, topics=RUN_TOPICS, bootstrap_servers="127.0.0.1:1",
                          spec=spec, history_path=history, log_path=tmp_path / "m0.out")
    proc = ScriptedProgram(config, tmp_path / "m0.json")
    proc.script = script.replace("HISTORY", str(history))
    proc.start()
    return proc


def writes(line: str, then: str = "import time; time.sleep(30)") -> str:
    return f"open('HISTORY', 'a').write({line!r} + '\\n')\nprint('consuming', flush=True)\n{then}"


def test_a_program_that_subscribes_to_the_run_is_a_member(tmp_path) -> None:
    proc = program(tmp_path, writes(started_line(RUN_GROUP, RUN_TOPICS)))
    try:
        assert wait_program_subscribed(proc, RUN_GROUP, RUN_TOPICS).group_id == RUN_GROUP
    finally:
        proc.kill()


@pytest.mark.parametrize("script, pieces", [
    ("import sys; print('Traceback: no module named myservice', flush=True); sys.exit(1)",
     ["ended before its consumer subscribed", "exit code 1", "no module named myservice"]),
    (writes(started_line("my-own-group", RUN_TOPICS)), ["joined group 'my-own-group'", "{group_id}", "consuming"]),
    (writes(started_line(RUN_GROUP, ["orders"])), ["'orders'", "the scenario does not have", "{topic:<name>}"]),
    (writes(started_line(RUN_GROUP, RUN_TOPICS, client="confluent-kafka")), ["its consumer is confluent-kafka"]),
    ("import time; print('waiting for config', flush=True); time.sleep(30)",
     ["did not subscribe within start_timeout_s=1.5", "waiting for config"]),
])
def test_a_program_that_does_not_join_the_run_ends_it_with_its_output(tmp_path, script, pieces) -> None:
    proc = program(tmp_path, script, timeout_s=1.5)
    try:
        with pytest.raises(ProgramStartError) as err:
            wait_program_subscribed(proc, RUN_GROUP, RUN_TOPICS)
    finally:
        proc.kill()
    for piece in pieces:
        assert piece in str(err.value)
    assert "member m0 (spec 'app'" in str(err.value)


def test_a_program_reading_a_topic_the_scenario_marks_only_written_is_told_so(tmp_path) -> None:
    proc = program(tmp_path, writes(started_line(RUN_GROUP, [*RUN_TOPICS, "totals-run"])), timeout_s=5)
    try:
        with pytest.raises(ProgramStartError) as err:
            wait_program_subscribed(proc, RUN_GROUP, RUN_TOPICS, written_only=["totals-run"])
    finally:
        proc.kill()
    assert "'totals-run', which the scenario marks consumed: false" in str(err.value), err.value


def test_a_pattern_subscription_matching_a_run_topic_is_accepted(tmp_path) -> None:
    proc = program(tmp_path, writes(started_line(RUN_GROUP, ["^events-.*"])))
    try:
        assert wait_program_subscribed(proc, RUN_GROUP, RUN_TOPICS).topics == ["^events-.*"]
    finally:
        proc.kill()


def test_env_placeholders_are_filled_from_the_run() -> None:
    env = fill_env({"SERVERS": "{bootstrap_servers}", "GROUP": "{group_id}", "IN": "{topic:events}",
                    "JSON": '{{"a": 1}}'}, bootstrap_servers="127.0.0.1:9092", group_id="g1",
                   topics={"events": "events-ab12"})
    assert env == {"SERVERS": "127.0.0.1:9092", "GROUP": "g1", "IN": "events-ab12", "JSON": '{"a": 1}'}


@pytest.mark.parametrize("fields, message", [
    ({"client": "java", "command": ["java", "-jar", "app.jar"], "assignors": ["range"]},
     "assignors: a command member runs the program's own settings"),
    ({"client": "kafka-python", "command": ["app"], "assignors": ["range"], "commit_mode": "sync"},
     "assignors, commit_mode: a command member runs the program's own settings"),
    ({"client": "kafka-python", "command": ["app"], "client_config": {"fetch_max_bytes": 1}}, "client_config"),
    ({"client": "kafka-python", "command": ["app"], "env": {"X": "{bootstrap}"}}, "env.X: unknown placeholder {bootstrap}"),
    ({"client": "kafka-python", "env": {"X": "1"}}, "cwd, env: only for command members"),
    ({"client": "kafka-python", "command": []}, "at least 1 item"),
    ({"client": "java", "command": ["java", "-jar", "app.jar"], "client_version": "2.4.1"},
     "client_version: testbed's Java agent instruments kafka-clients 2.5 and later; got '2.4.1'"),
])
def test_command_specs_that_cannot_work_are_refused(fields, message) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        MemberSpec(**fields)


def test_a_jvm_programs_version_is_the_agents_range_not_the_runners() -> None:
    # a program's own kafka-clients under the agent (2.5 on); VerifiableConsumer (the runner) needs 3.9 on
    assert MemberSpec(client="java", command=["java", "-jar", "app.jar"], client_version="2.8.2").java_version == "2.8.2"
    with pytest.raises(ValueError, match="VerifiableConsumer"):
        MemberSpec(client="java", client_version="2.8.2")


def _scenario(spec: dict, per_process: int = 1) -> dict:
    return {"name": "t", "topics": [{"name": "events", "partitions": 2}], "members": {"app": spec},
            "fleet": [{"spec": "app", "count": 2, "members_per_process": per_process}]}


def test_a_scenario_refuses_unknown_topics_and_shared_processes_for_programs() -> None:
    spec = {"client": "confluent-kafka", "command": ["python", "app.py"], "env": {"IN": "{topic:orders}"}}
    with pytest.raises(ValueError) as err:
        Scenario.model_validate(_scenario(spec, per_process=2))
    text = str(err.value)
    assert "members.app.env.IN: {topic:orders} names no topic of this scenario; topics: events" in text
    assert "fleet.0.members_per_process: member spec 'app' runs the user's program" in text
    spec["env"] = {"IN": "{topic:events}"}
    assert Scenario.model_validate(_scenario(spec)).members["app"].is_command


@pytest.mark.parametrize("exit_code, crashed", [(1, True), (0, False)])
def test_a_program_that_dies_before_subscribing_is_told_a_crash_when_it_failed(tmp_path, exit_code, crashed) -> None:
    """A crash at start is a finding in a rollout (the fleet goes on); an exit 0 before subscribing is not a crash."""
    proc = program(tmp_path, f"import sys; print('starting', flush=True); sys.exit({exit_code})", timeout_s=5)
    try:
        with pytest.raises(ProgramStartError) as err:
            wait_program_subscribed(proc, RUN_GROUP, RUN_TOPICS)
    finally:
        proc.kill()
    assert isinstance(err.value, ProgramCrashedAtStart) is crashed
    assert f"exit code {exit_code}" in str(err.value)
