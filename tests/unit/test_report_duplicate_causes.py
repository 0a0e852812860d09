"""The report on the causes of duplicate processing: the headline names the main cause with what to change,
and a table gives each cause its count and first example (read from metrics.json and duplicate_processings)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from report_fixtures import materialise

from testbed.analysis.outputs import to_table
from testbed.analysis.records.duplicate_causes import CAUSES, metric_name
from testbed.report import render_run
from testbed.report.duplicate_words import cause_rows
from testbed.report.headline import headlines
from testbed.report.inputs import load_run


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return materialise(tmp_path)


def _set_metrics(run_dir: Path, **values: float | None) -> None:
    path = run_dir / "analysis/metrics.json"
    data = json.loads(path.read_text())
    for name, value in values.items():
        data["metrics"][name] = {"value": value, "unit": "records", **({} if value is not None else {"unknown": "why"})}
    path.write_text(json.dumps(data))


def _off_by_one_run(run_dir: Path) -> None:
    """10 re-deliveries of one record per hand-over below the commit, 2 unexplained; and their table rows."""
    counts = {metric_name(c): 0 for c in CAUSES}
    counts.update(duplicates_total=12, duplicates_redelivered=12, duplicates_commit_below_record=10,
                  duplicates_unexplained=2, duplicates_commit_gap_max=1)
    _set_metrics(run_dir, **counts)
    origin = load_run(run_dir).time_origin_ms()
    rows = [dict(topic="t", partition=3, first_offset=41, last_offset=41, records=1, member="m2", ts_ms=origin + 21_000,
                 cause="commit_below_record", previous_member="m1", previous_ts_ms=origin + 19_500, previous_end="revoked",
                 handover_ms=origin + 20_900, commit_ms=origin + 20_800, committed_offset=41, commit_gap=1),
            dict(topic="t", partition=4, first_offset=0, last_offset=1, records=2, member="m2", ts_ms=origin + 22_000,
                 cause="unexplained", previous_member="m1", previous_ts_ms=origin + 19_000, previous_end="revoked",
                 handover_ms=origin + 20_900, commit_ms=origin + 20_800, committed_offset=5)]
    pq.write_table(to_table("duplicate_processings", pd.DataFrame(rows)),
                   run_dir / "analysis/tables/duplicate_processings.parquet")


def _duplicates_sentence(run_dir: Path) -> str:
    return next(h for h in headlines(load_run(run_dir)) if h.key == "headline-duplicates").sentence


def test_the_headline_names_the_off_by_one_commit_and_what_to_change(run_dir: Path) -> None:
    _off_by_one_run(run_dir)
    said = _duplicates_sentence(run_dir)
    assert said.startswith("12 processing(s) repeated a record: 0 concurrent")
    assert ("Main cause: commits pointing at the last processed record, not the next (one record per hand-over) "
            "(10 of 12): commit the offset after the last processed record (offset + 1), not the record's own.") in said
    assert said.endswith("Besides: 2 re-deliveries the history does not explain.")
    assert "after a revoke or death without a commit" not in said


def test_a_larger_gap_is_not_called_off_by_one(run_dir: Path) -> None:
    _off_by_one_run(run_dir)
    _set_metrics(run_dir, duplicates_commit_gap_max=7)
    said = _duplicates_sentence(run_dir)
    assert "Main cause: commits pointing below the processed records (10 of 12)" in said
    assert "offset + 1), not the record's own" not in said


def test_the_table_gives_each_cause_its_count_and_first_example(run_dir: Path) -> None:
    _off_by_one_run(run_dir)
    rows = cause_rows(load_run(run_dir))["rows"]
    assert [(r["cause"], r["records"]) for r in rows] == [("commit_below_record", 10), ("unexplained", 2)]
    assert rows[0]["example"] == ("t-3 offset 41: processed by m1 at 19.5 s, again by m2 at 21.0 s; m1's last commit "
                                  "before the hand-over was offset 41: reading resumed there")
    page = render_run(run_dir).read_text()
    assert 'id="duplicate-causes-table"' in page and "t-4 offsets 0–1" in page
    assert 'href="#duplicate-causes"' in page


def test_unknown_causes_are_said_unknown_never_zero(run_dir: Path) -> None:
    _off_by_one_run(run_dir)
    _set_metrics(run_dir, duplicates_commit_failed=None)
    assert _duplicates_sentence(run_dir).endswith("Their causes are unknown (why).")
    assert cause_rows(load_run(run_dir)) == {"missing": "the causes of duplicate processing are unknown: why"}


def test_an_older_analysis_with_only_concurrent_duplicates_still_names_them(run_dir: Path) -> None:
    # The fixture's metrics.json predates the causes: 20 concurrent, none re-delivered.
    said = _duplicates_sentence(run_dir)
    assert "Main cause: two members processing one partition at once (a zombie) (20 of 20)" in said
