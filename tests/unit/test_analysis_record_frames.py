"""records.record_frames groups processings and acks per record in one aggregation: it must give what the full
outer join of the two per-record groupings gave, null keys and ack-only or processing-only records included."""

from __future__ import annotations

from pyspark.sql import functions as F

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.records import KEY, record_frames

BATCHES = "member string, ts long, topic string, partition int, first_offset long, last_offset long, count long, pmin long"
ACKS = "topic string, partition int, offset long, produce_ts_ms long"


def _joined_by_full_outer_join(offsets, acks):
    """The per-record frame as it was computed before: two groupings and a full outer join."""
    per_record = offsets.groupBy(*KEY).agg(
        F.count(F.lit(1)).alias("n"), F.min("ts").alias("first_ts"), F.min_by("pmin", "ts").alias("pmin"))
    acked = acks.groupBy(*KEY).agg(F.min("produce_ts_ms").alias("produce_ts"))
    return per_record.join(acked, KEY, "full_outer")


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.select(*KEY, "n", "first_ts", "pmin", "produce_ts").collect()), key=repr)


def test_one_aggregation_equals_the_full_outer_join(spark):  # noqa: F811
    batches = spark.createDataFrame([
        ("a", 1000, "t", 0, 0, 2, 3, 900),      # offsets 0-2 of partition 0
        ("b", 1500, "t", 0, 1, 3, 3, 950),      # 1-2 again (duplicates, later), 3 never acked
        ("a", 1200, "t", 1, 5, 5, 1, 1100),     # partition 1, offset 5
        ("a", 1300, "t", None, 7, 7, 1, 1250),  # a null partition: never matched with an ack
        ("a", 1400, "u", 2, 4, 3, 0, 1300),     # an empty batch (last < first): left out
    ], BATCHES)
    acks = spark.createDataFrame([
        ("t", 0, 0, 800), ("t", 0, 1, 810), ("t", 0, 1, 805),  # offset 1 acked twice: the earliest counts
        ("t", 0, 2, 820), ("t", 1, 6, 1190),                    # offset 6 of partition 1 never processed
        ("t", None, 7, 1240), ("t", None, 7, 1245),             # null partition: grouped apart from processings
    ], ACKS)
    frames = record_frames(batches, acks)
    assert _rows(frames.joined) == _rows(_joined_by_full_outer_join(frames.offsets, acks))
    by_key = {r[:3]: r for r in _rows(frames.joined)}
    assert by_key[("t", 0, 1)] == ("t", 0, 1, 2, 1000, 900, 805)
    assert by_key[("t", 0, 3)] == ("t", 0, 3, 1, 1500, 950, None)
    assert by_key[("t", 1, 6)] == ("t", 1, 6, None, None, None, 1190)
    assert [r for r in _rows(frames.joined) if r[1] is None] == sorted(
        [("t", None, 7, None, None, None, 1240), ("t", None, 7, 1, 1300, 1250, None)], key=repr)


def test_without_acks_every_record_has_no_produce_time(spark):  # noqa: F811
    batches = spark.createDataFrame([("a", 1000, "t", 0, 0, 1, 2, 900), ("b", 900, "t", 0, 1, 1, 1, 850)], BATCHES)
    assert _rows(record_frames(batches, None).joined) == [("t", 0, 0, 1, 1000, 900, None), ("t", 0, 1, 2, 900, 850, None)]
