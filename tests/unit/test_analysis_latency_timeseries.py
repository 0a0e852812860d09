"""The latency_timeseries and harness_actions tables: what the report's over-time chart and markers read."""

from __future__ import annotations

import pandas as pd
import pytest

from histories import scenarios
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis import analyse
from testbed.analysis.records.latency_timeseries import COLUMNS, SERIES_POINTS, bucket_seconds, latency_timeseries


def test_bucket_width_keeps_series_under_the_point_budget() -> None:
    assert bucket_seconds(1) == 1 and bucket_seconds(SERIES_POINTS) == 1
    assert bucket_seconds(SERIES_POINTS + 1) == 2 and bucket_seconds(3000) == 2 and bucket_seconds(3001) == 3


def test_analysis_writes_batch_latency_percentiles_per_second(tmp_path, spark) -> None:  # noqa: F811
    root = scenarios.latency_over_time(tmp_path)
    analyse(root, spark=spark)
    table = pd.read_parquet(root / "analysis" / "tables" / "latency_timeseries.parquet")
    assert list(table.columns) == COLUMNS
    assert table[["second", "width_s", "batches", "max_ms"]].values.tolist() == [[2, 1, 4, 40], [4, 1, 1, 100]]
    assert table["p50_ms"].tolist() == [25.0, 100.0]
    assert table["p99_ms"].tolist() == pytest.approx([39.7, 100.0])

    actions = pd.read_parquet(root / "analysis" / "tables" / "harness_actions.parquet")
    assert actions[["ts_ms", "kind", "target"]].values.tolist() == [
        [0, "run_start", None], [3000, "member_pause", "A"], [3600, "member_resume", "A"],
        [5000, "drain_end", None], [6000, "run_end", None]]
    assert actions["detail"][1] == '{"session_timeout_ms":45000}'


def test_a_long_run_is_bucketed_and_its_percentiles_taken_over_each_bucket(spark) -> None:  # noqa: F811
    # 3001 s of processing: 3-second buckets from the first second; the first holds seconds 1000-1002.
    seconds_latency = [(1000, 1), (1001, 2), (1002, 3), (1003, 50), (4000, 9)]
    batches = spark.createDataFrame([(s * 1000 + 500, s * 1000 + 500 - lat) for s, lat in seconds_latency]
                                    + [(1001_700, None)], "ts long, pmin long")
    table = latency_timeseries(batches)
    assert table[["second", "width_s", "batches", "max_ms"]].values.tolist() == [
        [1000, 3, 3, 3], [1003, 3, 1, 50], [4000, 3, 1, 9]]
    assert table["p50_ms"].tolist() == [2.0, 50.0, 9.0]
    assert table["p99_ms"].tolist() == pytest.approx([2.98, 50.0, 9.0])


def test_no_produce_times_give_an_empty_table(spark) -> None:  # noqa: F811
    table = latency_timeseries(spark.createDataFrame([(1000, None)], "ts long, pmin long"))
    assert table.empty and list(table.columns) == COLUMNS
