"""render_comparison and render_index on fixed analysis outputs."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from report_fixtures import materialise

from testbed.report import render_comparison, render_index, render_run


def _edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


@pytest.fixture()
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    first = materialise(tmp_path, "20251122-082640-range")
    second = materialise(tmp_path, "20251122-090000-cooperative")

    def cooperative(data: dict) -> None:
        data["metrics"]["duplicate_ownership_ms"]["value"] = 0
        data["metrics"]["throughput_mean_rps"]["value"] = 50.0
        data["metrics"]["lost_records"] = {"value": None, "unit": "records", "unknown": "no ack log"}
        data["config"]["assignors"] = ["cooperative-sticky"]
        data["config"]["protocol"] = "cooperative"

    _edit_json(second / "analysis/metrics.json", cooperative)
    _edit_json(second / "result.json", lambda r: r.update(status="pass", started_ms=r["started_ms"] + 3_600_000))
    return first, second


def _cells(html: str, run: str) -> str:
    return re.search(rf"<tr><td>(<a [^>]*>)?{run}.*?</tr>", html, re.S).group(0)


def test_comparison_marks_the_best_known_value_per_metric(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = two_runs
    page = render_comparison([first, second], tmp_path / "compare" / "range-vs-coop.html")
    html = page.read_text()
    headers = re.findall(r"<th title=\"[^\"]*\"><code>(\w+)</code>", html)
    assert headers[:3] == ["lost_records", "duplicates_total", "duplicate_ownership_ms"]
    col = headers.index("duplicate_ownership_ms")
    row1 = re.findall(r"<td class=\"(num[^\"]*|unknown)\">([^<]*)</td>", _cells(html, first.name))
    row2 = re.findall(r"<td class=\"(num[^\"]*|unknown)\">([^<]*)</td>", _cells(html, second.name))
    assert row2[col] == ("num best", "0") and row1[col] == ("num", "8,400")
    thr = headers.index("throughput_mean_rps")  # higher is better
    assert row1[thr] == ("num best", "87.67") and row2[thr] == ("num", "50")
    lost = headers.index("lost_records")
    assert row2[lost] == ("unknown", "unknown: no ack log")
    assert row1[lost] == ("num", "0"), "a value is not best when it is the only known one"
    assert "cooperative-sticky" in _cells(html, second.name) and "confluent-kafka 2.16.1" in _cells(html, first.name)
    assert html.count('class="plotly-graph-div"') == 2  # one small ownership timeline per run


def test_comparison_links_reports_relative_to_the_page(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = two_runs
    render_run(first)
    html = render_comparison([first, second], tmp_path / "compare" / "c.html").read_text()
    assert f'<a href="../{first.name}/report.html">' in html
    assert f'<a href="../{second.name}' not in html  # not rendered yet: no dead link


def test_comparison_needs_runs() -> None:
    with pytest.raises(ValueError, match="run_dirs is empty"):
        render_comparison([], "x.html")


def test_index_lists_runs_newest_first_with_verdicts(two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = two_runs
    render_run(second)
    no_result = materialise(tmp_path, "20251122-100000-crashed")
    (no_result / "result.json").unlink()
    shutil.rmtree(no_result / "analysis")
    os.utime(no_result, (0, 0))  # no recorded start: placed by its directory time, here the oldest
    (tmp_path / "not-a-run").mkdir()
    page = render_index(tmp_path)
    assert page == tmp_path / "index.html"
    html = page.read_text()
    rows = re.findall(r'<td><a href="([^"]+)/">', html)
    assert rows == [second.name, first.name, no_result.name]  # by started_ms from result.json, newest first
    assert f'<a href="{second.name}/report.html">report</a>' in html
    assert f"not rendered (testbed report {first.name})" in html
    assert re.search(rf"{first.name}.*status-fail.*1 failed.*1 unknown", html, re.S)
    assert "no result.json" in html
    assert len(html) < 20_000  # the index carries no chart bundle


def test_index_of_a_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="reports_root"):
        render_index(tmp_path / "absent")
