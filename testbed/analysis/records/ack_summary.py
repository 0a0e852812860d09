"""Everything the record figures need of the producers' acks, from one aggregation pass.

The acks are one line per record, the largest input by far. Each ack, joined with its record's first
processing (``record_stats.record_frames``), is read once and grouped two ways at once (grouping sets); the
groups, a few rows per 64-offset word and per latency, are all that is kept, and every figure is a small
query over them. Measured at 10M acks (benchmarks/analysis_scale.py): keeping the joined acks in memory for
several queries cost more than parsing them (about 4 s against 5 s); a pass of five grouping sets (one per
figure) cost about 4 s on top of the parse and join, these two about 1.7 s: grouping sets repeat every row
once per set, so the sets are few and the figures are read from the finer one.

The groups, told apart by their grouping id:

- ``word``: per topic, partition, 64-offset word (``offset // 64``), first-processing instant ``t``
  (``NEVER`` when not processed by the cutoff), produce second and, for a lost record only, its offset: the
  lines, the earliest produce time ``w`` and the offsets named and lost (64-bit masks). Records of one word
  are mostly first processed together and produced within a second, so this is about one row per word. The
  masks give exact distinct counts without a per-record shuffle, and repeated lines are detected; per
  ``(topic, partition, t)`` the earliest produce time is what the availability gaps need; per second the
  records produced; the lost records' rows are the examples.
- ``latency``: per (latency, in a bounce window) of processed records, how many.

Every figure but the lines counts located acks only (a topic, an offset and a produce time). An offset named
by two lines (a reused offset, a repeated line) would count twice in the latencies and the produce seconds:
``record_stats.record_frames`` then groups the acks per record first and summarises again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

TP = ["topic", "partition"]
NEVER = 1 << 62  # the processing instant of a record nobody processed by the cutoff
# The grouping sets, in the order their grouping ids are computed below.
_SETS = {
    "word": ["topic", "partition", "word", "t", "second", "lost_offset"],
    "latency": ["lat", "bounce"],
}
_KEYS = ["topic", "partition", "word", "t", "second", "lost_offset", "lat", "bounce"]


def _grouping_id(keys: Sequence[str]) -> int:
    """Spark's grouping id of a set: one bit per grouping column (first column highest), set when the column
    is not in the set."""
    return sum(1 << (len(_KEYS) - 1 - i) for i, k in enumerate(_KEYS) if k not in keys)


@dataclass
class AckTotals:
    acked: int  # distinct located records
    lost: int  # of those, never processed by the cutoff
    unlocated: int  # complete ack lines without an offset
    repeated: int  # located ack lines naming a record another line already named


def waited_through(since: Column, until: Column, windows: Sequence[tuple[int, int]]) -> Column:
    """Whether a record's wait, from its produce time ``since`` to its first processing ``until``, overlaps one of
    the ``windows`` (bounces, rebalance episodes): the backlog a rebalance left, processed just after its last
    assignment, is the rebalance's latency, not the steady state's."""
    cond = F.lit(False)
    for start, end in windows:
        cond = cond | ((since <= end) & (until >= start))
    return cond


@dataclass
class AckSummary:
    """The grouped acks (persisted until :meth:`release`) and their totals."""

    table: DataFrame
    totals: AckTotals

    def _set(self, name: str) -> DataFrame:
        return self.table.filter(F.col("g") == _grouping_id(_SETS[name]))

    def _located(self) -> DataFrame:
        return self._set("word").filter(F.col("word").isNotNull())

    def firsts(self) -> DataFrame:
        """topic, partition, t, w."""
        return self._located().groupBy(*TP, "t").agg(F.min("w").alias("w"))

    def latencies(self) -> DataFrame:
        """lat, bounce, n: a histogram of processed records' latencies."""
        return self._set("latency").filter(F.col("lat").isNotNull()).select("lat", "bounce", "n")

    def produced(self) -> DataFrame:
        """second, produced."""
        return self._located().groupBy("second").agg(F.sum("n").alias("produced"))

    def lost_examples(self, limit: int) -> list[dict]:
        rows = self._set("word").filter(F.col("lost_offset").isNotNull()).select(
            *TP, F.col("lost_offset").alias("offset"), F.col("w").alias("produce_ts")).orderBy(*TP, "offset").limit(limit)
        return [r.asDict() for r in rows.collect()]

    def release(self) -> None:
        self.table.unpersist()


def summarise(joined: DataFrame, located: Column, lost: Column, bounce_windows: Sequence[tuple[int, int]]) -> AckSummary:
    """``joined``: every ack line (topic, partition, offset, produce_ts_ms, any of them null) with its record's
    ``first_ts`` (null: never processed). ``located``: the ack names its record; ``lost``: a located record
    nobody processed by the cutoff."""
    offset, produce, first = F.col("offset"), F.col("produce_ts_ms"), F.col("first_ts")
    bit = F.expr("shiftleft(1L, cast(offset & 63 as int))")  # the offset's bit in its word
    rows = joined.select(
        *TP, offset, produce, located.alias("located"), lost.alias("is_lost"),
        F.when(located, F.shiftright(offset, 6)).alias("word"),  # floor(offset / 64), also for a negative offset
        F.when(located, F.when(lost, F.lit(NEVER)).otherwise(first)).alias("t"),
        F.when(located, (produce / 1000).cast("long")).alias("second"),
        F.when(located & lost, offset).alias("lost_offset"),
        F.when(located & first.isNotNull(), first - produce).alias("lat"),
        F.when(located & first.isNotNull(), waited_through(produce, first, bounce_windows)).alias("bounce"),
        bit.alias("bit"),
    )
    counted = F.col("located")
    table = rows.groupingSets([[F.col(k) for k in keys] for keys in _SETS.values()], *_KEYS).agg(
        F.grouping_id(*_KEYS).alias("g"),
        F.count(F.when(counted, 1)).alias("n"),
        F.min(F.when(counted, F.col("produce_ts_ms"))).alias("w"),
        F.bit_or(F.when(counted, F.col("bit"))).alias("bits"),
        F.bit_or(F.when(counted & F.col("is_lost"), F.col("bit"))).alias("lost_bits"),
        F.count(F.when(F.col("offset").isNull(), 1)).alias("no_offset"),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    words = table.filter(F.col("g") == _grouping_id(_SETS["word"])).groupBy(*TP, "word").agg(
        F.sum("n").alias("n"), F.bit_or("bits").alias("bits"), F.bit_or("lost_bits").alias("lost_bits"),
        F.sum("no_offset").alias("no_offset"))
    row = words.agg(*[F.coalesce(F.sum(c), F.lit(0)).alias(name) for name, c in (
        ("lines", F.col("n")), ("records", F.bit_count("bits")), ("lost", F.bit_count("lost_bits")),
        ("unlocated", F.col("no_offset")))]).first()
    totals = AckTotals(acked=int(row["records"]), lost=int(row["lost"]), unlocated=int(row["unlocated"]),
                       repeated=int(row["lines"]) - int(row["records"]))
    return AckSummary(table, totals)
