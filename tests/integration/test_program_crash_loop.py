"""A user's program that crashes on a poison record, restarted on failure: the run is judged, not an error.

Two instances of tests/integration/programs/poison_service.py on two partitions under a small load; once the group
is stable the test writes one record whose value is the poison marker to partition 0. Every instance that gets
partition 0 raises PoisonPill and dies (exit code 1) and its restart policy (0.5 s back-off, one restart each)
brings it back, until the limit leaves partition 0 with nobody; the scenario's later steps (a wait for a stable
group, a wait, the drain) still run. The crashes counted must be the processes that died, the restarts the
restarts made, and the analysis must name the crash loop: partition 0, PoisonPill, stuck at the poison's offset.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest
from confluent_kafka import Producer

from testbed.history.events import Action
from testbed.report import render_after_run
from testbed.run.metrics import Metrics
from testbed.run.result import RunResult
from testbed.scenario.events import StepEvent
from testbed.scenario.loader import load
from testbed.scenario.runner import ScenarioRunner

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).parent / "programs" / "poison_service.py"
SCENARIO = """\
name: poison-crash-loop
topics: [{{name: events, partitions: 2}}]
load: {{topic: events, rate: 20, users: 1}}
members:
  app:
    client: confluent-kafka
    command: [{python}, {program}]
    env: {{BOOTSTRAP: "{{bootstrap_servers}}", GROUP: "{{group_id}}", TOPIC: "{{topic:events}}", POISON: {poison}}}
    restart: {{policy: on-failure, backoff_s: 0.5, limit: 1}}
fleet: [{{spec: app, count: 2}}]
steps:
  - wait_stable: {{timeout_s: 60}}
  - wait: {{seconds: 1}}            # the poison is written as this step starts
  - wait_stable: {{timeout_s: 60}}  # while instances crash and come back
  - wait: {{seconds: 6}}
  - drain: {{timeout_s: 4}}
"""


def test_a_crash_loop_on_a_poison_record_is_a_finding_not_an_error(kafka_cluster, tmp_path: Path) -> None:
    poison = f"POISON-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(python=sys.executable, program=PROGRAM, poison=poison))
    runner = ScenarioRunner(load(path), tmp_path / "reports", cluster=kafka_cluster)
    written: list[int] = []

    def write_poison(event: StepEvent) -> None:
        if event.index != 1:
            return
        ctx = runner.context
        producer = Producer({"bootstrap.servers": ctx.bootstrap_servers})
        producer.produce(ctx.topics["events"], value=poison.encode(), partition=0,
                         on_delivery=lambda err, msg: written.append(msg.offset()) if err is None else None)
        assert producer.flush(30) == 0

    runner.events.step_start.subscribe(write_poison)
    result = runner.execute()
    run = result.files
    actions = [json.loads(line) for line in run.harness_log.read_text().splitlines()]
    kinds = [a["kind"] for a in actions]

    assert result.outcome != "error" and result.status != "error", result.reason
    assert len(written) == 1
    # every step ran, the ones after the crashes too
    steps_ended = [a["target"] for a in actions if a["kind"] == Action.STEP_END]
    assert steps_ended == ["wait_stable", "wait", "wait_stable", "wait", "drain"]
    assert Action.DRAIN_END in kinds
    died = [a["target"] for a in actions if a["kind"] == Action.MEMBER_EXIT and a["detail"]["cause"] == "exited"
            and a["detail"]["exit_code"] == 1]
    crashed = [a["target"] for a in actions if a["kind"] == Action.MEMBER_CRASH]
    restarted = [a for a in actions if a["kind"] == Action.MEMBER_RESTART]
    assert sorted(crashed) == sorted(died) and len(died) >= 2
    assert restarted and all(a["detail"]["replaces"] in crashed for a in restarted)
    assert all((a["detail"]["exception"] or {}).get("type") == "PoisonPill"
               for a in actions if a["kind"] == Action.MEMBER_CRASH)

    metrics = Metrics.model_validate_json(run.metrics.read_text()).metrics
    assert metrics["member_crashes"].value == len(died)
    assert metrics["member_restarts"].value == len(restarted)
    assert metrics["crash_loops"].value == 1
    loop = pd.read_parquet(run.table("crash_loops")).iloc[0]
    assert (loop["partition"], loop["exception_type"], bool(loop["ongoing"])) == (0, "PoisonPill", True)
    assert loop["topic"] == runner.context.topics["events"]
    assert loop["crashes"] == len(died) and loop["stuck_at_offset"] == written[0]
    assert loop["records_behind"] > 0

    verdicts = {c.checker: c for c in result.checks}
    assert verdicts["member_crashes"].status == "invalid" and verdicts["member_crashes"].count == len(died)

    # the report opens with the crash loop, and lists every crash
    render_after_run(run, tmp_path / "reports")
    html = run.report.read_text()
    answer = html[html.index('id="answer"'):]
    first_card = answer[:answer.index('id="headline-longest-pause"')]
    where = f"{runner.context.topics['events']}-0"
    assert 'id="headline-crashes"' in first_card
    assert f"crashed {len(died)} times in a row at {where} (PoisonPill: cannot parse" in html
    assert f"stuck at offset {written[0]}" in html
    crashes_table = html[html.index('id="crashes-table"'):]
    assert crashes_table[:crashes_table.index("</table>")].count("<tr>") == len(died) + 1  # header and a row each


def run_with_poison_at_step_1(scenario: str, cluster, tmp_path: Path) -> RunResult:
    """Run the scenario with the poison record written to partition 0 as its second step starts."""
    poison = f"POISON-{uuid.uuid4().hex[:8]}"
    path = tmp_path / "scenario.yaml"
    path.write_text(scenario.format(python=sys.executable, program=PROGRAM, poison=poison))
    runner = ScenarioRunner(load(path), tmp_path / "reports", cluster=cluster)

    def write_poison(event: StepEvent) -> None:
        if event.index == 1:
            producer = Producer({"bootstrap.servers": runner.context.bootstrap_servers})
            producer.produce(runner.context.topics["events"], value=poison.encode(), partition=0)
            assert producer.flush(30) == 0

    runner.events.step_start.subscribe(write_poison)
    return runner.execute()


# Two instances of the program on two partitions under a small load; the environment goes on after POISON.
TWO_INSTANCES = """\
topics: [{{name: events, partitions: 2}}]
load: {{topic: events, rate: 20, users: 1}}
members:
  app:
    client: confluent-kafka
    command: [{python}, {program}]
    env: {{BOOTSTRAP: "{{bootstrap_servers}}", GROUP: "{{group_id}}", TOPIC: "{{topic:events}}", POISON: {poison},
"""

STUCK = "name: poison-group-never-settles\n" + TWO_INSTANCES + """\
          SESSION_TIMEOUT_MS: "45000", LEAVE_ON_CRASH: "no"}}
    restart: {{policy: never}}
fleet: [{{spec: app, count: 2}}]
steps:
  - wait_stable: {{timeout_s: 60}}
  - wait: {{seconds: 4}}           # the poison is written as this step starts, and crashed on within it (with 1 s,
                                  # once at load 19, the next wait found the group stable: no crash yet)
  - wait_stable: {{timeout_s: 8}}  # the dead instance stays in the group for its 45 s session
  - drain: {{timeout_s: 4}}
"""


def test_a_group_that_never_settles_after_the_program_crashed_is_a_finding(kafka_cluster, tmp_path: Path) -> None:
    """The instance that meets the poison dies without leaving the group: the next wait for a stable group times
    out. The run stops there as a failed run (partial) whose reason names the crash, not as testbed's error."""
    result = run_with_poison_at_step_1(STUCK, kafka_cluster, tmp_path)
    assert (result.outcome, result.status, result.partial) == ("fail", "fail", True), result.reason
    assert "the group did not settle after the program crashed (1 crash(es)" in result.reason
    assert "PoisonPill" in result.reason and "session.timeout.ms" in result.reason and "WaitTimeout" in result.reason
    saved = json.loads(result.files.result.read_text())
    assert saved["outcome"] == "fail" and saved["status"] == "fail"
    metrics = Metrics.model_validate_json(result.files.metrics.read_text()).metrics
    assert metrics["member_crashes"].value == 1
    # it stopped before its drain: what was not processed is not called lost
    assert metrics["lost_records"].value is None and "before its final drain" in metrics["lost_records"].unknown


HUNG = "name: poison-hang\n" + TWO_INSTANCES + """\
          HANG_ON_POISON: "yes", MAX_POLL_INTERVAL_MS: "6000"}}
fleet: [{{spec: app, count: 2}}]
steps:
  - wait_stable: {{timeout_s: 60}}
  - wait: {{seconds: 10}}           # the poison is written as this step starts; 6 s into its hang on it the
                                  # instance's client leaves the group (max.poll.interval.ms), and it runs on
  - wait_stable: {{timeout_s: 15}}  # the other holds both partitions; the hung one is alive, and out
  - drain: {{timeout_s: 4}}
"""


def test_a_program_that_hangs_on_a_record_and_runs_on_outside_its_group_is_a_finding(kafka_cluster,
                                                                                    tmp_path: Path) -> None:
    """The instance that meets the poison hangs in its handler: librdkafka leaves the group when max.poll.interval.ms
    passes without a poll, and the process runs on; the other instance takes the partition over, meets the poison
    (never committed) and hangs too. The next wait for a stable group times out; the run stops there as a failed run
    whose reason names the instances and where their threads stood, not as testbed's error."""
    result = run_with_poison_at_step_1(HUNG, kafka_cluster, tmp_path)
    assert (result.outcome, result.status, result.partial) == ("fail", "fail", True), result.reason
    assert result.reason.startswith("the group did not settle: the program's "), result.reason
    assert "ran on outside the group" in result.reason and "WaitTimeout" in result.reason
    assert "its process is alive, but the broker does not list it in the group" in result.reason
    assert "wait_for_a_reply_that_never_comes (programs/poison_service.py:" in result.reason, result.reason
    saved = json.loads(result.files.result.read_text())
    assert saved["outcome"] == "fail" and saved["status"] == "fail"
    metrics = Metrics.model_validate_json(result.files.metrics.read_text()).metrics
    assert metrics["member_crashes"].value == 0
