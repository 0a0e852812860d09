"""Kafkatest-style invariants over processed batches and commits, made rebalance-aware.

Four checks (definitions in docs/metrics.md, "Invariants"):

(a) processed outside ownership: a batch a member processed while it held no ownership interval of that
    partition (e.g. kafka-python runs callbacks on its IO thread: a zombie writes a batch after its ``lost``);
(b) contiguity within one ownership interval: the member's batches of the partition continue offset by
    offset (skips and steps back), and its first batch starts at the committed offset when that is known;
(c) commit ahead of processing: a successful commit of an offset the member had not processed up to;
(d) re-delivery below a successful commit: records below the committed offset at assignment processed
    again in that interval.

Processed batches may be millions of rows: everything is computed in Spark, only aggregates and at most
``MAX_ROWS`` rows per kind (most severe first) reach the driver. Ownership intervals are small and
broadcast; commits are joined through windows, never collected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ..intervals import OwnershipInterval, disjoint_per_owner
from ..spark.local_rows import local_frame
from ..spark.side_by_side import side_by_side
from ..stage import Catalogue, Metric, Unknown

EXAMPLES = 10
MAX_ROWS = 10_000  # rows per kind kept for the invariant_violations table; the metrics count them all
KINDS = ("outside_ownership", "offset_skip", "offset_step_back", "commit_ahead", "redelivered_below_commit")

SCHEMA = pa.schema(
    [("kind", pa.string()), ("member", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
     ("ts_ms", pa.int64()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
     ("expected_offset", pa.int64()), ("committed_offset", pa.int64()), ("records", pa.int64()),
     ("other_owner", pa.string()), ("interval_start_ms", pa.int64())]
)
COLUMNS = tuple(SCHEMA.names)

NO_COMMITS = "no successful commit in the history: the committed offsets are never known"
_IV_SCHEMA = ("iv_id int, iv_member string, iv_topic string, iv_partition int, iv_start long, iv_end long, "
              "iv_eff_end long, c_at_start long, p_before long")


@dataclass
class Invariants:
    """Full counts (``None`` = cannot be computed, with the reason) and bounded rows per kind."""

    counts: dict[str, int | None]
    reasons: dict[str, str] = field(default_factory=dict)
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def count(self, name: str) -> int | Unknown:
        value = self.counts[name]
        return value if value is not None else Unknown(self.reasons.get(name, "not measured"))

    @property
    def examples(self) -> dict[str, list[dict[str, Any]]]:
        """Up to ``EXAMPLES`` rows per kind, most severe first (keys: ``KINDS``)."""
        return {kind: [dict(r) for r in self.rows.get(kind, [])[:EXAMPLES]] for kind in KINDS}

    def frame(self) -> pd.DataFrame:
        """The ``invariant_violations`` table: at most ``MAX_ROWS`` rows per kind, most severe first."""
        return pd.DataFrame([r for kind in KINDS for r in self.rows.get(kind, [])], columns=list(COLUMNS))


def _count(name: str, meaning: str, unit: str) -> Metric[Invariants]:
    return Metric(name, unit, meaning, lambda inv: inv.count(name))


CATALOGUE: Catalogue[Invariants] = Catalogue(
    _count("batches_outside_ownership", "processed batches written while their member held no ownership interval of "
           "the partition",
           "count"),
    _count("records_outside_ownership", "records of the batches processed outside ownership", "records"),
    _count("records_outside_ownership_while_owned", "records processed outside ownership while another member owned "
           "the partition",
           "records"),
    _count("offset_skips", "batches inside one ownership interval that start above the next expected offset", "count"),
    _count("offset_skipped_records", "records jumped over by those skips", "records"),
    _count("offset_steps_back", "batches inside one ownership interval that start at or below the previous batch's "
           "last offset",
           "count"),
    _count("offset_repeated_records", "records repeated by those steps back", "records"),
    _count("commits_ahead_of_processing", "successful commits of an offset beyond what the committing member had "
           "processed",
           "count"),
    _count("records_redelivered_below_commit", "records processed again below an offset successfully committed before "
           "their owner's assignment",
           "records"),
)


def check_invariants(spark: SparkSession, member_events: DataFrame, intervals: Sequence[OwnershipInterval]) -> Invariants:
    """The four invariants over ``member_events`` (as ``spark.sources.read_member_events`` returns them) and the
    ownership intervals (a member owns p at ts when ``start_ms <= ts <= end_ms``)."""
    batches = member_events.filter(
        (F.col("name") == "processed") & F.col("first_offset").isNotNull() & F.col("last_offset").isNotNull()
        & (F.col("last_offset") >= F.col("first_offset"))
    ).select(
        "member", F.col("ts_ms").alias("ts"), "seq", "topic", "partition", "first_offset", "last_offset",
        F.coalesce(F.col("count"), F.col("last_offset") - F.col("first_offset") + 1).alias("records"),
    )
    commits = _successful_commits(member_events)
    commits = commits.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        has_commits = commits.limit(1).count() > 0
        iv_rows = _interval_rows(intervals)
        if iv_rows:
            iv_rows = _with_start_offsets(spark, iv_rows, batches, commits if has_commits else None)
        iv_df = local_frame(spark, iv_rows, _IV_SCHEMA)
        located = batches.join(
            F.broadcast(iv_df),
            (F.col("member") == F.col("iv_member")) & (F.col("topic") == F.col("iv_topic"))
            & (F.col("partition") == F.col("iv_partition")) & F.col("ts").between(F.col("iv_start"), F.col("iv_eff_end")),
            "left",
        ).persist(StorageLevel.MEMORY_AND_DISK)
        counts: dict[str, int | None] = {}
        rows: dict[str, list[dict[str, Any]]] = {}
        reasons: dict[str, str] = {}
        if not has_commits:
            counts["commits_ahead_of_processing"] = None
            reasons["commits_ahead_of_processing"] = reasons["records_redelivered_below_commit"] = NO_COMMITS
            rows["commit_ahead"] = []
        # Independent checks, each writing its own keys of ``counts`` and ``rows``.
        try:
            side_by_side(spark, lambda: _outside(located, iv_df, counts, rows),
                         lambda: _contiguity(located, has_commits, counts, rows),
                         *([lambda: _commits_ahead(batches, commits, counts, rows)] if has_commits else []))
        finally:
            located.unpersist()
    finally:
        commits.unpersist()
    return Invariants({m.name: counts[m.name] for m in CATALOGUE.metrics}, reasons, rows)


def _successful_commits(member_events: DataFrame) -> DataFrame:
    """One row per partition of every successful ``committed`` event: member, ts, seq, topic, partition, offset.

    Negative offsets (librdkafka's OFFSET_INVALID for a partition with nothing stored) commit nothing."""
    return (
        member_events.filter((F.col("name") == "committed") & F.col("error").isNull() & F.col("offsets").isNotNull())
        .select("member", F.col("ts_ms").alias("ts"), "seq", F.explode("offsets").alias("o"))
        .select("member", "ts", "seq", F.col("o.topic").alias("topic"), F.col("o.partition").alias("partition"),
                F.col("o.offset").alias("offset"))
        .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("offset") >= 0))
    )


def _interval_rows(intervals: Sequence[OwnershipInterval]) -> list[tuple]:
    """(id, member, topic, partition, start, end, effective end) with one member's intervals of one partition
    made disjoint (``disjoint_per_owner``)."""
    return [(i, iv.member, iv.topic, int(iv.partition), int(iv.start_ms), int(iv.end_ms), eff_end, None, None)
            for i, (iv, eff_end) in enumerate(disjoint_per_owner(intervals))]


def _with_start_offsets(spark: SparkSession, iv_rows: list[tuple], batches: DataFrame, commits: DataFrame | None) -> list[tuple]:
    """Each interval with C, the highest successful commit of its partition (any member) at or before its
    start, and P, the highest offset of it processed by anyone before its start. One sort of the batches
    per partition; commits at the start's millisecond count (a revoke's commit precedes the next assignment)."""
    markers = local_frame(spark, [(r[0], r[2], r[3], r[4]) for r in iv_rows],
                          "iv_id int, topic string, partition int, ts long")
    null_long = F.lit(None).cast("long")
    parts = [
        markers.select("topic", "partition", "ts", F.lit(1).alias("ord"), null_long.alias("c_off"),
                       null_long.alias("b_last"), "iv_id"),
        batches.select("topic", "partition", "ts", F.lit(2).alias("ord"), null_long.alias("c_off"),
                       F.col("last_offset").alias("b_last"), F.lit(None).cast("int").alias("iv_id")),
    ]
    if commits is not None:
        parts.append(commits.select("topic", "partition", "ts", F.lit(0).alias("ord"), F.col("offset").alias("c_off"),
                                    null_long.alias("b_last"), F.lit(None).cast("int").alias("iv_id")))
    stream = parts[0]
    for p in parts[1:]:
        stream = stream.unionByName(p)
    w = Window.partitionBy("topic", "partition").orderBy("ts", "ord").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    found = {
        r["iv_id"]: (r["c"], r["p"])
        for r in stream.select("iv_id", "ord", F.max("c_off").over(w).alias("c"), F.max("b_last").over(w).alias("p"))
        .filter(F.col("ord") == 1).collect()
    }
    return [(*r[:7], *found.get(r[0], (None, None))) for r in iv_rows]


def _row(kind: str, r, **cols) -> dict[str, Any]:
    """A plain-Python row of the table from a Spark row (missing columns are None)."""
    d = r.asDict() if r is not None else {}
    out = {c: d.get(c) for c in COLUMNS}
    out.update(kind=kind, **cols)
    for c in COLUMNS:
        if out[c] is not None and c not in ("kind", "member", "topic", "other_owner"):
            out[c] = int(out[c])
    return out


def _outside(located: DataFrame, iv_df: DataFrame, counts: dict, rows: dict) -> None:
    outside = located.filter(F.col("iv_id").isNull()).select(
        "member", "ts", "seq", "topic", "partition", "first_offset", "last_offset", "records")
    owners = iv_df.select(F.col("iv_member").alias("o_member"), F.col("iv_topic").alias("o_topic"),
                          F.col("iv_partition").alias("o_partition"), F.col("iv_start").alias("o_start"),
                          F.col("iv_end").alias("o_end"))
    others = F.array_sort(F.collect_set("o_member"))
    marked = (
        outside.join(F.broadcast(owners),
                     (F.col("topic") == F.col("o_topic")) & (F.col("partition") == F.col("o_partition"))
                     & (F.col("member") != F.col("o_member")) & F.col("ts").between(F.col("o_start"), F.col("o_end")),
                     "left")
        .groupBy("seq", "member", "ts", "topic", "partition", "first_offset", "last_offset", "records")
        .agg(F.when(F.size(others) > 0, F.concat_ws(",", others)).alias("other_owner"))
    ).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        agg = marked.agg(
            F.count(F.lit(1)).alias("batches"), F.coalesce(F.sum("records"), F.lit(0)).alias("records"),
            F.coalesce(F.sum(F.when(F.col("other_owner").isNotNull(), F.col("records"))), F.lit(0)).alias("owned"),
        ).first()
        top = marked.orderBy(F.col("other_owner").isNull(), F.desc("records"), "ts", "member", "seq").limit(MAX_ROWS)
        rows["outside_ownership"] = [_row("outside_ownership", r, ts_ms=r["ts"]) for r in top.collect()] if agg["batches"] else []
    finally:
        marked.unpersist()
    counts["batches_outside_ownership"] = int(agg["batches"])
    counts["records_outside_ownership"] = int(agg["records"])
    counts["records_outside_ownership_while_owned"] = int(agg["owned"])


def _contiguity(located: DataFrame, has_commits: bool, counts: dict, rows: dict) -> None:
    """(b) skips and steps back inside each interval, and (d) records below the committed offset at its start."""
    w = Window.partitionBy("iv_id").orderBy("ts", "seq")
    prev = F.col("prev_last")
    first, last, c = F.col("first_offset"), F.col("last_offset"), F.col("c_at_start")
    # At the interval's start: the committed offset, or beyond it what had already been processed by then
    # (a commit the history cannot show, e.g. kafka-python's final auto-commit in close(), moved it there).
    expected = F.when(prev.isNotNull(), prev + 1).when(c.isNotNull(), F.greatest(c, F.col("p_before") + 1))
    inside = located.filter(F.col("iv_id").isNotNull()).withColumn("prev_last", F.lag("last_offset").over(w))
    flagged = inside.select(
        "member", "ts", "seq", "topic", "partition", "first_offset", "last_offset", "iv_start", "c_at_start",
        prev.isNull().alias("at_start"), expected.alias("expected_offset"),
        F.when(first > expected, first - expected).alias("skipped"),
        F.when(prev.isNotNull() & (first <= prev), F.least(last, prev) - first + 1).alias("repeated"),
        F.when(c.isNotNull() & (first < c), F.least(last, c - 1) - first + 1).alias("below"),
    ).filter(F.col("skipped").isNotNull() | F.col("repeated").isNotNull() | F.col("below").isNotNull())
    flagged = flagged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        agg = flagged.agg(
            F.count("skipped").alias("skips"), F.coalesce(F.sum("skipped"), F.lit(0)).alias("skipped"),
            F.count("repeated").alias("steps"), F.coalesce(F.sum("repeated"), F.lit(0)).alias("repeated"),
            F.coalesce(F.sum("below"), F.lit(0)).alias("below"),
        ).first()

        def top(col: str) -> list:
            if not {"skipped": agg["skips"], "repeated": agg["steps"], "below": agg["below"]}[col]:
                return []  # nothing to list: spare the job
            return flagged.filter(F.col(col).isNotNull()).orderBy(F.desc(col), "ts", "member", "seq").limit(MAX_ROWS).collect()

        rows["offset_skip"] = [
            _row("offset_skip", r, ts_ms=r["ts"], records=r["skipped"], interval_start_ms=r["iv_start"],
                 committed_offset=r["c_at_start"] if r["at_start"] else None)
            for r in top("skipped")
        ]
        rows["offset_step_back"] = [
            _row("offset_step_back", r, ts_ms=r["ts"], records=r["repeated"], interval_start_ms=r["iv_start"])
            for r in top("repeated")
        ]
        rows["redelivered_below_commit"] = [
            _row("redelivered_below_commit", r, ts_ms=r["ts"], records=r["below"], interval_start_ms=r["iv_start"],
                 expected_offset=r["c_at_start"], committed_offset=r["c_at_start"])
            for r in top("below")
        ] if has_commits else []
    finally:
        flagged.unpersist()
    counts["offset_skips"] = int(agg["skips"])
    counts["offset_skipped_records"] = int(agg["skipped"])
    counts["offset_steps_back"] = int(agg["steps"])
    counts["offset_repeated_records"] = int(agg["repeated"])
    counts["records_redelivered_below_commit"] = int(agg["below"]) if has_commits else None


def _commits_ahead(batches: DataFrame, commits: DataFrame, counts: dict, rows: dict) -> None:
    """(c) each successful commit of o for p by m against L, the highest offset m had processed of p at or
    before the commit (across m's history): ahead when o > max(L + 1, the highest earlier commit of p)."""
    earlier = Window.partitionBy("topic", "partition").orderBy("ts").rangeBetween(Window.unboundedPreceding, -1)
    null_long = F.lit(None).cast("long")
    c = commits.select("member", "topic", "partition", "ts", "seq", F.lit(1).alias("ord"), F.col("offset").alias("c_off"),
                       F.max("offset").over(earlier).alias("c_before"), null_long.alias("b_last"))
    b = batches.select("member", "topic", "partition", "ts", "seq", F.lit(0).alias("ord"), null_long.alias("c_off"),
                       null_long.alias("c_before"), F.col("last_offset").alias("b_last"))
    upto = Window.partitionBy("member", "topic", "partition").orderBy("ts", "ord", "seq").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    judged = c.unionByName(b).withColumn("processed_to", F.max("b_last").over(upto)).filter(F.col("ord") == 1)
    baseline = F.greatest(F.col("processed_to") + 1, F.col("c_before"))
    ahead = judged.select(
        "member", "topic", "partition", "ts", "seq", "c_off", "processed_to", baseline.alias("baseline"),
    ).filter(F.col("baseline").isNotNull() & (F.col("c_off") > F.col("baseline"))).withColumn(
        "records", F.col("c_off") - F.col("baseline")).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n = ahead.count()
        top = ahead.orderBy(F.desc("records"), "ts", "member", "seq").limit(MAX_ROWS).collect() if n else []
    finally:
        ahead.unpersist()
    counts["commits_ahead_of_processing"] = int(n)
    rows["commit_ahead"] = [
        _row("commit_ahead", r, ts_ms=r["ts"], last_offset=r["processed_to"], expected_offset=r["baseline"],
             committed_offset=r["c_off"])
        for r in top
    ]
