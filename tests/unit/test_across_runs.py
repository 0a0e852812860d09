"""Runs under a folder as one table (one Spark job), and changes between testbed revisions judged by the trials'
intervals; the trends page drawn from them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.runs.across_runs import changes, collect_runs, find_runs
from testbed.report.trends import render_trends


def _run(root: Path, name: str, *, started: int, revision: str | None, pause: float | None, trial: int = 1,
         point: dict | None = None, analysed: bool = True, scenario: str = "bounce") -> Path:
    run = root / name
    (run / "analysis").mkdir(parents=True)
    result = {"scenario": scenario, "run_dir": str(run), "status": "pass", "started_ms": started,
              "parameters": {**(point or {}), "trial": trial}}
    if revision is not None:
        result["testbed_revision"] = revision
    (run / "result.json").write_text(json.dumps(result))
    (run / "scenario.yaml").write_text("name: bounce\ncluster:\n  kafka_version: 4.3.1\n")
    if analysed:
        (run / "analysis" / "metrics.json").write_text(json.dumps({
            "config": {"protocol": "cooperative", "members": {
                "m0": {"client": "confluent-kafka", "client_version": "2.16.1"},
                "m1": {"client": "java", "client_version": "4.1.1"}}},
            "metrics": {"max_partition_pause_ms": {"value": pause, "unit": "ms"},
                        "lost_records": {"value": 0, "unit": "records"}}}))
    return run


def test_one_row_per_run_with_what_ran_and_every_figure(spark, tmp_path: Path) -> None:  # noqa: F811
    _run(tmp_path, "a", started=1000, revision="abc", pause=1200.0, point={"assignor": "range"})
    _run(tmp_path / "bench", "b", started=2000, revision=None, pause=None, trial=2)
    _run(tmp_path, "c", started=3000, revision="abc", pause=None, analysed=False)
    _run(tmp_path, "e[1],{x}", started=4000, revision="abc", pause=7.0)  # glob characters in a name: no pattern
    (tmp_path / "not-a-run").mkdir()
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "result.json").write_text("{torn")
    assert [p.relative_to(tmp_path).as_posix() for p in find_runs(tmp_path)] == ["a", "bench/b", "c", "d", "e[1],{x}"]
    table = collect_runs(spark, tmp_path)
    rows = {r["run"]: r for r in table.to_dict("records")}
    assert set(rows) == {"a", "bench/b", "c", "d", "e[1],{x}"}
    assert rows["e[1],{x}"]["max_partition_pause_ms"] == 7.0
    a = rows["a"]
    assert (a["scenario"], a["point"], a["trial"], a["testbed_revision"], a["kafka_version"], a["clients"],
            a["protocol"], a["max_partition_pause_ms"], a["lost_records"]) == (
        "bounce", "assignor=range", 1, "abc", "4.3.1", "confluent-kafka 2.16.1, java 4.1.1", "cooperative", 1200.0, 0)
    assert rows["bench/b"]["testbed_revision"] == "unknown" and pd.isna(rows["bench/b"]["max_partition_pause_ms"])
    assert pd.isna(rows["c"]["lost_records"])  # never analysed: unknown, not zero
    assert "result.json: JSONDecodeError" in rows["d"]["problems"]
    assert list(table["run"][:3]) == ["a", "bench/b", "c"]  # in order of start


def _table(values: dict[str, list[float]]) -> pd.DataFrame:
    rows, t = [], 0
    for revision, pauses in values.items():
        for trial, pause in enumerate(pauses, start=1):
            t += 1
            rows.append({"run": f"{revision}-{trial}", "scenario": "bounce", "point": "", "trial": trial,
                         "started_ms": t, "testbed_revision": revision, "max_partition_pause_ms": pause,
                         "throughput_mean_rps": 100.0})
    return pd.DataFrame(rows)


def test_a_change_is_two_revisions_whose_intervals_do_not_overlap() -> None:
    found = changes(_table({"r1": [1000, 1100, 1200], "r2": [1150, 1300, 1250], "r3": [3000, 3100, 3300]}),
                    ["max_partition_pause_ms", "throughput_mean_rps"])
    # r1 -> r2 overlap (1150-1200): noise; r2 -> r3 apart
    assert found[["from_revision", "to_revision", "metric", "direction"]].values.tolist() == [
        ["r2", "r3", "max_partition_pause_ms", "higher"]]
    assert found.iloc[0][["from_median", "from_low", "from_high", "to_median"]].tolist() == [1250, 1150, 1300, 3100]


def test_too_few_trials_are_not_judged() -> None:
    assert changes(_table({"r1": [1000, 1000], "r2": [5000, 5000, 5000]}), ["max_partition_pause_ms"]).empty


def test_trends_page_says_worse_for_a_key_figure_and_draws_its_chart(tmp_path: Path) -> None:
    table = _table({"r1": [1000, 1100, 1200], "r2": [3000, 3100, 3300]})
    table = table.assign(protocol="eager", clients="", kafka_version="4.3.1", status="pass", problems=None)
    page = render_trends(table, changes(table, ["max_partition_pause_ms"]), tmp_path / "trends.html", "Runs")
    html = page.read_text()
    assert "<td>worse</td>" in html and "<code>max_partition_pause_ms</code>" in html
    assert html.count('class="plotly-graph-div"') == 2  # the pause and the throughput over time
