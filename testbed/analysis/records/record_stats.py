"""Record-level analysis in Spark: duplicates, lost records, end-to-end latency, throughput and lag.

Processed batches are cut into segments (``coverage``): runs of offsets processed by the same batches, so
duplicates and unique counts are sums over segments. The producers' acks, one row per record, find their
segment by a broadcast hash join and are read once, grouped into everything the acknowledged-record figures
need (``ack_summary``); only aggregates and bounded examples reach the driver.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .ack_summary import NEVER, AckSummary, AckTotals, summarise, waited_through
from .coverage import BROADCAST_ROWS, TP, Coverage, bucket_width, coverage, in_ranges
from ..intervals import OwnershipInterval, SharedSpan
from ..spark.local_rows import local_frame
from ..spark.side_by_side import side_by_side
from .duplicate_causes import CauseInputs, DuplicateCauses, classified, summarise_causes

EXAMPLES = 10
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
    duplicate_causes: DuplicateCauses
    duplicate_examples: list[dict]
    latency_source: str
    latency: dict[str, Latency]
    first_processed_ms: int | None
    last_processed_ms: int | None
    active_partitions: set[tuple[str, int]]
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


def _second(col: str) -> Column:
    return (F.col(col) / 1000).cast("long").alias("second")


def located(frame: DataFrame) -> Column:
    """An ack that names its record: a topic, an offset and a produce time (``spark.sources.read_ack_lines``)."""
    return (frame["offset"].isNotNull() & frame["produce_ts_ms"].isNotNull() & frame["topic"].isNotNull()
            & (frame["topic"] != ""))


@dataclass
class RecordFrames:
    """What every record figure is computed from, built once by :func:`record_frames` and released by
    :meth:`release`: the valid batches and their totals, their segments (persisted), and with an ack log the
    acks' summary (``ack_summary``: totals, first processings, latencies, produce seconds, lost records)."""

    spark: SparkSession
    valid: DataFrame
    processing: dict  # processed, first, last (ts), ranges, offsets; unique, dup_total, dup_records (records); segments
    cover: Coverage
    acks: AckSummary | None
    cutoff_ms: int
    bounce_windows: tuple[tuple[int, int], ...]
    _persisted: list[DataFrame] = field(default_factory=list, repr=False)

    @property
    def has_acks(self) -> bool:
        return self.acks is not None

    @property
    def ack_totals(self) -> AckTotals | None:
        return self.acks.totals if self.acks is not None else None

    @property
    def latency_source(self) -> str:
        return "acks" if self.has_acks else "batch_bounds"

    def unprocessed_by_cutoff(self) -> Column:
        """A record nobody processed by the cutoff: lost when acknowledged."""
        return F.col("first_ts").isNull() | (F.col("first_ts") > F.lit(self.cutoff_ms))

    def release(self) -> None:
        if self.acks is not None:
            self.acks.release()
        for frame in reversed(self._persisted):  # what was built from a frame goes before it
            frame.unpersist()
        self._persisted.clear()


def record_frames(spark: SparkSession, batches: DataFrame, acks: DataFrame | None, cutoff_ms: int | None,
                  bounce_windows: Sequence[tuple[int, int]] = ()) -> RecordFrames:
    """Segments of the valid batches (``last_offset >= first_offset``) and, when ``acks`` is given, the acks'
    summary (:func:`summarise_acks`). ``bounce_windows``: the latency phase "bounce"."""
    valid = batches.filter(F.col("last_offset") >= F.col("first_offset"))
    totals = valid.agg(
        F.coalesce(F.sum("count"), F.lit(0)).alias("processed"), F.min("ts").alias("first"), F.max("ts").alias("last"),
        F.count(F.lit(1)).alias("ranges"),
        F.coalesce(F.sum(F.col("last_offset") - F.col("first_offset") + 1), F.lit(0)).alias("offsets"),
        F.collect_set(F.struct(*TP)).alias("active")).first().asDict()
    totals["active"] = {(r["topic"], r["partition"]) for r in totals["active"]}  # every partition processed from
    cover = coverage(valid, bucket_width(totals["offsets"], totals["ranges"]))
    segments = cover.segments.persist(StorageLevel.MEMORY_AND_DISK)
    frames = RecordFrames(spark, valid, totals, Coverage(cover.covers, segments), None,
                          cutoff_ms if cutoff_ms is not None else NEVER, tuple(bounce_windows), [segments])
    seg = segments.agg(F.count(F.lit(1)).alias("segments"), F.coalesce(F.sum("length"), F.lit(0)).alias("offsets"),
                       F.coalesce(F.sum(F.col("length") * (F.col("n") - 1)), F.lit(0)).alias("dup_total"),
                       F.coalesce(F.sum(F.when(F.col("n") > 1, F.col("length"))), F.lit(0)).alias("dup_records")).first()
    frames.processing.update(unique=int(seg["offsets"]), dup_total=int(seg["dup_total"]), dup_records=int(seg["dup_records"]),
                             segments=int(seg["segments"]))
    if acks is not None:
        frames.acks = summarise_acks(frames, acks)
    return frames


def summarise_acks(frames: RecordFrames, acks: DataFrame) -> AckSummary:
    """``acks`` (whole ack lines, ``spark.sources.read_ack_lines``) joined with the segments of ``frames`` and
    summarised in one pass (``ack_summary``). The queries run in the acks' own session, with the settings of
    their size (``spark.session.session_for``): they can run on another thread while the member histories' queries go on.

    An ack log names each record once; should a record be named twice (an offset reused after a truncated
    log, a repeated line), the acks are grouped per record first and the earliest produce time counts."""
    width = bucket_width(frames.processing["unique"], frames.processing["segments"])
    # About two bucket rows per segment: up to BROADCAST_ROWS they are sent whole to every task, beyond that the
    # acks are shuffled to them.
    small = 2 * frames.processing["segments"] <= BROADCAST_ROWS
    lost = frames.unprocessed_by_cutoff()
    segments = frames.cover.segments.select(*TP, "seg_start", "seg_end", "first_ts")
    found = in_ranges(acks, "offset", segments, "seg_start", "seg_end", width, how="left", broadcast=small).select(
        *KEY, "produce_ts_ms", "first_ts")
    summary = summarise(found, located(found), lost, frames.bounce_windows)
    if not summary.totals.repeated:
        return summary
    # Rare: the acks are read again, one row per record, and summarised again (the count of lines without an
    # offset is the first pass's: the grouping keeps located acks only).
    once = found.filter(located(found)).groupBy(*KEY).agg(
        F.min("produce_ts_ms").alias("produce_ts_ms"), F.min("first_ts").alias("first_ts"))
    deduped = summarise(once, F.lit(True), lost, frames.bounce_windows)
    deduped.totals = replace(deduped.totals, unlocated=summary.totals.unlocated, repeated=summary.totals.repeated)
    summary.release()
    return deduped


@dataclass
class RecordFigures:
    """The record figures read of the frames alone, not of the duplicates (:func:`record_figures`)."""

    latency: dict[str, Latency]
    lost_examples: list[dict]
    per_second: list[pd.DataFrame] = field(repr=False)  # processed, processed_unique (, produced) by second


def record_figures(frames: RecordFrames) -> RecordFigures:
    """The latencies, lost examples and per-second counts: they need the acks' summary (when there is an ack log)
    but not the duplicates, so they can run beside the duplicates' queries."""
    totals = frames.ack_totals
    latency, lost_examples, per_second = side_by_side(
        frames.spark, lambda: _latencies(frames),
        lambda: frames.acks.lost_examples(EXAMPLES) if totals is not None and totals.lost else [],
        lambda: _per_second(frames))
    return RecordFigures(latency, lost_examples, per_second)


def record_stats(frames: RecordFrames, dups: Duplicates | None, figures: RecordFigures | None = None) -> RecordStats:
    """Record-level figures; ``dups``: :func:`duplicates` of the same frames; ``figures``: their
    :func:`record_figures`, when already computed."""
    processing, totals = frames.processing, frames.ack_totals
    figures = figures or record_figures(frames)
    latency, lost_examples, timeseries = figures.latency, figures.lost_examples, _timeseries(frames, figures, dups)
    active = processing["active"]
    concurrent, dup_examples = (dups.concurrent, dups.examples) if dups else (0, [])
    causes = dups.causes if dups else DuplicateCauses.none()
    causes.check(processing["dup_total"])  # the analysis's own check: every duplicate has exactly one cause
    return RecordStats(
        records_processed=int(processing["processed"]),
        unique_processed=processing["unique"],
        acked=totals.acked if totals else None,
        lost=totals.lost if totals else None,
        lost_examples=lost_examples,
        duplicates_total=processing["dup_total"],
        duplicate_records=processing["dup_records"],
        duplicates_concurrent=concurrent,
        duplicates_redelivered=processing["dup_total"] - concurrent,
        duplicate_causes=causes,
        duplicate_examples=dup_examples,
        latency_source=frames.latency_source if processing["unique"] else "none",
        latency=latency,
        first_processed_ms=processing["first"],
        last_processed_ms=processing["last"],
        active_partitions=active,
        timeseries=timeseries,
    )


def _latencies(frames: RecordFrames) -> dict[str, Latency]:
    """Exact percentiles (Spark's ``percentile``: linear between closest ranks) of each processed record's
    first processing time minus its produce time, over a histogram of latencies so that no phase collects
    every record's value. With acks: every acknowledged record (produce time exact); without: every
    processed record, with its first batch's earliest produce time."""
    if frames.acks is not None:
        histogram = frames.acks.latencies()
    else:
        segments, produce = frames.cover.segments, F.col("pmin")
        histogram = segments.filter(F.col("first_ts").isNotNull() & produce.isNotNull()).groupBy(
            (F.col("first_ts") - produce).alias("lat"),
            waited_through(produce, F.col("first_ts"), frames.bounce_windows).alias("bounce")
        ).agg(F.sum("length").alias("n"))
    aggs = []
    for phase in PHASES:
        n = F.col("n") if phase == "all" else F.when(F.col("bounce") == (phase == "bounce"), F.col("n")).otherwise(0)
        aggs += [F.percentile("lat", [0.5, 0.99], n).alias(f"{phase}_pct"),
                 F.max(F.when(n > 0, F.col("lat"))).alias(f"{phase}_max")]
    row = histogram.agg(*aggs).first()
    out = {}
    for phase in PHASES:
        pct, top = row[f"{phase}_pct"], row[f"{phase}_max"]
        out[phase] = Latency(float(pct[0]) if pct and pct[0] is not None else None,
                             float(pct[1]) if pct and pct[1] is not None else None,
                             float(top) if top is not None else None)
    return out


@dataclass
class Duplicates:
    causes: DuplicateCauses
    examples: list[dict]
    per_second: pd.DataFrame

    @property
    def concurrent(self) -> int:
        return self.causes.counts["concurrent"]


def duplicates(frames: RecordFrames, shared: dict[tuple[str, int], list[SharedSpan]],
               intervals: Sequence[OwnershipInterval] = (), inputs: CauseInputs | None = None) -> Duplicates | None:
    """Each processing of a record after its first (None: there is none), with its cause (``duplicate_causes``).
    Concurrent if inside a shared-ownership span of its partition (``shared``: two owners), or if its member did
    not own the partition then while another member did (a zombie's batch after its own ``lost``). A segment's
    records share their processings: each batch after a segment's first stands for ``length`` duplicate
    processings, and its previous processing (``prev_member``, ``prev_ts``) is the batch before it. Without
    ``inputs`` (commits, deaths, commit modes) every re-delivery is unexplained."""
    if not frames.processing["dup_records"]:
        return None
    spark, covers = frames.spark, frames.cover.covers
    order = Window.partitionBy(*TP, "seg_start").orderBy("ts", "member")
    extra = covers.select(*TP, "seg_start", "seg_end", "length", "member", "ts", F.row_number().over(order).alias("rank"),
                          F.lag("member").over(order).alias("prev_member"), F.lag("ts").over(order).alias("prev_ts")
                          ).filter(F.col("rank") > 1).drop("rank")
    # One broadcast table of what makes a processing concurrent: shared spans (s_member null) and every
    # member's ownership intervals; each extra processing is marked by its own id (the same member processing
    # a segment twice in one ms stays two processings).
    spans = [(tp[0], tp[1], int(s.start), int(s.end), None) for tp, ss in shared.items() for s in ss]
    spans += [(iv.topic, int(iv.partition), int(iv.start_ms), int(iv.end_ms), iv.member) for iv in intervals]
    if spans:
        span_df = local_frame(spark, spans,
                              "s_topic string, s_partition int, s_start long, s_end long, s_member string")
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
        marked = hit.groupBy("rid", *TP, "seg_start", "seg_end", "length", "member", "ts", "prev_member", "prev_ts").agg(
            (in_shared | (~owns & other_owns)).alias("concurrent")).drop("rid")
    else:
        marked = extra.withColumn("concurrent", F.lit(False))
    with classified(spark, marked, intervals, inputs or CauseInputs.unknown(spark)) as found:
        # The first EXAMPLES records in (concurrent first, record) order lie in the first EXAMPLES rows.
        is_concurrent = F.col("cause") == "concurrent"
        causes, top, per_second = side_by_side(
            spark, lambda: summarise_causes(found),
            lambda: found.orderBy(F.desc(is_concurrent), *TP, "first_offset").limit(EXAMPLES).collect(),
            lambda: found.groupBy(_second("ts_ms")).agg(F.sum("records").alias("duplicates")).toPandas())
        examples = sorted(({"topic": r["topic"], "partition": r["partition"], "offset": o, "member": r["member"],
                            "ts": r["ts_ms"], "concurrent": r["cause"] == "concurrent", "cause": r["cause"]}
                           for r in top for o in range(r["first_offset"], min(r["last_offset"], r["first_offset"] + EXAMPLES - 1) + 1)),
                          key=lambda e: (not e["concurrent"], e["topic"] or "", e["partition"] if e["partition"] is not None else -1,
                                         e["offset"]))[:EXAMPLES]
    return Duplicates(causes, examples, per_second)


def _per_second(frames: RecordFrames) -> list[pd.DataFrame]:
    return side_by_side(
        frames.spark, lambda: frames.valid.groupBy(_second("ts")).agg(F.sum("count").alias("processed")).toPandas(),
        lambda: frames.cover.segments.groupBy(_second("first_ts")).agg(
            F.sum("length").alias("processed_unique")).toPandas(),
        *([lambda: frames.acks.produced().toPandas()] if frames.has_acks else []))


def _timeseries(frames: RecordFrames, figures: RecordFigures, dups: Duplicates | None) -> pd.DataFrame:
    series = [frame.set_index("second") for frame in figures.per_second]
    if dups is not None:
        series.append(dups.per_second.set_index("second"))
    ts = pd.concat(series, axis=1).sort_index()
    if ts.empty:
        return pd.DataFrame(columns=["second", "processed", "processed_unique", "produced", "lag", "duplicates"])
    full = pd.RangeIndex(int(ts.index.min()), int(ts.index.max()) + 1, name="second")
    ts = ts.reindex(full).fillna(0).astype("int64")
    for col in ("processed", "processed_unique", "duplicates"):
        if col not in ts:
            ts[col] = 0
    if frames.has_acks:
        ts["lag"] = ts["produced"].cumsum() - ts["processed_unique"].cumsum()
    else:
        ts["produced"] = pd.Series(pd.NA, index=ts.index, dtype="Int64")
        ts["lag"] = pd.Series(pd.NA, index=ts.index, dtype="Int64")
    return ts.reset_index()[["second", "processed", "processed_unique", "produced", "lag", "duplicates"]]


def first_waits(frames: RecordFrames) -> DataFrame:
    """Per partition and instant ``t`` at which some records were first processed (``NEVER`` for records
    nobody processed by the cutoff): ``w``, the earliest produce time among them. With acks: every
    acknowledged record; without: every processed record, with its first batch's earliest produce time. It
    is all the availability gaps need of the records (``gaps``). With acks, a small grouping of the acks'
    persisted summary; without, computed once for both kinds of gap and released with ``frames``."""
    if frames.acks is not None:
        return frames.acks.firsts()
    first_at = F.when(frames.unprocessed_by_cutoff(), F.lit(NEVER)).otherwise(F.col("first_ts")).alias("t")
    firsts = frames.cover.segments.filter(F.col("pmin").isNotNull()).groupBy(*TP, first_at).agg(F.min("pmin").alias("w"))
    firsts = firsts.persist(StorageLevel.MEMORY_AND_DISK)
    frames._persisted.append(firsts)
    firsts.count()
    return firsts
