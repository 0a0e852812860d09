"""Repeated trials: the median interval's exact values, the summary over saved metrics, judging, the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.analysis.runs.trials import (
    Interval, TrialsSummary, coverage, median_interval, overlap, summarise_group)
from testbed.report.trials import finding, render_trials
from testbed.run.metrics import Metrics, MetricValue, RunConfig, Windows
from testbed.run.result import RunResult, Verdict
from testbed.scenario.evaluate import judge_group
from testbed.scenario.model import Expectation


def test_coverage_of_order_statistic_intervals():
    assert coverage(5, 1) == pytest.approx(0.9375)      # [min, max] of 5
    assert coverage(6, 1) == pytest.approx(0.96875)
    assert coverage(10, 2) == pytest.approx(0.978515625)
    assert coverage(10, 3) == pytest.approx(0.890625)


def test_median_interval_uses_the_tightest_pair_reaching_95_percent():
    five = median_interval([5, 1, 4, 2, 3])
    assert (five.median, five.low, five.high, five.coverage) == (3, 1, 5, 0.9375)  # 95 % unreachable: [min, max]
    ten = median_interval(range(1, 11))
    assert (ten.median, ten.low, ten.high, ten.coverage) == (5.5, 2, 9, 0.9785)
    assert median_interval([], unknown=3) == Interval(n=0, unknown=3)
    one = median_interval([7])
    assert (one.low, one.high, one.coverage) == (7, 7, 0.0)


def test_overlapping_intervals_are_not_a_finding():
    a, b, c = median_interval([1, 2, 3]), median_interval([3, 4, 5]), median_interval([6, 7, 8])
    assert overlap(a, b) is True and overlap(a, c) is False
    assert finding([a, b]) == "not different"
    assert finding([a, c]) == "1 pair(s) apart"
    assert overlap(a, Interval(n=0)) is None


def _metrics(tmp: Path, name: str, pause: int | None) -> Path:
    run = tmp / name
    (run / "analysis").mkdir(parents=True)
    value = MetricValue(value=pause, unit="ms", unknown=None if pause is not None else "no broker logs")
    m = Metrics(run_dir=str(run), metrics={"max_partition_pause_ms": value}, config=RunConfig(protocol="eager"),
                windows=Windows(run_start_ms=0, run_end_ms=1, drain_end_ms=1, bounces=[]), latency_source="acks")
    (run / "analysis" / "metrics.json").write_text(m.model_dump_json())
    return run


def test_summary_keeps_unknown_trials_out_of_the_median_and_counts_them(tmp_path: Path):
    dirs = [_metrics(tmp_path, f"t{i}", v) for i, v in enumerate([3000, None, 1000, 2000])]
    group = summarise_group("range", {"members.main.assignors": ["range"]}, dirs, ["pass"] * 4)
    iv = group.metrics["max_partition_pause_ms"]
    assert (iv.n, iv.unknown, iv.median, iv.low, iv.high) == (3, 1, 2000, 1000, 3000)
    summary = TrialsSummary(scenario="s", repeat=4, judge="median", groups=[group])
    page = render_trials(summary, tmp_path / "trials" / "summary.html").read_text()
    assert "2,000 [1,000, 3,000]" in page or "2000 [1000, 3000]" in page
    assert "1 unknown" in page


def test_median_judging_uses_medians_and_every_trials_checkers(tmp_path: Path):
    dirs = [_metrics(tmp_path, f"t{i}", v) for i, v in enumerate([3000, 9000, 1000])]
    group = summarise_group("g", {}, dirs)
    ok = [RunResult(scenario="s", run_dir=str(d), status="fail", started_ms=0) for d in dirs]
    expect = [Expectation.parse("max_partition_pause_ms < 5000")]
    assert judge_group(group, expect, ok, "median") == []            # median 3000, though one trial had 9000
    assert judge_group(group, expect, ok, "each") == [f"trial {i}: fail" for i in (1, 2, 3)]
    ok[1].checks = [Verdict.of("no_loss", "invalid", "1 lost", 1)]
    assert judge_group(group, expect, ok, "median") == ["trial 2: checker no_loss invalid: 1 lost"]
    assert judge_group(group, [Expectation.parse("max_partition_pause_ms < 2000")], ok[:1], "median") == [
        "expectation max_partition_pause_ms < 2000: median 3000 over 3 trial(s)"]
