"""render_run on fixed analysis outputs (tests/unit/report_fixtures): content, offline page, missing pieces."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from plotly.offline import get_plotlyjs
from report_fixtures import materialise

from testbed.report import render_run
from testbed.report.charts import over_time, ownership_timeline, partition_pause_figures
from testbed.report.inputs import load_run
from testbed.report.page import plotly_js


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return materialise(tmp_path)


def _row(html: str, metric: str) -> str:
    match = re.search(rf'<tr id="metric-{metric}"><td><code>{metric}</code></td>.*?</tr>', html, re.S)
    assert match, f"no metrics-table row for {metric}"
    return match.group(0)


def test_report_is_written_in_the_run_dir_and_works_offline(run_dir: Path) -> None:
    page = render_run(run_dir)
    assert page == run_dir / "report.html"
    html = page.read_text()
    bundle = plotly_js()
    assert html.count(bundle) == 1, "plotly.js must be inlined exactly once"
    rest = html.replace(bundle, "")
    assert get_plotlyjs()[:200] not in rest
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", rest), "no external resource: the page works offline"
    assert html.count('class="plotly-graph-div"') == 6


def test_verdict_banner_names_failed_and_unknown_expectations(run_dir: Path) -> None:
    html = render_run(run_dir).read_text()
    banner = re.search(r'<div class="banner status-(\w+)" id="verdict">(.*?)</div>', html, re.S)
    assert banner and banner.group(1) == "fail"
    assert "duplicate_ownership_ms == 0 (measured 8400)" in banner.group(2)
    assert "e2e_latency_bounce_p99_ms &lt;= 5000: unknown (no record processed inside a bounce window)" in banner.group(2)
    assert "no_concurrent_duplicates: invalid (20)" in banner.group(2)
    assert "lost_records == 0" not in banner.group(2), "a passed expectation is not a failure"


def test_a_run_that_stopped_early_says_it_is_partial_whatever_its_verdict(run_dir: Path) -> None:
    result = json.loads((run_dir / "result.json").read_text())
    result.update(partial=True, outcome="fail", reason="the group did not settle after the program crashed")
    (run_dir / "result.json").write_text(json.dumps(result))
    banner = re.search(r'<div class="banner status-(\w+)" id="verdict">(.*?)</div>', render_run(run_dir).read_text(),
                       re.S)
    assert banner and banner.group(1) == "fail"
    assert "FAIL: " in banner.group(2) and "(partial: the run stopped before its end" in banner.group(2)
    assert "the group did not settle after the program crashed" in banner.group(2)


def test_unknown_metrics_say_why_and_never_show_zero(run_dir: Path) -> None:
    html = render_run(run_dir).read_text()
    row = _row(html, "e2e_latency_bounce_p99_ms")
    assert "unknown: no record processed inside a bounce window" in row
    assert not re.search(r'class="num">0<', row)
    known = _row(html, "lost_records")
    assert 'class="num">0<' in known and "acked records never processed" in known  # definition at hand
    assert "✘ duplicate_ownership_ms == 0" in _row(html, "duplicate_ownership_ms")


def test_ownership_timeline_draws_every_interval_and_duplicate_episode(run_dir: Path) -> None:
    fig = ownership_timeline(load_run(run_dir))
    by_name = {t.name: t for t in fig.data}
    assert set(by_name) == {"m1", "m2", "m3", "duplicate ownership"}
    assert sum(len(by_name[m].y) for m in ("m1", "m2", "m3")) == 14  # every interval in tables.json
    assert list(by_name["duplicate ownership"].customdata) == ["m1,m3", "m2,m3"]
    shapes = {(s.type, s.name) for s in fig.layout.shapes}
    assert {("rect", "bounce"), ("rect", "member paused"), ("line", "member stopped"), ("line", "member started")} <= shapes
    bounce = next(s for s in fig.layout.shapes if s.name == "bounce")
    assert (bounce.x0, bounce.x1) == (20.0, 25.5)  # seconds since run start


def test_pause_figures_show_single_pauses_by_cause_and_keep_the_open_one(run_dir: Path) -> None:
    by_cause, per_episode = partition_pause_figures(load_run(run_dir))
    lengths = {trace.name: sorted(trace.x) for trace in by_cause.data}
    # m3's freeze stalled t-4 and t-5 for 11.3 s and 11.4 s; t-4's pause after its loss never resumed and
    # is shown with its length up to the drain's end (9300 ms), not dropped.
    assert lengths == {"rebalance": [400, 600, 700, 700, 800, 800, 9300], "member_freeze": [11300, 11400]}
    assert sorted(set(per_episode.data[0].x)) == ["episode 1", "episode 2", "episode 3", "episode 4"]


def test_sections_scenario_members_episodes_and_relative_links(run_dir: Path) -> None:
    html = render_run(run_dir).read_text()
    assert "name: pause-past-session-timeout" in html
    members = re.search(r'<table id="members-table">.*?</table>', html, re.S).group(0)
    assert members.count("confluent-kafka") == 3 and "on_revoke" in members
    episodes = re.search(r'<table id="episodes-table">.*?</table>', html, re.S).group(0)
    assert episodes.count("<tr><td>") == 5 and "no broker line" in episodes
    hrefs = re.findall(r'<a href="([^"]+)"', re.search(r'<ul id="raw-links">.*?</ul>', html, re.S).group(0))
    assert {"history/harness.jsonl", "history/members/m1.jsonl", "brokers/broker-1.log", "load/report.html",
            "history/acks/producer-0.jsonl", "scenario.yaml"} <= set(hrefs)
    assert all((run_dir / h).is_file() for h in hrefs)


def test_failed_analysis_renders_not_available_sections(run_dir: Path) -> None:
    shutil.rmtree(run_dir / "analysis")
    html = render_run(run_dir).read_text()
    assert "not available: no analysis/metrics.json: analysis did not run or failed" in html
    assert "not available: no analysis/tables/ownership_intervals.parquet: analysis failed or did not run" in html
    assert 'class="plotly-graph-div"' not in html
    # Member specs fall back to the members' own started events.
    assert re.search(r'<table id="members-table">.*m3.*</table>', html, re.S)
    assert 'status-fail" id="verdict"' in html
    assert "FAIL: " in html and "(judged on an analysis no longer in the run&#39;s folder: no analysis/metrics.json" in html


def test_a_verdict_reached_without_an_analysis_does_not_claim_one(run_dir: Path) -> None:
    shutil.rmtree(run_dir / "analysis")
    result = json.loads((run_dir / "result.json").read_text())
    result.update(analysis_error="analysis failed: boom")
    (run_dir / "result.json").write_text(json.dumps(result))
    assert "judged on an analysis" not in render_run(run_dir).read_text()


def test_no_result_no_load_and_a_table_with_a_missing_column(run_dir: Path) -> None:
    import pyarrow.parquet as pq

    (run_dir / "result.json").unlink()
    shutil.rmtree(run_dir / "load")
    table = run_dir / "analysis/tables/timeseries.parquet"
    pq.write_table(pq.read_table(table).drop_columns(["lag"]), table)
    html = render_run(run_dir).read_text()
    assert 'status-unknown" id="verdict"' in html and "no result.json" in html
    assert "Locust report" not in html
    assert "timeseries.parquet lacks column(s) lag" in html


def test_garbled_metrics_json_is_reported_not_fatal(run_dir: Path) -> None:
    (run_dir / "analysis/metrics.json").write_text(json.dumps({"schema_version": 1}))
    html = render_run(run_dir).read_text()
    assert "not available: analysis/metrics.json has no &#39;metrics&#39; object" in html


def test_not_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="run_dir .* is not a directory"):
        render_run(tmp_path / "nope")


def test_markers_and_latency_come_from_the_analysis_tables_not_the_history(run_dir: Path) -> None:
    for raw in ("history/harness.jsonl", "history/members"):  # what the report used to parse
        shutil.rmtree(run_dir / raw) if (run_dir / raw).is_dir() else (run_dir / raw).unlink()
    out = load_run(run_dir)
    assert {s.name for s in ownership_timeline(out).layout.shapes} >= {"bounce", "member paused", "member stopped"}
    latency = {t.name: t for t in over_time(out).data if t.name.startswith("latency")}
    assert set(latency) == {"latency p50", "latency p99", "latency max"}
    assert list(latency["latency p99"].y[:2]) == [79.5, 79.5] and latency["latency max"].x[0] == 2.0


def test_a_run_analysed_before_the_latency_and_harness_tables_says_what_is_missing(run_dir: Path) -> None:
    (run_dir / "analysis/tables/latency_timeseries.parquet").unlink()
    (run_dir / "analysis/tables/harness_actions.parquet").unlink()
    out = load_run(run_dir)
    assert ownership_timeline(out).layout.shapes == ()  # no markers rather than markers read from the history
    fig = over_time(out)
    assert not [t for t in fig.data if t.name.startswith("latency")]
    assert {t.name for t in fig.data} >= {"processed", "lag"}  # throughput and lag still drawn
    note = " ".join(a.text for a in fig.layout.annotations)
    assert "latency not available: no analysis/tables/latency_timeseries.parquet: analysis wrote no such table" in note
    assert "`testbed report` analyses the run again" in note


def test_a_run_with_many_partitions_gets_the_density_view_holding_all_owned_time(run_dir: Path, monkeypatch) -> None:
    import numpy as np

    from testbed.report import charts

    monkeypatch.setattr(charts, "TIMELINE_MAX_ROWS", 2)  # the fixture's partitions then fill 2 rows of blocks
    out = load_run(run_dir)
    owners = out.table("ownership_intervals")
    fig = ownership_timeline(out)
    heat, *rest = fig.data
    assert heat.type == "heatmap" and len(heat.y) == 2
    assert [t.name for t in rest] == ["duplicate ownership"]
    # every owned millisecond is in the cells: share x partitions in the row x bin width, summed, per row
    keys = owners[["topic", "partition"]].drop_duplicates().sort_values(["topic", "partition"])
    per_row = -(-len(keys) // 2)
    bin_s = float(heat.x[1] - heat.x[0])
    for row, block in enumerate([keys.iloc[:per_row], keys.iloc[per_row:]]):
        mine = owners.merge(block, on=["topic", "partition"])
        owned_s = ((mine["end_ms"] - mine["start_ms"]) / 1000).sum()
        assert np.isclose(np.sum(heat.z[row]) * len(block) * bin_s, owned_s, rtol=0.01)
    assert len({s.name for s in fig.layout.shapes} & {"bounce", "member stopped"}) == 2


def test_instants_of_one_kind_close_together_draw_one_line(run_dir: Path) -> None:
    from testbed.report.charts import MARK_RESOLUTION, add_harness_marks
    from testbed.report.inputs import HarnessMark
    import plotly.graph_objects as go

    from testbed.history.events import Action

    fig = go.Figure()
    starts = [HarnessMark(kind=Action.MEMBER_START, start_ms=1_000 + i // 10, end_ms=None, target=f"m{i}")
              for i in range(1000)]
    add_harness_marks(fig, [*starts, HarnessMark(kind=Action.MEMBER_START, start_ms=90_000, end_ms=None, target="x")],
                      origin_ms=0, run_end_s=100.0)
    # 1,000 starts within 0.1 s, under 1/MARK_RESOLUTION of the 100 s run: one line; a start later: its own
    assert 100.0 / MARK_RESOLUTION == 0.2 and [s.x0 for s in fig.layout.shapes] == [1.0, 90.0]


def _empty_table(run_dir: Path, name: str, keep=None) -> None:
    """Rewrite a table of the fixture with only the rows ``keep`` selects (none by default), schema unchanged."""
    import pyarrow.parquet as pq

    from testbed.analysis.outputs import SCHEMAS, to_table

    path = run_dir / "analysis" / "tables" / f"{name}.parquet"
    frame = pq.read_table(path).to_pandas() if path.exists() else SCHEMAS[name].empty_table().to_pandas()
    pq.write_table(to_table(name, frame[keep(frame)] if keep is not None else frame.iloc[0:0]), path)


def test_a_run_without_pauses_episodes_or_revocations_says_so_in_one_line_each(run_dir: Path) -> None:
    _empty_table(run_dir, "partition_pauses", keep=lambda f: f["kind"] != "pause")  # its start-up waits stay
    _empty_table(run_dir, "rebalance_episodes")
    _empty_table(run_dir, "revocations")
    html = render_run(run_dir).read_text()
    assert html.count('class="plotly-graph-div"') == 2, "only the ownership timeline and the run over time"
    pauses = re.search(r'<h2 id="pauses">.*?<h2 id="over-time">', html, re.S).group(0)
    assert pauses.count('<p class="none-found">') == 1 and "<h3>" not in pauses
    assert "None: no partition paused in this run" in pauses
    broker = re.search(r'<h2 id="broker">.*?<details', html, re.S).group(0)
    assert "None: no rebalance episode in this run" in broker and "episodes-table" not in broker
    assert "None: no revocation in this run" in html and '<div class="missing">' not in html


def test_a_share_run_without_a_delivery_says_so_once(run_dir: Path) -> None:
    metrics = json.loads((run_dir / "analysis/metrics.json").read_text())
    metrics["config"]["group_kinds"] = ["share"]
    (run_dir / "analysis/metrics.json").write_text(json.dumps(metrics))
    for table in ("share_delivery_counts", "share_timeline"):
        _empty_table(run_dir, table)
    html = render_run(run_dir).read_text()
    share = re.search(r'<h2 id="share-timeline">.*?<details', html, re.S).group(0)
    assert share.count("None: no share-group member acquired a record in this run.") == 1
    assert "Delivery counts" not in share and 'class="plotly-graph-div"' not in share


def test_the_hosts_samples_share_the_runs_time_axis_and_a_run_without_them_says_its_host_is_unknown(
        run_dir: Path) -> None:
    import pandas as pd
    import pyarrow.parquet as pq

    from testbed.analysis.host import SCHEMA
    from testbed.analysis.outputs import to_table

    figure = over_time(load_run(run_dir))  # the fixture's analysis predates the sampler: no host_samples table
    assert not [t for t in figure.data if (t.name or "").startswith("host")]
    assert any("host unknown: no analysis/tables/host_samples.parquet" in a.text for a in figure.layout.annotations)
    start = 1763800000000
    rows = [{"ts_ms": start + t, "interval_ms": 250, "cores": 2, "run_queue": 1, "cpu_busy_pct": busy,
             "saturated": busy >= 95, "saturated_by": "cpu_busy" if busy >= 95 else None,
             **{c: 1.0 for c in SCHEMA.names if c.endswith("_pct") and c != "cpu_busy_pct"}}
            for t, busy in ((250, 40.0), (500, 99.0), (750, 98.0), (1000, 30.0))]
    pq.write_table(to_table("host_samples", pd.DataFrame(rows)), run_dir / "analysis/tables/host_samples.parquet")
    figure = over_time(load_run(run_dir))
    busy = next(t for t in figure.data if t.name == "host CPU busy")
    assert list(busy.x) == [0.25, 0.5, 0.75, 1.0] and busy.yaxis == "y4"  # seconds since the run's start, row 4
    marked = next(t for t in figure.data if t.name == "host saturated")
    assert list(marked.x) == [0.5, 0.75]


def test_a_result_saved_before_the_redelivery_checker_took_its_metrics_name_renders_under_it(run_dir: Path) -> None:
    result = json.loads((run_dir / "result.json").read_text())
    result["checks"].append({"checker": "redelivery", "status": "invalid", "message": "3 records re-delivered",
                             "count": 3, "examples": []})
    (run_dir / "result.json").write_text(json.dumps(result))
    html = render_run(run_dir).read_text()
    assert "duplicates_redelivered: invalid (3)" in html and "redelivery: invalid" not in html


def test_the_columns_the_report_needs_are_held_against_the_analysiss_schemas() -> None:
    from testbed.analysis.catalog import SCHEMAS
    from testbed.report.inputs import TABLE_COLUMNS, _needed

    assert all(set(columns) <= set(SCHEMAS[name].names) for name, columns in TABLE_COLUMNS.items())
    with pytest.raises(ValueError, match="timeseries: no column"):
        _needed({"timeseries": ("second", "lag_records")})  # a column the analysis renamed
    with pytest.raises(ValueError, match="does not write"):
        _needed({"time_series": ("second",)})
