"""Which batches processed each record, without one row per processed record.

A partition's offsets are cut at every processed batch's first offset and after its last into
*segments*: runs of consecutive offsets processed by exactly the same batches. Each segment carries what
the record figures need of every record in it (how many processings, the first one's time and its batch's
earliest produce time), so a run of 10M records processed in batches of 100 is about 100K segments, not
10M exploded rows grouped by a shuffle. The producers' acks (one row per record, the largest input) then
find their segment by a hash join on (topic, partition, offset bucket) with a range test: segments never
overlap, so each ack matches at most one and no per-record grouping follows.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

TP = ["topic", "partition"]
# A hash table of up to this many rows is sent to every task instead of shuffling the other side.
BROADCAST_ROWS = 1_000_000


def _bucket(column: str, width: int) -> Column:
    # Integer division truncates towards zero: monotone, so a range's buckets hold all of its offsets' buckets.
    return F.expr(f"`{column}` div {int(width)}")


def bucket_width(total_length: int, ranges: int) -> int:
    """Offsets per bucket: the ranges' mean length, so that a range spans about two buckets and an offset's
    bucket holds about two candidate ranges."""
    return max(1, total_length // max(1, ranges))


def in_ranges(points: DataFrame, point: str, ranges: DataFrame, lo: str, hi: str, width: int, *,
              how: str = "inner", null_safe_keys: bool = False, broadcast: bool = False) -> DataFrame:
    """``points`` joined with the rows of ``ranges`` (same topic and partition) whose ``[lo, hi]`` holds the
    point: an equi-join on the offset bucket, then the range test. Columns: every column of ``points`` and
    every column of ``ranges`` but its topic and partition. ``null_safe_keys``: a null topic or partition
    matches a null (processings of one unnamed partition); otherwise a null never matches (an ack's)."""
    bucketed = ranges.select(*[F.col(k).alias(f"_r_{k}") for k in TP], "*").drop(*TP).withColumn(
        "_r_bucket", F.explode(F.sequence(_bucket(lo, width), _bucket(hi, width))))
    if broadcast:
        bucketed = F.broadcast(bucketed)
    pts = points.withColumn("_p_bucket", _bucket(point, width))
    same = [(pts[k].eqNullSafe(bucketed[f"_r_{k}"]) if null_safe_keys else pts[k] == bucketed[f"_r_{k}"]) for k in TP]
    cond = same[0] & same[1] & (pts["_p_bucket"] == bucketed["_r_bucket"]) & pts[point].between(bucketed[lo], bucketed[hi])
    return pts.join(bucketed, cond, how).drop("_p_bucket", "_r_bucket", *[f"_r_{k}" for k in TP])


@dataclass
class Coverage:
    """``covers``: one row per (segment, batch that processed it): topic, partition, seg_start, seg_end,
    length, member, ts, pmin. ``segments``: one row per processed segment: topic, partition, seg_start,
    seg_end, length, ``n`` processings of each of its records, ``first_ts`` and the first batch's ``pmin``."""

    covers: DataFrame
    segments: DataFrame


def coverage(batches: DataFrame, mean_batch_length: int) -> Coverage:
    """Segments of ``batches`` (member, ts, topic, partition, first_offset, last_offset, pmin; every
    ``last_offset >= first_offset``). ``mean_batch_length`` sets the bucket width of the covering join."""
    starts = batches.select(*TP, F.col("first_offset").alias("o"))
    ends = batches.select(*TP, (F.col("last_offset") + 1).alias("o"))
    cuts = starts.unionByName(ends).distinct()
    following = F.lead("o").over(Window.partitionBy(*TP).orderBy("o"))
    pieces = cuts.select(*TP, F.col("o").alias("seg_start"), (following - 1).alias("seg_end")).filter(
        F.col("seg_end").isNotNull())
    # A piece between two batches is covered by none: the inner join drops it.
    covers = in_ranges(pieces, "seg_start", batches.select(*TP, "member", "ts", "pmin", "first_offset", "last_offset"),
                       "first_offset", "last_offset", max(1, mean_batch_length), null_safe_keys=True).select(
        *TP, "seg_start", "seg_end", (F.col("seg_end") - F.col("seg_start") + 1).alias("length"), "member", "ts", "pmin")
    segments = covers.groupBy(*TP, "seg_start", "seg_end", "length").agg(
        F.count(F.lit(1)).alias("n"), F.min("ts").alias("first_ts"), F.min_by("pmin", "ts").alias("pmin"))
    return Coverage(covers, segments)
