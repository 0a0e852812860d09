"""Pure pieces of the report: harness markers, definitions, bucketing, formatting."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.records.latency_timeseries import bucket_seconds
from testbed.history.events import MARKS, SPANS, Action
from testbed.report.charts import MARK_STYLE
from testbed.analysis.catalog import CATALOG
from testbed.report.definitions import KEY_METRICS, METRIC_DEFINITIONS, definition
from testbed.report.inputs import HarnessMark, harness_marks
from testbed.report.page import format_number
from testbed.report.series import latency_series, rates


def test_every_catalogued_metric_has_a_definition() -> None:
    assert set(CATALOG) - set(METRIC_DEFINITIONS) == set()
    assert set(KEY_METRICS) <= set(CATALOG)
    assert definition("brand_new_metric").startswith("no definition recorded")


def test_harness_marks_pair_spans_per_target_and_keep_open_ones() -> None:
    actions = [
        {"kind": Action.BOUNCE_START, "ts_ms": 100, "target": "a"},
        {"kind": Action.BOUNCE_START, "ts_ms": 150, "target": "b"},
        {"kind": Action.MEMBER_KILL, "ts_ms": 160, "target": "b"},
        {"kind": Action.BOUNCE_END, "ts_ms": 300, "target": "b"},
        {"kind": Action.BOUNCE_END, "ts_ms": 200, "target": "a"},
        {"kind": Action.MEMBER_PAUSE, "ts_ms": 400, "target": "c"},  # never resumed
        {"kind": Action.STEP_START, "ts_ms": 10, "target": "x"},  # not a marker
    ]
    assert harness_marks(actions) == [
        HarnessMark(Action.BOUNCE_START, "a", 100, 200),
        HarnessMark(Action.BOUNCE_START, "b", 150, 300),
        HarnessMark(Action.MEMBER_KILL, "b", 160),
        HarnessMark(Action.MEMBER_PAUSE, "c", 400, None),
    ]


def test_every_marked_action_has_a_style() -> None:
    assert set(MARK_STYLE) == set(SPANS) | MARKS


def test_rates_keep_full_resolution_for_ten_minutes_and_bucket_longer_runs() -> None:
    assert bucket_seconds(600) == 1 and bucket_seconds(3000) == 2 and bucket_seconds(1) == 1
    n = 3000
    ts = pd.DataFrame({"second": range(1000, 1000 + n), "processed": [10] * n, "processed_unique": [10] * n,
                       "produced": [pd.NA] * n, "lag": list(range(n)), "duplicates": [0] * n})
    out = rates(ts, origin_s=1000)
    assert len(out) == 1500
    assert (out["processed"] == 10).all()  # mean records/s, not the bucket's sum
    assert out["lag"].iloc[0] == 1  # max within the bucket
    assert out["produced"].isna().all()  # unknown stays unknown, never 0


def test_latency_series_is_the_analysis_table_on_the_chart_axis() -> None:
    table = pd.DataFrame({"second": [3, 1], "width_s": [1, 1], "batches": [1, 3], "p50_ms": [99.0, 20.0],
                          "p99_ms": [99.0, 29.8], "max_ms": [99, 30]})
    out = latency_series(table, origin_ms=1000)
    assert list(out["t"]) == [0.0, 2.0]
    assert list(out["p50"]) == [20.0, 99.0] and list(out["p99"]) == [29.8, 99.0] and list(out["max"]) == [30, 99]


def test_format_number() -> None:
    assert format_number(None) == "—" and format_number(0) == "0" and format_number(12345) == "12,345"
    assert format_number(87.666) == "87.67" and format_number(0.01234) == "0.0123" and format_number(True) == "yes"
