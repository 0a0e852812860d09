"""Judging a saved run: analysis, then checkers and the scenario's expectations, into the RunResult.

Runs after the history is saved and only reads it. Any failure here leaves the verdicts it could
not reach as unknown / error with the reason; it never turns into a pass.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..history.silence import NOTHING_WRITTEN, silent_members
from ..run.layout import RunDir
from ..run.result import ExpectationResult, RunResult, Verdict
from .model import Expectation, Scenario

if TYPE_CHECKING:  # the analysis package loads Spark's Python side: only where a run is judged
    from ..analysis.runs.trials import TrialGroup

log = logging.getLogger(__name__)


def evaluate(run_dir: RunDir, scenario: Scenario, result: RunResult) -> RunResult:
    from ..analysis.service import analyse_run
    from ..checkers import Evidence, run_checkers

    result.status = result.outcome
    result.analysis_error = None
    if silent_members(run_dir) is not None:  # the run's error says how the members ended, with their output
        return _not_analysed(result, scenario, f"not analysed: {NOTHING_WRITTEN}")
    try:
        analysis = analyse_run(run_dir.root, settings=scenario.analysis)
    except Exception as exc:  # noqa: BLE001 - reported in result.json and the report
        log.error("analysis failed: %s", exc)
        run_dir.analysis_error.write_text(traceback.format_exc())
        return _not_analysed(result, scenario, f"analysis failed: {exc}")

    metrics = analysis.metrics
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
        result.checks = run_checkers(Evidence(metrics, analysis.tables))  # as written, not read back
    except Exception as exc:  # noqa: BLE001
        result.checks = [Verdict.of("checkers", "unknown", f"checkers failed: {exc}")]

    if result.status == "pass":
        failed = [x for x in expectations if not x.passed] or [c for c in result.checks if c.status == "invalid"]
        result.status = "fail" if failed else "pass"
    return result


def _not_analysed(result: RunResult, scenario: Scenario, why: str) -> RunResult:
    """Every expectation unknown, no checker verdict, and an error for a run that had passed."""
    result.expectations = [ExpectationResult(text=e.text, metric=e.metric, op=e.op, bound=e.bound, value=None,
                                             unknown=why, passed=False) for e in scenario.expect]
    result.checks = []
    result.analysis_error = why
    if result.status == "pass":
        result.status = "error"
    return result


def failure_summary(result: RunResult) -> str:
    """One line per failed expectation or invalid check, naming the metric, its value, the bound and the report."""
    lines = []
    for x in result.expectations:
        if not x.passed:
            value = f"unknown ({x.unknown})" if x.value is None else f"{x.value:g}"
            lines.append(f"expectation failed: {x.metric} = {value}, wanted {x.op} {x.bound:g}")
    for c in result.checks:
        if c.status == "invalid":
            lines.append(f"checker {c.checker} invalid: {c.message} (count {'unknown' if c.count is None else c.count})")
    if result.problems:
        lines.append(f"run {result.status}: {result.problems}")
    lines.append(f"report: {result.files.report}")
    return "\n".join(lines)


def judge_group(group: TrialGroup, expectations: Sequence[Expectation], results: Sequence[RunResult],
                judge: str) -> list[str]:
    """Why a configuration's trials fail (empty: they pass). ``each``: every trial must pass on its own.
    ``median``: the scenario's expectations hold on the medians, and no trial errored, was cut short or has
    an invalid checker (a checker verdict is about one history and cannot be averaged)."""
    if judge == "each":
        return [f"trial {i + 1}: {r.status}" for i, r in enumerate(results) if r.status != "pass"]
    problems = [f"trial {i + 1}: run {r.outcome}" + (f" ({r.reason})" if r.reason else "")
                for i, r in enumerate(results) if r.outcome != "pass" or r.analysis_error]
    problems += [f"trial {i + 1}: checker {c.checker} invalid: {c.message}"
                 for i, r in enumerate(results) for c in r.checks if c.status == "invalid"]
    for e in expectations:
        iv = group.metrics.get(e.metric)
        if iv is None or iv.median is None:
            problems.append(f"expectation {e.text}: {e.metric} unknown in every trial")
        elif not e.holds(iv.median):
            problems.append(f"expectation {e.text}: median {iv.median:g} over {iv.n} trial(s)")
    return problems
