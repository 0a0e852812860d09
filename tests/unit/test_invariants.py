"""Kafkatest-style invariants (testbed/analysis/records/invariants.py) and the rebalance-aware concurrent duplicates of
record_stats, on small hand-built histories whose answers are worked out in the comments (topic ``t``).

Ownership intervals are given by hand (what control.ownership_intervals makes of the callbacks), so each
test states exactly which member owned what when."""

from __future__ import annotations

from pathlib import Path

import pytest

from histories.builder import TOPIC, HistoryBuilder
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.records import record_stats as records
from testbed.analysis.intervals import OwnershipInterval
from testbed.analysis.intervals import OwnerSpan, shared_ownership
from testbed.analysis.records.invariants import CATALOGUE, COLUMNS, EXAMPLES, KINDS, NO_COMMITS, check_invariants
from testbed.analysis.catalog import CATALOG, TABLES
from testbed.analysis.spark.sources import read_acks, read_member_events
from testbed.analysis.spark.session import sized_for


def iv(member: str, partition: int, start: int, end: int, reason: str = "revoked") -> OwnershipInterval:
    return OwnershipInterval(TOPIC, partition, member, start, end, reason)


def events(spark, root: Path):  # noqa: F811
    return read_member_events(spark, str(root / "history" / "members" / "*.jsonl"))


def values(inv) -> dict:
    return {name: m.value for name, m in CATALOGUE.measure(inv).items()}


# ---- (a) a zombie whose `lost` comes before its leftover batches ----------------------------------------

ZOMBIE = [iv("A", 0, 1000, 26000, "lost"), iv("A", 1, 1000, 26000, "lost"), iv("B", 0, 15000, 30000, "run_end")]


def zombie(root: Path) -> Path:
    """A owns p0 and p1 until its lost at 26000; B owns p0 from 15000. A committed p0 at 20 (3001).
    B processes p0 20-29 (15500) and 30-39 (16000). After its lost, A writes its leftover batches:
    p0 20-29 at 26100 (B owns p0 then: 10 records outside ownership while owned, and 10 concurrent
    duplicates although the shared span [15000, 26000] is over) and p1 10-14 at 26200 (nobody owns p1:
    outside ownership, not while owned; nobody processes them again). Nothing else is anomalous."""
    h = HistoryBuilder(root)
    h.started("A", 100, commit_mode="sync")
    h.started("B", 200, commit_mode="sync")
    h.assigned("A", 1000, [0, 1])
    h.produce_and_process("A", 2000, 0)  # p0 0-9
    h.produce_and_process("A", 2000, 1)  # p1 0-9
    h.produce_and_process("A", 3000, 0)  # p0 10-19
    h.committed("A", 3001, 0, 20, trigger="batch")
    h.produce(0, 10, 3500)  # p0 20-29
    h.produce(1, 5, 3500)  # p1 10-14
    h.assigned("B", 15000, [0])
    h.processed("B", 15500, 0, 20, 29, 3500)
    h.produce_and_process("B", 16000, 0)  # p0 30-39
    h.lost("A", 26000, [0, 1])
    h.processed("A", 26100, 0, 20, 29, 3500)
    h.processed("A", 26200, 1, 10, 14, 3500)
    h.close()
    return root


def test_zombie_batches_after_lost_are_outside_ownership(spark, tmp_path):  # noqa: F811
    root = zombie(tmp_path)
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, root), ZOMBIE)
    assert values(inv) == {
        "batches_outside_ownership": 2, "records_outside_ownership": 15, "records_outside_ownership_while_owned": 10,
        "offset_skips": 0, "offset_skipped_records": 0, "offset_steps_back": 0, "offset_repeated_records": 0,
        "commits_ahead_of_processing": 0, "records_redelivered_below_commit": 0,
    }
    outside = inv.examples["outside_ownership"]
    # while another member owned first, then the rest
    assert [(e["member"], e["partition"], e["ts_ms"], e["records"], e["other_owner"]) for e in outside] == [
        ("A", 0, 26100, 10, "B"), ("A", 1, 26200, 5, None)]
    frame = inv.frame()
    assert list(frame.columns) == list(COLUMNS)
    assert frame["kind"].tolist() == ["outside_ownership"] * 2


def test_zombie_leftover_batch_counts_as_concurrent_duplicate(spark, tmp_path):  # noqa: F811
    root = zombie(tmp_path)
    shared = {(TOPIC, 0): shared_ownership([OwnerSpan(i.member, i.start_ms, i.end_ms) for i in ZOMBIE if i.partition == 0])}
    assert [(s.start, s.end) for s in shared[(TOPIC, 0)]] == [(15000, 26000)]  # A's batch at 26100 lies after it
    with sized_for(spark, 0):
        batches = records.processed_batches(events(spark, root))
        acks = read_acks(spark, str(root / "history" / "acks" / "*.jsonl"))
        frames = records.record_frames(spark, batches, acks, None)
        try:
            aware = records.record_stats(frames, records.duplicates(frames, shared, ZOMBIE))
            spans_only = records.record_stats(frames, records.duplicates(frames, shared))
        finally:
            frames.release()
    assert (aware.duplicates_total, aware.duplicates_concurrent, aware.duplicates_redelivered) == (10, 10, 0)
    assert all(e["concurrent"] and e["member"] == "A" for e in aware.duplicate_examples)
    assert (spans_only.duplicates_concurrent, spans_only.duplicates_redelivered) == (0, 10)
    assert aware.lost == 0


# ---- (b) a skip and a step back inside one interval; a skip at an interval's start ----------------------

def contiguity(root: Path) -> Path:
    """A owns p0 [1000, 8000]: 0-9, 10-19, then 25-29 (skip: expected 20, 5 records), 30-39, 35-44 (step back:
    expected 40, 5 records repeated), 45-49. A commits 50 on revoke (7990). B owns p0 from 9000 and starts
    at 55 (skip at the start: committed 50, everything up to 49 processed: 5 records), then 60-69."""
    h = HistoryBuilder(root, acks=False)
    h.started("A", 100, commit_mode="on_revoke")
    h.started("B", 200, commit_mode="on_revoke")
    h.assigned("A", 1000, [0])
    for ts, first, last in ((2000, 0, 9), (3000, 10, 19), (4000, 25, 29), (5000, 30, 39), (6000, 35, 44), (7000, 45, 49)):
        h.processed("A", ts, 0, first, last, ts - 50)
    h.committed("A", 7990, 0, 50, trigger="revoke")
    h.revoked("A", 8000, [0])
    h.assigned("B", 9000, [0])
    h.processed("B", 9500, 0, 55, 59, 9000)
    h.processed("B", 10000, 0, 60, 69, 9900)
    h.close()
    return root


def test_skips_and_steps_back_within_an_interval(spark, tmp_path):  # noqa: F811
    root = contiguity(tmp_path)
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, root), [iv("A", 0, 1000, 8000), iv("B", 0, 9000, 20000, "run_end")])
    v = values(inv)
    assert (v["offset_skips"], v["offset_skipped_records"], v["offset_steps_back"], v["offset_repeated_records"]) == (2, 10, 1, 5)
    assert (v["batches_outside_ownership"], v["commits_ahead_of_processing"], v["records_redelivered_below_commit"]) == (0, 0, 0)
    skips = inv.examples["offset_skip"]
    assert [(e["member"], e["first_offset"], e["expected_offset"], e["records"], e["committed_offset"], e["interval_start_ms"])
            for e in skips] == [("A", 25, 20, 5, None, 1000), ("B", 55, 50, 5, 50, 9000)]
    (back,) = inv.examples["offset_step_back"]
    assert (back["member"], back["ts_ms"], back["first_offset"], back["expected_offset"], back["records"]) == ("A", 6000, 35, 40, 5)
    assert sorted(inv.frame()["kind"]) == ["offset_skip", "offset_skip", "offset_step_back"]


# ---- (c) a commit ahead of processing and (d) a re-delivery below a successful commit ------------------

def commits(root: Path) -> Path:
    """A owns p0 [1000, 10000]: processes 0-9, commits 10 (fine), processes 10-19 and commits 30 (ahead:
    processed only to 19, 10 records). Its later failed commit of 100 and an OFFSET_INVALID (-1001) commit
    count for nothing. B owns p0 from 11000 and starts at 20, below the committed 30: 10 records re-delivered
    below a successful commit (not a step back), then 30-39; its commit of 40 fails. C owns p0 from 14000
    and starts at 40: above the committed 30, but 30-39 had been processed: no skip, nothing below."""
    h = HistoryBuilder(root, acks=False)
    for m in ("A", "B", "C"):
        h.started(m, 100, commit_mode="sync")
    h.assigned("A", 1000, [0])
    h.processed("A", 2000, 0, 0, 9, 1950)
    h.commit_result("A", 2001, {0: 10})
    h.processed("A", 3000, 0, 10, 19, 2950)
    h.commit_result("A", 3001, {0: 30})
    h.commit_result("A", 3500, {0: 100}, error="REBALANCE_IN_PROGRESS")
    h.commit_result("A", 3600, {0: -1001})
    h.revoked("A", 10000, [0])
    h.assigned("B", 11000, [0])
    h.processed("B", 11500, 0, 20, 29, 2990)
    h.processed("B", 12000, 0, 30, 39, 11900)
    h.commit_result("B", 12999, {0: 40}, error="REBALANCE_IN_PROGRESS", trigger="revoke")
    h.revoked("B", 13000, [0])
    h.assigned("C", 14000, [0])
    h.processed("C", 14500, 0, 40, 49, 14000)
    h.close()
    return root


COMMITS = [iv("A", 0, 1000, 10000), iv("B", 0, 11000, 13000), iv("C", 0, 14000, 20000, "run_end")]


def test_commit_ahead_of_processing_and_redelivery_below_commit(spark, tmp_path):  # noqa: F811
    root = commits(tmp_path)
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, root), COMMITS)
    assert values(inv) == {
        "batches_outside_ownership": 0, "records_outside_ownership": 0, "records_outside_ownership_while_owned": 0,
        "offset_skips": 0, "offset_skipped_records": 0, "offset_steps_back": 0, "offset_repeated_records": 0,
        "commits_ahead_of_processing": 1, "records_redelivered_below_commit": 10,
    }
    (ahead,) = inv.examples["commit_ahead"]
    assert (ahead["member"], ahead["ts_ms"], ahead["last_offset"], ahead["expected_offset"], ahead["committed_offset"],
            ahead["records"]) == ("A", 3001, 19, 20, 30, 10)
    (below,) = inv.examples["redelivered_below_commit"]
    assert (below["member"], below["ts_ms"], below["first_offset"], below["last_offset"], below["committed_offset"],
            below["records"], below["interval_start_ms"]) == ("B", 11500, 20, 29, 30, 10, 11000)
    assert sorted(inv.frame()["kind"]) == ["commit_ahead", "redelivered_below_commit"]


def test_without_successful_commits_c_and_d_are_unknown_not_zero(spark, tmp_path):  # noqa: F811
    h = HistoryBuilder(tmp_path, acks=False)
    h.started("A", 100, commit_mode="sync")
    h.assigned("A", 1000, [0])
    h.processed("A", 2000, 0, 0, 9, 1950)
    h.processed("A", 3000, 0, 20, 29, 2950)  # a skip is still seen
    h.commit_result("A", 3001, {0: 30}, error="UNKNOWN_MEMBER_ID")
    h.close()
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, tmp_path), [iv("A", 0, 1000, 5000, "run_end")])
    ms = CATALOGUE.measure(inv)
    for name in ("commits_ahead_of_processing", "records_redelivered_below_commit"):
        assert ms[name].value is None and ms[name].unknown == NO_COMMITS
    assert ms["offset_skips"].value == 1 and ms["offset_skipped_records"].value == 10
    assert ms["batches_outside_ownership"].value == 0
    assert inv.examples["commit_ahead"] == [] and inv.examples["redelivered_below_commit"] == []


def test_examples_are_bounded_and_most_severe_first(spark, tmp_path):  # noqa: F811
    """A processes 15 batches of p0 after its interval ended (nobody owns p0), of 1..15 records."""
    h = HistoryBuilder(tmp_path, acks=False)
    h.started("A", 100)
    h.assigned("A", 1000, [0])
    h.revoked("A", 1500, [0])
    first = 0
    for i in range(1, 16):
        h.processed("A", 2000 + i, 0, first, first + i - 1, 1900)
        first += i
    h.close()
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, tmp_path), [iv("A", 0, 1000, 1500)])
    assert CATALOGUE.measure(inv)["batches_outside_ownership"].value == 15
    assert CATALOGUE.measure(inv)["records_outside_ownership"].value == 120
    ex = inv.examples["outside_ownership"]
    assert len(ex) == EXAMPLES and [e["records"] for e in ex] == list(range(15, 5, -1))
    assert len(inv.frame()) == 15


def test_catalog_and_tables_name_the_invariants():
    assert set(KINDS) == {"outside_ownership", "offset_skip", "offset_step_back", "commit_ahead", "redelivered_below_commit"}
    assert "invariant_violations" in TABLES
    for name in ("batches_outside_ownership", "records_outside_ownership", "offset_skips", "offset_steps_back",
                 "commits_ahead_of_processing", "records_redelivered_below_commit"):
        assert name in CATALOG


@pytest.mark.parametrize("reason", ["run_end", "lost"])
def test_a_batch_at_the_interval_end_is_owned(spark, tmp_path, reason):  # noqa: F811
    """Ownership includes both ends: a batch at the lost/run-end millisecond is not outside ownership."""
    h = HistoryBuilder(tmp_path, acks=False)
    h.started("A", 100)
    h.assigned("A", 1000, [0])
    h.processed("A", 1000, 0, 0, 9, 900)
    h.processed("A", 3000, 0, 10, 19, 2900)
    h.close()
    with sized_for(spark, 0):
        inv = check_invariants(spark, events(spark, tmp_path), [iv("A", 0, 1000, 3000, reason)])
    assert CATALOGUE.measure(inv)["batches_outside_ownership"].value == 0
    assert CATALOGUE.measure(inv)["offset_skips"].value == 0
