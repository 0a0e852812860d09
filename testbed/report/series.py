"""Per-second series for the over-time charts, bucketed so long runs stay light.

Analysis tabulates throughput and lag per second (timeseries table) but not latency over time, so
per-second latency comes from the members' `processed` events: processing time minus the batch's
earliest produce time, the same upper bound analysis uses when it has no acks.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

MAX_POINTS = 1500  # per series; a 10-minute run (600 s) is drawn at full resolution


def bucket_seconds(span_s: int, max_points: int = MAX_POINTS) -> int:
    """Smallest whole-second bucket that keeps a span of ``span_s`` seconds under ``max_points`` points."""
    return max(1, -(-span_s // max_points))


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


def processed_latencies(member_logs: list[Path]) -> pd.DataFrame:
    """(ts_ms, latency_ms) of every processed batch that carries a produce time; torn last lines skipped."""
    ts: list[int] = []
    lat: list[int] = []
    for path in member_logs:
        with path.open("rb") as f:
            for raw in f:
                # Cheap pre-filter: most lines of a big history are processed events, but not all.
                if b'"processed"' not in raw or not raw.endswith(b"\n"):
                    continue
                event = json.loads(raw)
                produced = event.get("produce_ts_min_ms")
                if event.get("name") == "processed" and produced is not None:
                    ts.append(event["ts_ms"])
                    lat.append(event["ts_ms"] - produced)
    return pd.DataFrame({"ts_ms": np.asarray(ts, dtype="int64"), "latency_ms": np.asarray(lat, dtype="int64")})


def latency_percentiles(latencies: pd.DataFrame, origin_ms: int) -> pd.DataFrame:
    """p50/p99/max of batch latency per bucket; columns t (s since origin), p50, p99, max."""
    if latencies.empty:
        return pd.DataFrame(columns=["t", "p50", "p99", "max"])
    seconds = latencies["ts_ms"] // 1000
    width = bucket_seconds(int(seconds.max() - seconds.min()) + 1)
    bucket = (seconds - seconds.min()) // width * width + seconds.min()
    grouped = latencies["latency_ms"].groupby(bucket)
    out = pd.DataFrame({"p50": grouped.quantile(0.5), "p99": grouped.quantile(0.99), "max": grouped.max()})
    out["t"] = out.index.to_numpy(dtype=float) - origin_ms / 1000
    return out.reset_index(drop=True)[["t", "p50", "p99", "max"]]
