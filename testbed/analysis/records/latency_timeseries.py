"""End-to-end latency over time: percentiles of the processed batches' latency per time bucket.

A batch's latency is its processing time minus its earliest produce time (``produce_ts_min_ms``): the
upper bound of its records' latencies, known with or without acks. Buckets are one second wide unless
the run is longer than ``SERIES_POINTS`` seconds; then they widen so the series keeps at most that many
points (percentiles of a wider bucket cannot be rebuilt from per-second ones, so they are computed here).
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SERIES_POINTS = 1500  # a 25-minute run is kept per second
COLUMNS = ["second", "width_s", "batches", "p50_ms", "p99_ms", "max_ms"]


def bucket_seconds(span_s: int, max_points: int = SERIES_POINTS) -> int:
    """Smallest whole-second bucket that keeps a span of ``span_s`` seconds under ``max_points`` points."""
    return max(1, -(-span_s // max_points))


def latency_timeseries(batches: DataFrame) -> pd.DataFrame:
    """One row per bucket that processed a batch with a produce time: ``second`` (epoch second the bucket
    starts at), ``width_s``, ``batches``, and the batches' latency ``p50_ms``, ``p99_ms`` (interpolated
    between closest ranks) and ``max_ms``. ``batches`` as from ``record_stats.processed_batches``."""
    timed = batches.filter(F.col("pmin").isNotNull()).select(
        (F.col("ts") / 1000).cast("long").alias("s"), (F.col("ts") - F.col("pmin")).alias("latency"))
    span = timed.agg(F.min("s").alias("first"), F.max("s").alias("last")).first()
    if span is None or span["first"] is None:
        return pd.DataFrame(columns=COLUMNS)
    first = int(span["first"])
    width = bucket_seconds(int(span["last"]) - first + 1)
    bucket = (F.floor((F.col("s") - first) / width) * width + first).cast("long")
    rows = (timed.groupBy(bucket.alias("second"))
            .agg(F.count(F.lit(1)).alias("batches"), F.percentile("latency", [0.5, 0.99]).alias("pct"),
                 F.max("latency").alias("max_ms"))
            .orderBy("second").collect())
    return pd.DataFrame(
        [(r["second"], width, r["batches"], r["pct"][0], r["pct"][1], r["max_ms"]) for r in rows], columns=COLUMNS)
