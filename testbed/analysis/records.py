"""Record-level analysis in Spark: duplicates, lost records, end-to-end latency, throughput and lag.

Processed batches are exploded to one row per (topic, partition, offset) processing, grouped per
record, and joined with the producer's acks; only aggregates and bounded examples reach the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .intervals import SharedSpan

if TYPE_CHECKING:
    from .control import OwnershipInterval

TP = tuple[str, int]
EXAMPLES = 10
BROADCAST_KEYS = 1_000_000
KEY = ["topic", "partition", "offset"]
PHASES = ("all", "steady", "bounce")


@dataclass
class Latency:
    p50: float | None
    p99: float | None
    max: float | None


@dataclass
class RecordStats:
    records_processed: int
    unique_processed: int
    acked: int | None
    lost: int | None
    lost_examples: list[dict]
    duplicates_total: int
    duplicate_records: int
    duplicates_concurrent: int
    duplicates_redelivered: int
    duplicate_examples: list[dict]
    latency_source: str
    latency: dict[str, Latency]
    first_processed_ms: int | None
    last_processed_ms: int | None
    active_partitions: set[TP]
    timeseries: pd.DataFrame = field(repr=False)


def processed_batches(member_events: DataFrame) -> DataFrame:
    return member_events.filter(F.col("name") == "processed").select(
        "member",
        F.col("ts_ms").alias("ts"),
        "topic",
        "partition",
        "first_offset",
        "last_offset",
        "count",
        F.col("produce_ts_min_ms").alias("pmin"),
    )


def _in_windows(col: Column, windows: Sequence[tuple[int, int]]) -> Column:
    cond = F.lit(False)
    for start, end in windows:
        cond = cond | col.between(start, end)
    return cond


def _latency_aggs(lat: Column, bounce: Column) -> list[Column]:
    out = []
    for phase in PHASES:
        v = lat if phase == "all" else F.when(bounce if phase == "bounce" else ~bounce, lat)
        out += [
            F.percentile(v, [0.5, 0.99]).alias(f"lat_{phase}_pct"),
            F.max(v).alias(f"lat_{phase}_max"),
        ]
    return out


@dataclass
class RecordFrames:
    """Processed batches exploded to one row per processing (``offsets``) and grouped per record with its
    produce time (``joined``: KEY, n, first_ts, pmin, produce_ts). Built once, read by the record figures
    and by the availability gaps; the caller persists ``joined`` around both."""

    valid: DataFrame
    offsets: DataFrame
    joined: DataFrame
    has_acks: bool

    @property
    def latency_source(self) -> str:
        return "acks" if self.has_acks else "batch_bounds"


def record_frames(batches: DataFrame, acks: DataFrame | None) -> RecordFrames:
    valid = batches.filter(F.col("last_offset") >= F.col("first_offset"))
    offsets = valid.select(
        "member", "ts", "topic", "partition", "pmin", F.explode(F.sequence("first_offset", "last_offset")).alias("offset")
    )
    if acks is not None:
        joined = _with_acks(offsets, acks)
    else:
        joined = offsets.groupBy(*KEY).agg(
            F.count(F.lit(1)).alias("n"), F.min("ts").alias("first_ts"), F.min_by("pmin", "ts").alias("pmin")
        ).withColumn("produce_ts", F.lit(None).cast("long"))
    return RecordFrames(valid, offsets, joined, acks is not None)


def _with_acks(offsets: DataFrame, acks: DataFrame) -> DataFrame:
    """Per record (KEY): ``n`` processings (null when none), ``first_ts``, ``pmin`` of the first processing and
    the earliest ``produce_ts`` of its acks (null when none).

    The result of a full outer join of the processings grouped per record with the acks grouped per record,
    computed as one aggregation over both sides together: one shuffle and no sort, where the join shuffled
    and sorted both sides (at 10M records most of the record figures' time after parsing). A join never
    matches a null key, so a row whose key has a null part is grouped with its own side only."""
    null_long = F.lit(None).cast("long")
    processings = offsets.select(*KEY, "ts", "pmin", null_long.alias("produce"), F.lit(0).alias("side"))
    acked = acks.select(*KEY, null_long.alias("ts"), null_long.alias("pmin"), F.col("produce_ts_ms").alias("produce"),
                        F.lit(1).alias("side"))
    apart = F.when(F.col("topic").isNull() | F.col("partition").isNull() | F.col("offset").isNull(), F.col("side"))
    processed = F.count(F.when(F.col("side") == 0, 1))
    grouped = processings.unionByName(acked).groupBy(*KEY, apart.alias("apart")).agg(
        processed.alias("n"), F.min("ts").alias("first_ts"), F.min_by("pmin", "ts").alias("pmin"),
        F.min("produce").alias("produce_ts"))
    return grouped.select(*KEY, F.when(F.col("n") > 0, F.col("n")).alias("n"), "first_ts", "pmin", "produce_ts")


def record_stats(
    spark: SparkSession,
    frames: RecordFrames,
    shared: dict[TP, list[SharedSpan]],
    cutoff_ms: int | None,
    bounce_windows: Sequence[tuple[int, int]],
    *,
    intervals: Sequence[OwnershipInterval] = (),
) -> RecordStats:
    """Record-level figures. A duplicate processing is concurrent when it lies in a span of ``shared`` (two
    owners) or its member held no ownership interval of the partition then while another member did."""
    valid, offsets, joined = frames.valid, frames.offsets, frames.joined
    produce = F.col("produce_ts") if frames.has_acks else F.col("pmin")
    latency_source = frames.latency_source
    lat = F.col("first_ts") - produce
    bounce = _in_windows(F.col("first_ts"), bounce_windows)
    cutoff = F.lit(cutoff_ms if cutoff_ms is not None else (1 << 62))
    lost_cond = F.col("produce_ts").isNotNull() & (F.col("first_ts").isNull() | (F.col("first_ts") > cutoff))
    row = joined.agg(
        F.count(F.col("first_ts")).alias("unique"),
        F.coalesce(F.sum(F.col("n") - 1), F.lit(0)).alias("dup_total"),
        F.count(F.when(F.col("n") > 1, 1)).alias("dup_records"),
        F.count(F.col("produce_ts")).alias("acked"),
        F.count(F.when(lost_cond, 1)).alias("lost"),
        *_latency_aggs(lat, bounce),
    ).first()
    batch_row = valid.agg(
        F.coalesce(F.sum("count"), F.lit(0)).alias("processed"), F.min("ts").alias("first"), F.max("ts").alias("last")
    ).first()
    lost_examples = [
        r.asDict() for r in joined.filter(lost_cond).select(*KEY, "produce_ts").orderBy(*KEY).limit(EXAMPLES).collect()
    ]
    dups = (_duplicates(spark, offsets, joined, shared, int(row["dup_records"]), intervals)
            if row["dup_records"] else None)
    timeseries = _timeseries(valid, joined, dups, frames.has_acks)
    active = {(r["topic"], r["partition"]) for r in valid.select("topic", "partition").distinct().collect()}
    latency = {}
    for phase in PHASES:
        pct = row[f"lat_{phase}_pct"]
        latency[phase] = Latency(
            float(pct[0]) if pct and pct[0] is not None else None,
            float(pct[1]) if pct and pct[1] is not None else None,
            float(row[f"lat_{phase}_max"]) if row[f"lat_{phase}_max"] is not None else None,
        )
    concurrent, dup_examples = (dups.concurrent, dups.examples) if dups else (0, [])
    return RecordStats(
        records_processed=int(batch_row["processed"]),
        unique_processed=int(row["unique"]),
        acked=int(row["acked"]) if frames.has_acks else None,
        lost=int(row["lost"]) if frames.has_acks else None,
        lost_examples=lost_examples,
        duplicates_total=int(row["dup_total"]),
        duplicate_records=int(row["dup_records"]),
        duplicates_concurrent=concurrent,
        duplicates_redelivered=int(row["dup_total"]) - concurrent,
        duplicate_examples=dup_examples,
        latency_source=latency_source if row["unique"] else "none",
        latency=latency,
        first_processed_ms=batch_row["first"],
        last_processed_ms=batch_row["last"],
        active_partitions=active,
        timeseries=timeseries,
    )


@dataclass
class _Dups:
    concurrent: int
    examples: list[dict]
    per_second: pd.DataFrame


def _duplicates(spark: SparkSession, offsets: DataFrame, joined: DataFrame, shared: dict[TP, list[SharedSpan]], n_keys: int,
                intervals: Sequence[OwnershipInterval] = ()) -> _Dups:
    """Each processing of a record after its first, marked concurrent if inside a shared-ownership span of its
    partition, or if its member did not own the partition then while another member did (a zombie's batch
    after its own ``lost``)."""
    keys = joined.filter(F.col("n") > 1).select(*KEY)
    if n_keys <= BROADCAST_KEYS:
        keys = F.broadcast(keys)  # usually few: spares shuffling every processed offset
    rows = offsets.join(keys, KEY)
    rank = F.row_number().over(Window.partitionBy(*KEY).orderBy("ts", "member"))
    extra = rows.withColumn("rank", rank).filter(F.col("rank") > 1).drop("rank")
    # One broadcast table of what makes a processing concurrent: shared spans (s_member null) and every
    # member's ownership intervals; each extra processing is marked by its own id (same member, same ms twice
    # stays two processings).
    spans = [(tp[0], tp[1], int(s.start), int(s.end), None) for tp, ss in shared.items() for s in ss]
    spans += [(iv.topic, int(iv.partition), int(iv.start_ms), int(iv.end_ms), iv.member) for iv in intervals]
    if spans:
        span_df = spark.createDataFrame(spans, "s_topic string, s_partition int, s_start long, s_end long, s_member string")
        extra = extra.withColumn("rid", F.monotonically_increasing_id())
        hit = extra.join(
            F.broadcast(span_df),
            (extra.topic == span_df.s_topic)
            & (extra.partition == span_df.s_partition)
            & extra.ts.between(span_df.s_start, span_df.s_end),
            "left",
        )
        in_shared = F.max(F.col("s_start").isNotNull() & F.col("s_member").isNull())
        owns = F.max(F.coalesce(F.col("s_member") == F.col("member"), F.lit(False)))
        other_owns = F.max(F.coalesce(F.col("s_member") != F.col("member"), F.lit(False)))
        marked = hit.groupBy("rid", *KEY, "member", "ts").agg(
            (in_shared | (~owns & other_owns)).alias("concurrent")).drop("rid")
    else:
        marked = extra.select(*KEY, "member", "ts", F.lit(False).alias("concurrent"))
    marked = marked.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        concurrent = marked.filter("concurrent").count()
        examples = [r.asDict() for r in marked.orderBy(F.desc("concurrent"), *KEY).limit(EXAMPLES).collect()]
        per_second = (
            marked.groupBy((F.col("ts") / 1000).cast("long").alias("second")).agg(F.count(F.lit(1)).alias("duplicates"))
        ).toPandas()
    finally:
        marked.unpersist()
    return _Dups(concurrent, examples, per_second)


def _timeseries(batches: DataFrame, joined: DataFrame, dups: _Dups | None, has_acks: bool) -> pd.DataFrame:
    second = lambda c: (F.col(c) / 1000).cast("long").alias("second")  # noqa: E731
    processed = batches.groupBy(second("ts")).agg(F.sum("count").alias("processed")).toPandas()
    unique = joined.filter(F.col("first_ts").isNotNull()).groupBy(second("first_ts")).agg(
        F.count(F.lit(1)).alias("processed_unique")
    ).toPandas()
    frames = [processed.set_index("second"), unique.set_index("second")]
    if has_acks:
        produced = joined.filter(F.col("produce_ts").isNotNull()).groupBy(second("produce_ts")).agg(
            F.count(F.lit(1)).alias("produced")
        ).toPandas()
        frames.append(produced.set_index("second"))
    if dups is not None:
        frames.append(dups.per_second.set_index("second"))
    ts = pd.concat(frames, axis=1).sort_index()
    if ts.empty:
        return pd.DataFrame(columns=["second", "processed", "processed_unique", "produced", "lag", "duplicates"])
    full = pd.RangeIndex(int(ts.index.min()), int(ts.index.max()) + 1, name="second")
    ts = ts.reindex(full).fillna(0).astype("int64")
    for col in ("processed", "processed_unique", "duplicates"):
        if col not in ts:
            ts[col] = 0
    if has_acks:
        ts["lag"] = ts["produced"].cumsum() - ts["processed_unique"].cumsum()
    else:
        ts["produced"] = pd.Series(pd.NA, index=ts.index, dtype="Int64")
        ts["lag"] = pd.Series(pd.NA, index=ts.index, dtype="Int64")
    return ts.reset_index()[["second", "processed", "processed_unique", "produced", "lag", "duplicates"]]
