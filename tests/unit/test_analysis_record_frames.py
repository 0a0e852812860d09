"""records.record_frames cuts processed batches into segments and finds each ack's segment by a bucketed range
join. Its figures must equal a per-record recount (every batch exploded to its offsets, grouped per record):
null keys, repeated acks, acks never processed and overlapping batches included."""

from __future__ import annotations

from collections import defaultdict

import pytest
from pyspark.sql import functions as F

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.records import record_stats as records
from testbed.analysis.records.coverage import bucket_width, coverage

BATCHES = "member string, ts long, topic string, partition int, first_offset long, last_offset long, count long, pmin long"
ACKS = "topic string, partition int, offset long, produce_ts_ms long"

BATCH_ROWS = [
    ("a", 1000, "t", 0, 0, 2, 3, 900),      # offsets 0-2 of partition 0
    ("b", 1500, "t", 0, 1, 3, 3, 950),      # 1-2 again (duplicates, later), 3 never acked
    ("c", 1400, "t", 0, 2, 9, 8, 940),      # 2-3 a third / second time, 4-9 first
    ("a", 1200, "t", 1, 5, 5, 1, 1100),     # partition 1, offset 5
    ("a", 1300, "t", None, 7, 7, 1, 1250),  # a null partition: never matched with an ack
    ("b", 1310, "t", None, 7, 8, 2, 1260),  # ... but a duplicate of its own partition's offset 7
    ("a", 1400, "u", 2, 4, 3, 0, 1300),     # an empty batch (last < first): left out
    ("a", 9000, "t", 1, 6, 6, 1, 1195),     # offset 6 of partition 1 processed after the cutoff: lost
]
ACK_ROWS = [
    ("t", 0, 0, 800), ("t", 0, 1, 810), ("t", 0, 1, 805),  # offset 1 acked twice: one record, the earliest counts
    ("t", 0, 2, 820), ("t", 1, 6, 1190), ("t", 1, 5, 1095),
    ("t", 0, 40, 1300),                                     # never processed: lost
    ("t", 0, 4, 1100),                                      # waited through the bounce, processed after it
    ("t", None, 7, 1240), ("t", None, 7, 1245),             # null partition: a record of its own, never processed
    ("t", 0, None, 1000),                                   # no offset: not locatable
]
CUTOFF = 5000


def _record_order(key):
    """Spark's ascending order: a null partition first."""
    topic, partition, offset = key
    return topic, partition is not None, partition or 0, offset


# Every record named once: the one-pass summary, no per-record grouping.
ONCE_ROWS = [r for i, r in enumerate(ACK_ROWS) if r not in (("t", 0, 1, 810), ("t", None, 7, 1245))]
# Partition 1's offsets 5 (produced 1095, first processed at 1200) and 6 (1190, 9000) and partition 0's offset 4
# (1100, 1400) waited through the bounce: all three are its latency, the last two although processed after its end.
BOUNCE = [(1150, 1250)]


def _recount(batch_rows, ack_rows, cutoff):
    """Per record (topic, partition, offset): processings (ts, pmin) and acks' produce times, by hand."""
    processings = defaultdict(list)
    for member, ts, topic, partition, first, last, _count, pmin in batch_rows:
        for offset in range(first, last + 1):
            processings[(topic, partition, offset)].append((ts, pmin, member))
    produce = {}
    for topic, partition, offset, p in ack_rows:
        if offset is not None:
            key = (topic, partition, offset)
            produce[key] = min(p, produce.get(key, p))
    first = {k: min(v)[0] for k, v in processings.items()}
    lost = sorted((k for k in produce if k not in first or first[k] > cutoff or k[1] is None), key=_record_order)
    waits = defaultdict(list)  # (topic, partition, first processing or NEVER): produce times
    for k, p in produce.items():
        waits[(k[0], k[1], records.NEVER if k in lost else first[k])].append(p)
    return {
        "firsts": {k: min(v) for k, v in waits.items()},
        "bounce_latencies": sorted(first[k] - p for k, p in produce.items() if k in first and k[1] is not None
                                   and any(p <= b and first[k] >= a for a, b in BOUNCE)),
        "steady_latencies": sorted(first[k] - p for k, p in produce.items() if k in first and k[1] is not None
                                   and not any(p <= b and first[k] >= a for a, b in BOUNCE)),
        "produced": sorted({p // 1000 for p in produce.values()}),
        "lost_produce": [produce[k] for k in lost],
        "unique": len(processings),
        "dup_total": sum(len(v) - 1 for v in processings.values()),
        "dup_records": sum(len(v) > 1 for v in processings.values()),
        "acked": len(produce),
        "lost": lost,
        "latencies": sorted(first[k] - p for k, p in produce.items() if k in first and k[1] is not None),
        "unlocated": sum(o is None for _t, _p, o, _ in ack_rows),
    }


@pytest.fixture(params=[("broadcast", ACK_ROWS), ("shuffled", ACK_ROWS), ("broadcast", ONCE_ROWS)],
                ids=["broadcast", "shuffled", "each-record-once"])
def frames(spark, request, monkeypatch):  # noqa: F811
    join, ack_rows = request.param
    if join == "shuffled":  # segments too many to send whole: the acks are shuffled to them instead
        monkeypatch.setattr(records, "BROADCAST_ROWS", 0)
    batches = spark.createDataFrame(BATCH_ROWS, BATCHES)
    acks = spark.createDataFrame(ack_rows, ACKS)
    built = records.record_frames(spark, batches, acks, CUTOFF, bounce_windows=BOUNCE)
    built.ack_rows = ack_rows
    yield built
    built.release()


def test_segments_and_acks_give_the_per_record_recount(frames):
    want = _recount(BATCH_ROWS, frames.ack_rows, CUTOFF)
    assert frames.processing["unique"] == want["unique"]
    assert frames.processing["dup_total"] == want["dup_total"]
    assert frames.processing["dup_records"] == want["dup_records"]
    totals = frames.ack_totals
    assert (totals.acked, totals.lost, totals.unlocated) == (want["acked"], len(want["lost"]), want["unlocated"])
    # offset 1 and the null partition's offset 7, each named twice
    assert totals.repeated == (2 if frames.ack_rows is ACK_ROWS else 0)
    histogram = frames.acks.latencies().collect()
    assert sorted(r["lat"] for r in histogram for _ in range(r["n"])) == want["latencies"]
    assert {(r["topic"], r["partition"], r["t"]): r["w"] for r in records.first_waits(frames).collect()} == want["firsts"]
    assert sorted(r["second"] for r in frames.acks.produced().collect()) == want["produced"]


def test_record_stats_match_the_recount(frames):
    want = _recount(BATCH_ROWS, frames.ack_rows, CUTOFF)
    stats = records.record_stats(frames, records.duplicates(frames, {}))
    assert stats.unique_processed == want["unique"]
    assert (stats.acked, stats.lost) == (want["acked"], len(want["lost"]))
    assert [(e["topic"], e["partition"], e["offset"]) for e in stats.lost_examples] == want["lost"]
    assert [e["produce_ts"] for e in stats.lost_examples] == want["lost_produce"]
    assert stats.latency["all"].max == max(want["latencies"])
    assert stats.latency["bounce"].max == max(want["bounce_latencies"])
    assert stats.latency["steady"].max == max(want["steady_latencies"])
    assert stats.duplicates_total == want["dup_total"] and stats.duplicates_concurrent == 0
    # Every extra processing, one per record and later batch: offsets 1, 2 (twice), 3 of partition 0 and 7 of none.
    assert sum(stats.timeseries["duplicates"]) == want["dup_total"]


def test_the_segments_of_overlapping_batches(spark):  # noqa: F811
    batches = spark.createDataFrame(BATCH_ROWS, BATCHES).filter(F.col("last_offset") >= F.col("first_offset"))
    segs = coverage(batches, bucket_width(20, 6)).segments
    got = sorted((r["topic"], r["partition"], r["seg_start"], r["seg_end"], r["n"], r["first_ts"])
                 for r in segs.collect() if r["partition"] == 0)
    assert got == [("t", 0, 0, 0, 1, 1000), ("t", 0, 1, 1, 2, 1000), ("t", 0, 2, 2, 3, 1000),
                   ("t", 0, 3, 3, 2, 1400), ("t", 0, 4, 9, 1, 1400)]


def test_without_acks_latency_comes_from_the_first_batch(spark):  # noqa: F811
    batches = spark.createDataFrame([("a", 1000, "t", 0, 0, 1, 2, 900), ("b", 900, "t", 0, 1, 1, 1, 850)], BATCHES)
    frames = records.record_frames(spark, batches, None, None)
    try:
        stats = records.record_stats(frames, records.duplicates(frames, {}))
    finally:
        frames.release()
    # offset 0: 1000 - 900; offset 1: first processed by b at 900, produced by 850 -> 50.
    assert (stats.unique_processed, stats.duplicates_total, stats.acked, stats.lost) == (2, 1, None, None)
    assert (stats.latency["all"].p50, stats.latency["all"].max) == (75.0, 100.0)
