"""Why each record was processed again: one cause per duplicate processing, decided from the saved history.

A duplicate processing is a processing of a (topic, partition, offset) after its first. Its cause is the first
of ``CAUSES`` that holds (docs/metrics.md, "Causes of duplicate processing"): ``concurrent`` when it was
processed while two members owned the partition (or by a zombie); otherwise the record was re-delivered, and
what explains it is what the record's previous processor did with the partition's commit between its
processing of the record and the hand-over (the new owner's assignment): its last commit failed, or pointed at
or below the record (the gap says by how much: one record per hand-over is a commit of the last processed
offset instead of the next), or it made none because it died, lost the partition without a revoke, relied on
auto-commit, or just did not commit. A successful commit past the record that was re-delivered all the same is
``unexplained``: the history does not say why.

Processings and commits may be millions of rows: the facts are joined in Spark (an as-of window over each
member's commits of a partition), and only the counts per cause and at most ``MAX_ROWS`` rows per cause reach
the driver.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ..intervals import OwnershipInterval, disjoint_per_owner
from ..spark.local_rows import local_frame
from ..spark.side_by_side import side_by_side
from ..stage import Unknown

# In precedence order: a duplicate processing takes the first that holds.
CAUSES = ("concurrent", "commit_failed", "commit_below_record", "aborted_transaction", "died_before_commit",
          "partition_lost_before_commit", "auto_commit_window", "no_commit_after_processing", "unexplained")
# What each cause says, for the metrics' definitions (docs/metrics.md has the same words).
MEANINGS: dict[str, str] = {
    "concurrent": "processed while another member also owned the partition, or by a member that no longer owned it "
                  "while another did (a zombie)",
    "commit_failed": "the previous processor's last commit of the partition between its processing of the record and "
                     "the hand-over failed",
    "commit_below_record": "the previous processor's last successful commit of the partition between its processing "
                           "of the record and the hand-over pointed at or below the record (gap 1: it committed the "
                           "record's own offset, not the next)",
    "aborted_transaction": "the previous processor processes inside transactions (a Kafka Streams instance under "
                           "exactly-once) and made no commit of the partition between its processing of the record "
                           "and the hand-over: the transaction holding it was aborted (fenced, or its instance died), "
                           "so its output was discarded and the record was processed again, as exactly-once intends",
    "died_before_commit": "the previous processor died (killed, SIGKILLed after its stop timeout, crashed or exited) "
                          "after processing the record, without a commit of the partition in between",
    "partition_lost_before_commit": "the previous processor's ownership ended without a revoke (lost: session "
                                    "expired or fenced; or max.poll.interval.ms exceeded) before any commit of the "
                                    "partition after it processed the record",
    "auto_commit_window": "the previous processor auto-commits and made no commit of the partition between its "
                          "processing of the record and the hand-over: the record fell after its last auto-commit",
    "no_commit_after_processing": "the previous processor does not auto-commit, lived through the hand-over and made "
                                  "no commit of the partition after processing the record",
    "unexplained": "the history cannot say: the previous processor committed past the record before the hand-over, "
                   "or its commit mode is unknown",
}
MAX_ROWS = 10_000  # rows per cause kept for the duplicate_processings table; the metrics count them all
# How an ownership interval ends without a revoke callback, so without the member's chance to commit.
ENDS_WITHOUT_REVOKE = ("lost", "max_poll_exceeded")
NO_BELOW_COMMIT = "no duplicate processing whose previous processor's commit pointed at or below it"

SCHEMA = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("first_offset", pa.int64()), ("last_offset", pa.int64()),
     ("records", pa.int64()), ("member", pa.string()), ("ts_ms", pa.int64()), ("cause", pa.string()),
     ("previous_member", pa.string()), ("previous_ts_ms", pa.int64()), ("previous_end", pa.string()),
     ("handover_ms", pa.int64()), ("commit_ms", pa.int64()), ("commit_error", pa.string()),
     ("committed_offset", pa.int64()), ("commit_gap", pa.int64())])
COLUMNS = tuple(SCHEMA.names)
_INTERVALS = "i_member string, i_topic string, i_partition int, i_start long, i_end long, i_end_reason string"
_MEMBERS = "x_member string, died_ms long, auto_commit boolean, transactional boolean"
_COMMITS = "member string, ts long, seq long, topic string, partition int, offset long, error string"


def metric_name(cause: str) -> str:
    """The metric counting duplicate processings of ``cause`` (``duplicates_concurrent`` is one of them)."""
    return f"duplicates_{cause}"


@dataclass(frozen=True)
class CauseInputs:
    """What the causes are judged from besides the processings and the ownership intervals: every member's
    commits of a partition (:func:`commit_attempts`), when members died (killed, SIGKILLed after the stop
    timeout, or exited by themselves), whether each auto-commits (None: its ``started`` does not say) and which
    process inside transactions (Kafka Streams instances under exactly-once)."""

    commits: DataFrame
    died_ms: dict[str, int]
    auto_commit: dict[str, bool | None]
    transactional: frozenset[str] = frozenset()

    @classmethod
    def unknown(cls, spark: SparkSession) -> CauseInputs:
        """No commit, death or commit mode known: every re-delivery is unexplained."""
        return cls(local_frame(spark, [], _COMMITS), {}, {})


@dataclass
class DuplicateCauses:
    """Records processed again per cause (every cause, 0 when none), the largest commit gap, and at most
    ``MAX_ROWS`` rows per cause in time order; ``left_out`` rows were not kept."""

    counts: dict[str, int]
    commit_gap_max: int | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: int = 0
    mismatch: str | None = None  # set by :meth:`check` when the causes do not add up

    @classmethod
    def none(cls) -> DuplicateCauses:
        return cls({cause: 0 for cause in CAUSES})

    def check(self, total: int) -> None:
        """The causes must add up to ``duplicates_total``; if they do not, every cause figure is unknown."""
        found = sum(self.counts.values())
        if found != total:
            self.mismatch = (f"the causes add up to {found} duplicate processings, not duplicates_total {total} "
                             "(a defect of the analysis)")

    def count(self, cause: str) -> int | Unknown:
        return Unknown(self.mismatch) if self.mismatch else self.counts[cause]

    def gap_max(self) -> int | Unknown:
        if self.mismatch:
            return Unknown(self.mismatch)
        return self.commit_gap_max if self.commit_gap_max is not None else Unknown(NO_BELOW_COMMIT)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(COLUMNS))

    @property
    def examples(self) -> list[dict[str, Any]]:
        """The first duplicate processing of each cause present, in the order of ``CAUSES``."""
        first: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            first.setdefault(row["cause"], dict(row))
        return [first[c] for c in CAUSES if c in first]


def commit_attempts(member_events: DataFrame) -> DataFrame:
    """One row per partition of every ``committed`` event, successful or not: member, ts, seq, topic,
    partition, offset, error. Negative offsets (librdkafka's OFFSET_INVALID: nothing stored) commit nothing."""
    return (
        member_events.filter((F.col("name") == "committed") & F.col("offsets").isNotNull())
        .select("member", F.col("ts_ms").alias("ts"), "seq", "error", F.explode("offsets").alias("o"))
        .select("member", "ts", "seq", F.col("o.topic").alias("topic"), F.col("o.partition").alias("partition"),
                F.col("o.offset").alias("offset"), "error")
        .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull() & (F.col("offset") >= 0))
    )


@contextmanager
def classified(spark: SparkSession, extra: DataFrame, intervals: Sequence[OwnershipInterval],
               inputs: CauseInputs) -> Iterator[DataFrame]:
    """``extra``: one row per duplicate processing of a segment (topic, partition, seg_start, seg_end, member, ts,
    prev_member, prev_ts, concurrent). Yields the table's columns (``COLUMNS``), one row per run of records of one
    cause, persisted while in use: a segment is cut where the previous processor's last successful commit falls
    inside it."""
    base = _base_facts(spark, extra, intervals, inputs)
    try:
        facts = _with_commits(base, inputs.commits)
        committed = F.col("committed_offset")
        # Records at or above the commit were not covered by it; those below it were (concurrent rows stay whole).
        cut = F.when(~F.col("concurrent") & committed.isNotNull(),
                     F.least(F.greatest(committed, F.col("seg_start")), F.col("seg_end") + 1)).otherwise(F.col("seg_start"))
        covered = facts.select("*", F.col("seg_start").alias("first_offset"), (cut - 1).alias("last_offset"),
                               F.lit(True).alias("covered"))
        uncovered = facts.select("*", cut.alias("first_offset"), F.col("seg_end").alias("last_offset"),
                                 F.lit(False).alias("covered"))
        parts = covered.unionByName(uncovered).filter(F.col("last_offset") >= F.col("first_offset"))
        cause = _cause()
        frame = parts.select(
            "topic", "partition", "first_offset", "last_offset",
            (F.col("last_offset") - F.col("first_offset") + 1).alias("records"), "member", F.col("ts").alias("ts_ms"),
            cause.alias("cause"), F.col("prev_member").alias("previous_member"),
            F.col("prev_ts").alias("previous_ts_ms"), F.col("prev_end").alias("previous_end"), "handover_ms",
            "commit_ms", "commit_error", "committed_offset",
            F.when(cause == "commit_below_record", F.col("last_offset") + 1 - committed).alias("commit_gap"),
        ).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            yield frame
        finally:
            frame.unpersist()
    finally:
        base.unpersist()


def _cause() -> Column:
    """The precedence, over the facts of one run of records: the first rule that holds names its cause."""
    no_attempt = F.col("commit_ms").isNull()
    uncovered = ~F.col("covered")
    rules = (
        ("concurrent", F.col("concurrent")),
        # its last commit attempt of the partition after processing the record failed
        ("commit_failed", uncovered & F.col("commit_error").isNotNull()),
        # its last successful commit after processing the record pointed at or below it
        ("commit_below_record", uncovered & F.col("committed_offset").isNotNull()),
        # no commit of it: the transaction that held it never committed (an instance's death aborts it too)
        ("aborted_transaction", no_attempt & F.col("transactional")),
        ("died_before_commit", no_attempt & F.col("died")),
        ("partition_lost_before_commit", no_attempt & F.col("prev_end").isin(*ENDS_WITHOUT_REVOKE)),
        ("auto_commit_window", no_attempt & (F.col("auto_commit") == F.lit(True))),
        ("no_commit_after_processing", no_attempt & (F.col("auto_commit") == F.lit(False))),
    )
    assert [name for name, _ in rules] == list(CAUSES[:-1])  # one list of causes, in one order
    expr = F.when(rules[0][1], F.lit(rules[0][0]))
    for name, holds in rules[1:]:
        expr = expr.when(holds, F.lit(name))
    return expr.otherwise(F.lit(CAUSES[-1]))


def _base_facts(spark: SparkSession, extra: DataFrame, intervals: Sequence[OwnershipInterval],
                inputs: CauseInputs) -> DataFrame:
    """Each duplicate processing (``rid``) with the facts its cause is read from but the commits, persisted: how
    the previous processor's interval holding its processing ended (``prev_end``), the hand-over (the new owner's
    assignment, else the re-processing itself), whether the previous processor died between its processing and
    the re-processing (``died``) and whether it auto-commits (``auto_commit``)."""
    ivs = F.broadcast(local_frame(
        spark, [(iv.member, iv.topic, int(iv.partition), int(iv.start_ms), eff_end, iv.end_reason)
                for iv, eff_end in disjoint_per_owner(intervals)], _INTERVALS))
    members = F.broadcast(local_frame(
        spark, [(m, inputs.died_ms.get(m), inputs.auto_commit.get(m), m in inputs.transactional)
                for m in sorted(set(inputs.died_ms) | set(inputs.auto_commit) | inputs.transactional)], _MEMBERS))

    def holding(member: str, at: str, prefix: str) -> tuple[DataFrame, Column]:
        own = ivs.select(*[F.col(c).alias(prefix + c) for c in ivs.columns])
        return own, ((F.col(member) == F.col(prefix + "i_member")) & (F.col("topic") == F.col(prefix + "i_topic"))
                     & (F.col("partition") == F.col(prefix + "i_partition"))
                     & F.col(at).between(F.col(prefix + "i_start"), F.col(prefix + "i_end")))

    new_iv, new_on = holding("member", "ts", "n_")
    prev_iv, prev_on = holding("prev_member", "prev_ts", "p_")
    start = F.col("n_i_start")
    facts = (
        extra.withColumn("rid", F.monotonically_increasing_id())
        .join(new_iv, new_on, "left").join(prev_iv, prev_on, "left")
        .join(members, F.col("prev_member") == F.col("x_member"), "left")
        .select("rid", "topic", "partition", "seg_start", "seg_end", "member", "ts", "prev_member", "prev_ts",
                "concurrent", F.col("p_i_end_reason").alias("prev_end"),
                # A new owner assigned before the previous processing owned beside it: no hand-over, judge up to
                # the re-processing itself (a member re-reading its own partition, too).
                F.when(start.isNotNull() & (start >= F.col("prev_ts")), start).otherwise(F.col("ts")).alias("handover_ms"),
                F.coalesce(F.col("died_ms").between(F.col("prev_ts"), F.col("ts")), F.lit(False)).alias("died"),
                "auto_commit", F.coalesce(F.col("transactional"), F.lit(False)).alias("transactional"))
    ).persist(StorageLevel.MEMORY_AND_DISK)
    facts.count()  # the ids are drawn once: both sides of the as-of join (``_with_commits``) read these rows
    return facts


def _with_commits(facts: DataFrame, commits: DataFrame) -> DataFrame:
    """The facts with the previous processor's last commit attempt of the partition in [its processing, the
    hand-over] (``commit_ms``, ``commit_error``) and its last successful one there (``committed_offset``)."""
    last = _last_commits(facts, commits)
    attempt, success = F.col("last_attempt"), F.col("last_success")
    in_window = lambda s: s.isNotNull() & (s["ts"] >= F.col("prev_ts"))  # noqa: E731 - read twice below
    return facts.join(last, "rid", "left").select(
        *[c for c in facts.columns if c != "rid"],
        F.when(in_window(attempt), attempt["ts"]).alias("commit_ms"),
        F.when(in_window(attempt), attempt["error"]).alias("commit_error"),
        F.when(in_window(success), success["offset"]).alias("committed_offset"),
    )


def _last_commits(facts: DataFrame, commits: DataFrame) -> DataFrame:
    """Per duplicate processing (``rid``), the previous processor's last commit attempt of the partition at or
    before the hand-over and its last successful one (structs of ts, offset, error; null without one): one sort
    of each member's commits of a partition with the hand-overs among them, commits first at equal times (a
    revoke's commit and the next assignment may share a millisecond)."""
    attempt = F.struct(F.col("ts"), F.col("offset"), F.col("error"))
    success = F.struct(F.col("ts"), F.col("offset"))
    c = commits.select(F.col("member").alias("k_member"), "topic", "partition", "ts", F.lit(0).alias("ord"), "seq",
                       attempt.alias("attempt"), F.when(F.col("error").isNull(), success).alias("success"),
                       F.lit(None).cast("long").alias("rid"))
    q = facts.select(F.col("prev_member").alias("k_member"), "topic", "partition", F.col("handover_ms").alias("ts"),
                     F.lit(1).alias("ord"), F.lit(None).cast("long").alias("seq"),
                     F.lit(None).cast(c.schema["attempt"].dataType).alias("attempt"),
                     F.lit(None).cast(c.schema["success"].dataType).alias("success"), "rid")
    upto = Window.partitionBy("k_member", "topic", "partition").orderBy("ts", "ord", "seq").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    return c.unionByName(q).select(
        "rid", "ord", F.last("attempt", ignorenulls=True).over(upto).alias("last_attempt"),
        F.last("success", ignorenulls=True).over(upto).alias("last_success"),
    ).filter(F.col("ord") == 1).drop("ord")


def summarise_causes(classified: DataFrame) -> DuplicateCauses:
    """Counts per cause, the largest commit gap and the bounded rows of a :func:`classify` result."""
    nth = F.row_number().over(
        Window.partitionBy("cause").orderBy("ts_ms", "topic", "partition", "first_offset", "member"))
    agg, kept = side_by_side(
        classified.sparkSession,
        lambda: classified.groupBy("cause").agg(F.sum("records").alias("records"), F.max("commit_gap").alias("gap"),
                                                F.count(F.lit(1)).alias("rows")).collect(),
        lambda: classified.withColumn("_n", nth).filter(F.col("_n") <= MAX_ROWS).drop("_n").collect())
    counts = {cause: 0 for cause in CAUSES}
    gaps = [int(r["gap"]) for r in agg if r["gap"] is not None]
    counts.update({r["cause"]: int(r["records"]) for r in agg})
    rows = sorted((_plain(r.asDict()) for r in kept),
                  key=lambda r: (CAUSES.index(r["cause"]), r["ts_ms"], r["topic"] or "",
                                 r["partition"] if r["partition"] is not None else -1, r["first_offset"]))
    return DuplicateCauses(counts, max(gaps) if gaps else None, rows, sum(int(r["rows"]) for r in agg) - len(rows))


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {c: (int(row[c]) if row[c] is not None and SCHEMA.field(c).type in (pa.int32(), pa.int64()) else row[c])
            for c in COLUMNS}
