"""Judging a saved run: the verdict is derived from the run's outcome every time, so re-judging is stable."""

from __future__ import annotations

from histories import scenarios
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture

from testbed.run.layout import RunDir
from testbed.run.result import RunResult
from testbed.scenario.evaluate import evaluate, failure_summary
from testbed.scenario.model import Scenario

SCENARIO = Scenario.model_validate({
    "name": "judged",
    "topics": [{"name": "t", "partitions": 4}],
    "members": {"a": {"client": "confluent-kafka", "assignors": ["cooperative-sticky"]}},
    "fleet": [{"spec": "a", "count": 2}],
    "expect": ["lost_records == 0", "max_partition_pause_ms < 500"],
})


def test_verdict_follows_outcome_and_expectations_and_rejudging_is_stable(tmp_path, spark):  # noqa: F811
    root = scenarios.cooperative_join(tmp_path / "run")
    result = RunResult(scenario="judged", run_dir=str(root), status="pass", outcome="pass", started_ms=0)
    first = evaluate(RunDir(root), SCENARIO, result)
    # partitions 1 and 3 pause 1000 ms each (see the history's docstring): the pause bound fails, loss holds
    assert [(e.metric, e.passed) for e in first.expectations] == [("lost_records", True),
                                                                ("max_partition_pause_ms", False)]
    assert first.status == "fail"
    assert "max_partition_pause_ms = 1000, wanted < 500" in failure_summary(first)
    again = evaluate(RunDir(root), SCENARIO, RunResult.model_validate(first.model_dump()))
    assert again.status == "fail" and again.expectations == first.expectations

    interrupted = RunResult(scenario="judged", run_dir=str(root), status="partial", outcome="partial",
                            partial=True, reason="interrupted", started_ms=0)
    assert evaluate(RunDir(root), SCENARIO, interrupted).status == "partial"


def test_a_failed_analysis_is_an_error_with_every_expectation_unknown(tmp_path, spark):  # noqa: F811
    root = tmp_path / "empty"
    RunDir(root).create()
    result = evaluate(RunDir(root), SCENARIO, RunResult(scenario="judged", run_dir=str(root), status="pass",
                                                        started_ms=0))
    assert result.status == "error" and result.analysis_error
    assert all(not e.passed and e.value is None and e.unknown for e in result.expectations)
    assert "analysis failed" in failure_summary(result)
