"""Run events: listeners follow a run's steps; one that raises is logged and the run goes on."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from testbed.history.harness import HarnessLog
from testbed.scenario import model as m
from testbed.scenario.events import EventHook, RunEvents, StepEvent, steps_recorded
from testbed.scenario.loader import ScenarioRun
from testbed.scenario.runner import ScenarioRunner
from testbed.scenario.steps import RunContext

SCENARIO = m.Scenario.model_validate({
    "name": "events", "topics": [{"name": "t", "partitions": 1}],
    "members": {"a": {"client": "confluent-kafka"}}, "fleet": [{"spec": "a", "count": 1}],
    "steps": [{"wait": {"seconds": 0.01}}, {"wait": {"seconds": 0.01}}]})


def test_a_raising_listener_is_logged_and_the_others_still_hear(caplog: pytest.LogCaptureFixture) -> None:
    hook: EventHook[int] = EventHook("tick")
    heard: list[int] = []

    def broken(value: int) -> None:
        raise RuntimeError("listener bug")

    hook.subscribe(broken)
    hook.subscribe(heard.append)
    with caplog.at_level(logging.ERROR):
        hook.fire(1)
        hook.fire(2)
    assert heard == [1, 2]
    errors = [r for r in caplog.records if "tick" in r.getMessage()]
    assert len(errors) == 2 and errors[0].exc_info[1].args == ("listener bug",)


def test_ctrl_c_in_a_listener_still_stops_the_run() -> None:
    hook: EventHook[int] = EventHook("tick")

    def interrupted(value: int) -> None:
        raise KeyboardInterrupt

    hook.subscribe(interrupted)
    with pytest.raises(KeyboardInterrupt):
        hook.fire(1)


def test_every_step_runs_and_is_recorded_though_a_progress_listener_raises(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    runner = ScenarioRunner(ScenarioRun(tmp_path / "s.yaml", SCENARIO, {}), tmp_path / "reports")
    seen: list[tuple[str, int, int]] = []
    runner.events.step_start.subscribe(lambda e: seen.append(("start", e.index, e.total)))

    def broken(event: StepEvent) -> None:
        raise ValueError(f"display failed at step {event.index}")

    runner.events.step_start.subscribe(broken)
    runner.events.step_end.subscribe(lambda e: seen.append(("end", e.index, e.total)))
    harness = HarnessLog(tmp_path / "harness.jsonl")
    ctx = RunContext(SCENARIO, None, harness, "127.0.0.1:1", {"t": "t"}, None, None, None)  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR), steps_recorded(runner.events, harness):
        runner.run_steps(ctx, list(SCENARIO.steps))
    harness.close()
    assert seen == [("start", 0, 2), ("end", 0, 2), ("start", 1, 2), ("end", 1, 2)]
    logged = [(a["kind"], a["detail"]["index"]) for a in map(json.loads, (tmp_path / "harness.jsonl").open())]
    assert logged == [("step_start", 0), ("step_end", 0), ("step_start", 1), ("step_end", 1)]
    assert [str(r.exc_info[1]) for r in caplog.records if r.exc_info] == [
        "display failed at step 0", "display failed at step 1"]


def test_the_harness_log_hears_steps_only_while_recording() -> None:
    events = RunEvents()
    step = m.Wait(seconds=1)

    class Harness:
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def record(self, kind: str, *args: object, **kwargs: object) -> None:
            self.kinds.append(kind)

    harness = Harness()
    with steps_recorded(events, harness):  # type: ignore[arg-type]
        events.step_start.fire(StepEvent(0, 1, step))
        events.step_end.fire(StepEvent(0, 1, step))
    events.step_start.fire(StepEvent(0, 1, step))
    assert harness.kinds == ["step_start", "step_end"]
