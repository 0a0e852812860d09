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


def _row(html: str, metric: str) -> list[tuple[str, str]]:
    """(class, text) of each cell of a metric's row, one per column."""
    row = re.search(rf'<tr class="[^"]*" id="row-{metric}">.*?</tr>', html, re.S).group(0)
    return re.findall(r'<td class="(num[^"]*|unknown)">([^<]*)</td>', row)


def test_comparison_has_metrics_as_rows_the_answer_first_and_marks_the_best(two_runs: tuple[Path, Path],
                                                                             tmp_path: Path) -> None:
    first, second = two_runs
    page = render_comparison([first, second], tmp_path / "compare" / "range-vs-coop.html")
    html = page.read_text()
    table = re.search(r'<table id="comparison-table".*?</table>', html, re.S).group(0)
    columns = re.findall(r"<th>(?:<a [^>]*>)?([\w-]+)(?:</a>)?</th>", table.split("</tr>")[0])
    assert columns == ["metric", first.name, second.name]
    rows = re.findall(r'<tr class="([^"]*)" id="row-(\w+)">', table)
    assert [name for _, name in rows][:6] == ["max_partition_pause_ms", "stop_the_world_ms", "duplicates_concurrent",
                                              "duplicates_redelivered", "lost_records", "revocations_live"]
    assert all(cls == "answer must-see" for cls, _ in rows[:6]) and "must-see" not in rows[6][0]
    assert _row(html, "duplicate_ownership_ms") == [("num", "8,400"), ("num best", "0")]
    assert _row(html, "throughput_mean_rps") == [("num best", "87.67"), ("num", "50")]  # higher is better
    assert _row(html, "lost_records") == [("num", "0"), ("unknown", "unknown: no ack log")]  # the only known: not best
    assert _row(html, "max_partition_pause_ms") == [("num", "11,400"), ("num", "11,400")]  # a tie is no one's best
    identity = re.search(r"<th scope=\"row\">assignor</th>(.*?)</tr>", table, re.S).group(1)
    assert re.findall(r"<td>([^<]*)</td>", identity) == ["range", "cooperative-sticky"]
    # every other metric is there too, as rows of a collapsed table
    others = re.search(r'<details id="other-metrics">.*?</details>', html, re.S).group(0)
    assert 'id="row-records_acked"' in others and 'id="row-broker_epoch_bumps"' in others


def test_comparison_draws_pauses_side_by_side_and_timelines_on_one_axis_from_the_first_bounce(
        two_runs: tuple[Path, Path], tmp_path: Path) -> None:
    from testbed.report.comparison_charts import comparison_origin, pause_distributions, stacked_timelines
    from testbed.report.inputs import load_run

    runs = [load_run(d) for d in two_runs]
    (two_runs[1] / "analysis/tables/partition_pauses.parquet").unlink()
    runs[1] = load_run(two_runs[1])
    fig, absent = pause_distributions(["range", "coop"], [[runs[0]], [runs[1]]])
    assert [t.name for t in fig.data] == ["range"] and sorted(fig.data[0].y)[-1] == 11400
    assert absent == [f"coop ({two_runs[1].name}): no analysis/tables/partition_pauses.parquet: analysis wrote no such "
                      "table (an older analysis: `testbed report` analyses the run again)"]
    origin = comparison_origin(runs[0])
    assert (origin.ms, origin.what) == (1763800020000, "first bounce")  # the fixture's bounce of m2 at 20 s
    timelines = stacked_timelines(["range", "coop"], runs)
    ranges = {tuple(t["figure"].layout.xaxis.range) for t in timelines}
    assert ranges == {(-19.0, 40.0)}  # first interval at 1 s, last end at 60 s: one axis for both
    assert timelines[0]["figure"].layout.xaxis.title.text == "s since first bounce"
    html = render_comparison(list(two_runs), tmp_path / "c.html").read_text()
    assert html.count('class="plotly-graph-div"') == 3  # one pause chart, a full-width timeline per run
    assert html.count('"displayModeBar": false') == 2  # no toolbar over the timelines


def test_trials_give_each_cell_its_interval_and_say_not_different(tmp_path: Path) -> None:
    from testbed.analysis.runs.trials import TrialsSummary, summarise_group
    from testbed.report.trials import render_trials

    def trials(label: str, pauses: list[int]) -> list[Path]:
        dirs = [materialise(tmp_path, f"{label}-{k}") for k in range(len(pauses))]
        for d, pause in zip(dirs, pauses):
            _edit_json(d / "analysis/metrics.json", lambda m, p=pause: m["metrics"]["max_partition_pause_ms"].update(value=p))
        return dirs

    groups = [summarise_group("range", {}, trials("range", [9000, 11400, 10000]), ["fail"] * 3),
              summarise_group("coop", {}, trials("coop", [1000, 1200, 9500]), ["pass"] * 3)]
    page = render_trials(TrialsSummary(scenario="s", repeat=3, judge="each", groups=groups), tmp_path / "t" / "summary.html")
    html = page.read_text()
    row = re.search(r'<tr class="answer must-see" id="row-max_partition_pause_ms">.*?</tr>', html, re.S).group(0)
    assert "10,000 [9,000, 11,400]" in row and "1,200 [1,000, 9,500]" in row and "n=3" in row
    assert row.endswith("<td>not different</td></tr>")  # [9000, 11400] and [1000, 9500] overlap
    assert "★" not in row and "best" not in row  # among trials the intervals decide, not a marked best
    assert html.count('class="plotly-graph-div"') == 3  # pauses of every trial pooled, the first trial's timelines
    assert "(interrupted" not in html
    cut = render_trials(TrialsSummary(scenario="s", repeat=3, judge="each", groups=groups, asked=5),
                        tmp_path / "cut" / "summary.html").read_text()
    assert "s: 3 trial(s) per configuration (interrupted: 5 asked)" in cut


def test_matrix_points_head_their_columns_and_runs_of_one_point_keep_their_names(two_runs: tuple[Path, Path],
                                                                                 tmp_path: Path) -> None:
    first, second = two_runs
    _edit_json(second / "result.json", lambda r: r.update(parameters={"members.main.assignors": ["cooperative-sticky"],
                                                                      "trial": 1}))
    html = render_comparison([first, second], tmp_path / "c.html").read_text()
    head = re.search(r'<table id="comparison-table".*?</tr>', html, re.S).group(0)
    assert f'<th>assignor=range<br><span class="defn">{first.name}</span></th>' in head
    assert f'<th>assignors=cooperative-sticky<br><span class="defn">{second.name}</span></th>' in head
    _edit_json(second / "result.json", lambda r: r.update(parameters={"assignor": "range"}))  # the same point twice
    html = render_comparison([first, second], tmp_path / "c.html").read_text()
    assert f"<th>{first.name}</th>" in html and f"<th>{second.name}</th>" in html


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


def test_the_index_reads_no_runs_tables(two_runs: tuple[Path, Path], tmp_path: Path, monkeypatch) -> None:
    """An index lists verdicts and identities: reading every table of every run made each run's end slower by 30 ms
    for every run already in the folder."""
    from testbed.report import inputs

    read: list[str] = []
    original = inputs._load_table
    monkeypatch.setattr(inputs, "_load_table", lambda run, name, metrics: read.append(name) or original(run, name,
                                                                                                        metrics))
    html = render_index(tmp_path).read_text()
    assert all(run.name in html for run in two_runs)
    assert read == []
    assert isinstance(inputs.load_run(two_runs[0]).tables["revocations"], inputs.Got) and read == ["revocations"]


def test_index_of_a_missing_root_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="reports_root"):
        render_index(tmp_path / "absent")


def test_a_comparison_says_beside_its_figures_which_trials_ran_on_a_saturated_host(tmp_path: Path) -> None:
    from testbed.analysis.runs.trials import TrialsSummary, summarise_group
    from testbed.report.trials import render_trials

    def trials(label: str, saturated_pct: list[float | None]) -> list[Path]:
        dirs = [materialise(tmp_path, f"{label}-{k}") for k in range(len(saturated_pct))]
        for d, share in zip(dirs, saturated_pct):
            if share is not None:
                _edit_json(d / "analysis/metrics.json", lambda m, s=share: m["metrics"].update(
                    host_saturated_pct={"value": s, "unit": "%"}, pauses_on_saturated_host={"value": 0, "unit": "count"}))
        return dirs

    groups = [summarise_group("old", {}, trials("old", [None, None]), ["pass"] * 2),  # saved before the sampler
              summarise_group("busy", {}, trials("busy", [40.0, 2.0, 35.0]), ["pass"] * 3)]
    html = render_trials(TrialsSummary(scenario="s", repeat=3, judge="each", groups=groups),
                         tmp_path / "t" / "summary.html").read_text()
    host = re.search(r'<tr id="host-row">.*?</tr>', html, re.S).group(0)
    assert re.findall(r"<td[^>]*>([^<]*)</td>", host)[:2] == [
        "unknown: no host samples (saved before the sampler existed)", "2 of 3 trial(s) on a saturated host"]
    note = re.search(r'<p class="unknown" id="host-saturated-note">(.*?)</p>', html, re.S).group(1)
    assert "busy: 2 of 3 trial(s) on a saturated host" in note and "old" not in note


def test_a_comparison_of_streams_runs_keeps_the_streams_answers_among_its_key_rows(two_runs: tuple[Path, Path],
                                                                                   tmp_path: Path) -> None:
    first, second = two_runs

    def streams(pause: int, promotions: int):
        def edit(data: dict) -> None:
            ms = data["metrics"]
            ms["streams_restorations"] = {"value": 2, "unit": "count"}
            ms["streams_task_pause_max_ms"] = {"value": pause, "unit": "ms"}
            ms["streams_standby_promotions"] = {"value": promotions, "unit": "count"}
        return edit

    _edit_json(first / "analysis/metrics.json", streams(46_000, 0))
    _edit_json(second / "analysis/metrics.json", streams(5_300, 2))
    html = render_comparison([first, second], tmp_path / "compare" / "streams.html").read_text()
    table = re.search(r'<table id="comparison-table".*?</table>', html, re.S).group(0)
    rows = [name for _, name in re.findall(r'<tr class="([^"]*)" id="row-(\w+)">', table)]
    key_end = rows.index("lag_max_records")  # the last of the consumer group's key rows
    assert rows[key_end + 1: key_end + 3] == ["streams_task_pause_max_ms", "streams_standby_promotions"]
    assert _row(html, "streams_task_pause_max_ms") == [("num", "46,000"), ("num best", "5,300")]
    assert _row(html, "streams_standby_promotions") == [("num", "0"), ("num best", "2")]  # more is better
