"""Availability gaps: partition pauses and group stop-the-world, independent of callbacks.

A partition is paused while at least one acknowledged record of it waits (produced, not yet processed
by anyone) and nobody processes it: from the later of its last processing and the produce time of the
first waiting record, to its next processing by any member. The same sweep over all partitions at once
gives the group's stop-the-world. Only the processing instants and, per instant, the earliest produce
time of the records first processed there are needed, so the heavy part stays in Spark and only the
gaps reach the driver.

With a run's ack logs every record's produce time is exact; without them the produce times of
processed batches (``produce_ts_min_ms``) stand in and records never processed are invisible.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .record_stats import NEVER

GAP_COLUMNS = ["topic", "partition", "kind", "start_ms", "end_ms", "pause_ms", "open", "last_member",
               "resumed_member"]


@dataclass(frozen=True)
class GapSettings:
    """``min_pause_ms``: shorter gaps are ordinary polling, not pauses (``AnalysisSettings.min_pause_ms``).
    ``cutoff_ms``: the end of the final drain; a gap still open there is reported open, never dropped."""

    min_pause_ms: int
    cutoff_ms: int


def availability_gaps(batches: DataFrame, firsts: DataFrame, settings: GapSettings, *, per_partition: bool) -> pd.DataFrame:
    """Every gap of at least ``min_pause_ms`` (kind ``pause``), every partition's wait before its first
    processing (``startup``, any length) and every gap open at the cutoff (``open`` true), as a frame
    with :data:`GAP_COLUMNS` (topic and partition null when ``per_partition`` is false). ``firsts``: per
    partition and first-processing instant ``t`` (``NEVER``: not processed by the cutoff), the earliest
    produce time ``w`` of the records first processed then (``record_stats.first_waits``)."""
    keys = ["topic", "partition"] if per_partition else []
    cutoff = settings.cutoff_ms
    instants = (batches.filter(F.col("ts") <= cutoff)
                .groupBy(*keys, F.col("ts").alias("t")).agg(F.min("member").alias("member"))
                .withColumn("w", F.lit(None).cast("long")))
    if not per_partition:
        firsts = firsts.groupBy("t").agg(F.min("w").alias("w"))
    firsts = firsts.withColumn("member", F.lit(None).cast("string"))
    points = instants.unionByName(firsts).groupBy(*keys, "t").agg(F.min("w").alias("w"), F.min("member").alias("member"))
    by_key = Window.partitionBy(*keys) if keys else Window.partitionBy(F.lit(0))
    later = by_key.orderBy(F.desc("t")).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    earlier = by_key.orderBy("t")
    points = (points.withColumn("waiting_since", F.min("w").over(later))  # earliest produce of records not processed before t
              .withColumn("prev", F.lag("t").over(earlier))
              .withColumn("prev_member", F.lag("member").over(earlier)))
    is_open = F.col("t") == NEVER
    end = F.when(is_open, F.lit(cutoff)).otherwise(F.col("t"))
    start = F.when(F.col("prev").isNull(), F.col("waiting_since")).otherwise(F.greatest("prev", "waiting_since"))
    kind = F.when(F.col("prev").isNull(), F.lit("startup")).otherwise(F.lit("pause"))
    gaps = points.filter(F.col("waiting_since").isNotNull() & (F.col("waiting_since") < end)).select(
        *[F.col(k) for k in keys], kind.alias("kind"), start.alias("start_ms"), end.alias("end_ms"),
        is_open.alias("open"), F.col("prev_member").alias("last_member"),
        F.when(is_open, F.lit(None)).otherwise(F.col("member")).alias("resumed_member"),
    ).withColumn("pause_ms", F.col("end_ms") - F.col("start_ms"))
    kept = gaps.filter((F.col("kind") == "startup") | F.col("open") | (F.col("pause_ms") >= settings.min_pause_ms))
    frame = kept.toPandas()
    if not per_partition:
        frame["topic"], frame["partition"] = None, None
    frame = frame.reindex(columns=GAP_COLUMNS)
    if frame.empty:
        return frame.astype({"start_ms": "int64", "end_ms": "int64", "pause_ms": "int64", "open": "bool"})
    frame["partition"] = frame["partition"].astype("Int64")
    return frame.sort_values(["start_ms", "topic", "partition"], na_position="first").reset_index(drop=True)
