"""Judging a saved run: analysis, then checkers and the scenario's expectations, into the RunResult.

Runs after the history is saved and only reads it. Any failure here leaves the verdicts it could
not reach as unknown / error with the reason; it never turns into a pass.
"""

from __future__ import annotations

import logging
import traceback

from ..run.layout import RunDir
from .model import Scenario
from ..run.result import CheckResult, ExpectationResult, RunResult

log = logging.getLogger(__name__)


def evaluate(run_dir: RunDir, scenario: Scenario, result: RunResult) -> RunResult:
    from ..analysis import analyse
    from ..checkers import load_evidence, run_checkers

    result.status = result.outcome
    result.analysis_error = None
    try:
        metrics = analyse(run_dir.root, min_pause_ms=scenario.analysis.min_pause_ms,
                          episode_gap_ms=scenario.analysis.episode_gap_ms)
    except Exception as exc:  # noqa: BLE001 - reported in result.json and the report
        log.error("analysis failed: %s", exc)
        (run_dir.root / "analysis-error.txt").write_text(traceback.format_exc())
        result.expectations = [ExpectationResult(text=e.text, metric=e.metric, op=e.op, bound=e.bound, value=None,
                                                 unknown=f"analysis failed: {exc}", passed=False)
                               for e in scenario.expect]
        result.checks = []
        result.analysis_error = f"analysis failed: {exc}"
        if result.status == "pass":
            result.status = "error"
        return result

    expectations = []
    for e in scenario.expect:
        mv = metrics.metrics.get(e.metric)
        if mv is None or mv.value is None:
            why = mv.unknown if mv is not None else f"the analysis has no metric {e.metric!r}"
            expectations.append(ExpectationResult(text=e.text, metric=e.metric, op=e.op, bound=e.bound,
                                                  value=None, unknown=why, passed=False))
        else:
            expectations.append(ExpectationResult(text=e.text, metric=e.metric, op=e.op, bound=e.bound,
                                                  value=float(mv.value), passed=e.holds(float(mv.value))))
    result.expectations = expectations

    try:
        verdicts = run_checkers(load_evidence(run_dir.root))
        result.checks = [CheckResult(name=v.checker, verdict=v.status, count=v.count or 0, examples=v.examples,
                                     reason=v.message) for v in verdicts]
    except Exception as exc:  # noqa: BLE001
        result.checks = [CheckResult(name="checkers", verdict="unknown", reason=f"checkers failed: {exc}")]

    if result.status == "pass":
        failed = [x for x in expectations if not x.passed] or [c for c in result.checks if c.verdict == "invalid"]
        result.status = "fail" if failed else "pass"
    return result


def failure_summary(result: RunResult) -> str:
    """One line per failed expectation or invalid check, naming the metric, its value, the bound and the report."""
    lines = []
    for x in result.expectations:
        if not x.passed:
            value = f"unknown ({x.unknown})" if x.value is None else f"{x.value:g}"
            lines.append(f"expectation failed: {x.metric} = {value}, wanted {x.op} {x.bound:g}")
    for c in result.checks:
        if c.verdict == "invalid":
            lines.append(f"checker {c.name} invalid: {c.reason} (count {c.count})")
    if result.problems:
        lines.append(f"run {result.status}: {result.problems}")
    lines.append(f"report: {result.run_dir}/report.html")
    return "\n".join(lines)
