"""Series for the over-time charts, from the analysis's tables, bucketed so long runs stay light.

Throughput and lag come per second (``timeseries``) and are drawn in buckets of the same width the
analysis uses for latency (``latency_timeseries``, already bucketed: its percentiles need the batches).
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.records.latency_timeseries import bucket_seconds


def rates(timeseries: pd.DataFrame, origin_s: float) -> pd.DataFrame:
    """Records/s (mean per bucket) for processed, unique and produced; lag as the bucket's max.

    Columns: t (s since origin), processed, processed_unique, produced, lag, duplicates (null kept null).
    """
    ts = timeseries.sort_values("second")
    if ts.empty:
        return pd.DataFrame(columns=["t", "processed", "processed_unique", "produced", "lag", "duplicates"])
    width = bucket_seconds(int(ts["second"].max() - ts["second"].min()) + 1)
    bucket = (ts["second"] - ts["second"].min()) // width
    grouped = ts.groupby(bucket)
    out = pd.DataFrame({"t": grouped["second"].min().astype(float) - origin_s})
    for col in ("processed", "processed_unique", "produced", "duplicates"):
        values = pd.to_numeric(ts[col], errors="coerce")
        out[col] = values.groupby(bucket).sum(min_count=1) / width
    out["lag"] = pd.to_numeric(ts["lag"], errors="coerce").groupby(bucket).max()
    return out.reset_index(drop=True)


def latency_series(latency: pd.DataFrame, origin_ms: int) -> pd.DataFrame:
    """The ``latency_timeseries`` table on the chart's axis: columns t (s since origin), p50, p99, max."""
    latency = latency.sort_values("second")
    return pd.DataFrame({"t": latency["second"].to_numpy(dtype=float) - origin_ms / 1000,
                         "p50": latency["p50_ms"].to_numpy(), "p99": latency["p99_ms"].to_numpy(),
                         "max": latency["max_ms"].to_numpy()})
