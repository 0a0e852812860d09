"""result.json: a checker's verdict is saved as it was made (an unknown count stays unknown), and a
result.json written by the previous version still loads and renders."""

from __future__ import annotations

import json
from pathlib import Path

from report_fixtures import SMALL_RUN, materialise

from testbed.report import render_run
from testbed.run.layout import RunDir
from testbed.run.result import RunResult, Verdict
from testbed.scenario.evaluate import failure_summary


def _result(run_dir: Path, *checks: Verdict) -> RunResult:
    return RunResult(scenario="s", run_dir=str(run_dir), status="fail", started_ms=0, checks=list(checks))


def test_an_unknown_count_stays_unknown_from_checker_to_result_json_and_summary(tmp_path: Path) -> None:
    crashed = Verdict.of("offset_skips", "invalid", "checker saw skips it could not count")
    found = Verdict.of("no_loss", "invalid", "3 acknowledged records never processed", 3, [{"offset": 7}])
    path = tmp_path / "result.json"
    _result(tmp_path, crashed, found).save(path)
    saved = json.loads(path.read_text())["checks"]
    assert [c["count"] for c in saved] == [None, 3]
    assert saved[0] == {"checker": "offset_skips", "status": "invalid", "message": crashed.message, "count": None,
                        "examples": []}
    assert RunResult.load(path).checks == [crashed, found]
    summary = failure_summary(RunResult.load(path))
    assert "checker offset_skips invalid: checker saw skips it could not count (count unknown)" in summary
    assert "checker no_loss invalid: 3 acknowledged records never processed (count 3)" in summary


def test_a_result_json_of_the_previous_version_loads_with_its_checks() -> None:
    old = json.loads((SMALL_RUN / "result.json").read_text())
    assert "name" in old["checks"][0] and "checker" not in old["checks"][0], "the fixture keeps the old field names"
    (check,) = RunResult.load(SMALL_RUN / "result.json").checks
    assert (check.checker, check.status, check.count, check.message) == ("no_concurrent_duplicates", "invalid", 20, "")
    assert check.examples == [{"topic": "t", "partition": 4, "offset": 4410}]


def test_the_report_says_count_unknown_never_zero(tmp_path: Path) -> None:
    run_dir = materialise(tmp_path)
    result = RunResult.load(RunDir(run_dir).result)
    result.checks = [Verdict.of("no_loss", "unknown", "lost_records unknown: no ack log")]
    result.save(RunDir(run_dir).result)
    html = render_run(run_dir).read_text()
    assert "no_loss: unknown (count unknown): lost_records unknown: no ack log" in html
