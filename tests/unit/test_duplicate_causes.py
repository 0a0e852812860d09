"""Every duplicate processing gets one cause, from small hand-built histories (docs/metrics.md, "Causes of
duplicate processing"): one partition per cause, each handed from its previous processor to a new owner."""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from histories.builder import HistoryBuilder
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis import analyse
from testbed.analysis.intervals import OwnershipInterval, OwnerSpan, disjoint_per_owner, shared_ownership
from testbed.analysis.records import record_stats as records
from testbed.analysis.records.duplicate_causes import CAUSES, CauseInputs, DuplicateCauses, metric_name
from testbed.analysis.stage import Unknown
from testbed.checkers import load_evidence, run_checkers
from testbed.history.events import Action

HANDOVER = 5000  # the previous processors' revokes (and loss); the new owner is assigned 100 ms later


def every_cause(root: Path) -> Path:
    """Partition by partition, what its previous processor did before the hand-over at 5000 to ``new`` (one
    partition, p6, goes to ``other`` while its owner still holds it):

    p0 ``offbyone`` (sync) commits the offset of its last processed record (9), not the next: record 9 again.
    p1 ``offbyone`` commits 10 on its revoke, and the commit fails: 0-9 again.
    p2 ``forgetful`` (on_revoke) processes 0-9 and is revoked without a commit: 0-9 again.
    p3 ``auto`` (auto-commit) auto-commits 10 at 2500, processes 10-19 at 3000 and is revoked: 10-19 again.
    p4 ``killed`` (sync) commits 10, processes 10-14 at 3000 and is SIGKILLed at 3500: 10-14 again.
    p5 ``fenced`` (sync) processes 0-9 and loses p5 at 5000 (no revoke, no commit): 0-9 again.
    p6 ``zombie`` keeps p6 until 6000, ``other`` holds it from 4000 and processes 0-9 at 4500: concurrent.
    p7 ``committed`` (sync) commits 10 after processing 0-9: 0-9 again all the same, unexplained.
    p8 ``lagging`` (sync) commits 5 after processing 0-9: 5-9 below the commit (gaps up to 5), 0-4 unexplained."""
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    modes = {"offbyone": "sync", "forgetful": "on_revoke", "auto": "auto", "killed": "sync", "fenced": "sync",
             "zombie": "sync", "committed": "sync", "lagging": "sync", "new": "sync", "other": "sync"}
    for m, mode in modes.items():
        h.started(m, 100, commit_mode=mode)
    owners = {0: "offbyone", 1: "offbyone", 2: "forgetful", 3: "auto", 4: "killed", 5: "fenced", 6: "zombie",
              7: "committed", 8: "lagging"}
    for m in dict.fromkeys(owners.values()):
        h.assigned(m, 1000, [p for p, owner in owners.items() if owner == m])
    for p, m in owners.items():
        h.produce(p, 10, 1500)
        h.processed(m, 2000, p, 0, 9, 1500)
    h.commit_result("offbyone", 2001, {0: 9})
    h.commit_result("auto", 2500, {3: 10}, trigger="auto")
    h.produce(3, 10, 2900)
    h.processed("auto", 3000, 3, 10, 19, 2900)
    h.commit_result("killed", 2001, {4: 10})
    h.produce(4, 5, 2900)
    h.processed("killed", 3000, 4, 10, 14, 2900)
    h.harness(Action.MEMBER_KILL, 3500, "killed")
    h.harness(Action.MEMBER_EXIT, 3510, "killed", cause="killed")
    h.assigned("other", 4000, [6])
    h.processed("other", 4500, 6, 0, 9, 1500)
    h.commit_result("committed", 2001, {7: 10})
    h.commit_result("lagging", 2001, {8: 5})
    h.commit_result("offbyone", HANDOVER - 1, {0: 9, 1: 10}, error="REBALANCE_IN_PROGRESS", trigger="revoke")
    h.commit_result("offbyone", HANDOVER - 1, {0: 9}, trigger="revoke")
    for m in ("offbyone", "forgetful", "auto", "committed", "lagging"):
        h.revoked(m, HANDOVER, [p for p, owner in owners.items() if owner == m])
    h.lost("fenced", HANDOVER, [5])
    h.revoked("zombie", 6000, [6])
    moved = [0, 1, 2, 3, 4, 5, 7, 8]
    h.assigned("new", HANDOVER + 100, moved)
    again = {0: (9, 9), 1: (0, 9), 2: (0, 9), 3: (10, 19), 4: (10, 14), 5: (0, 9), 7: (0, 9), 8: (0, 9)}
    for p, (first, last) in again.items():
        h.processed("new", HANDOVER + 200, p, first, last, 1500)
    h.harness(Action.DRAIN_END, 8000)
    h.harness(Action.RUN_END, 9000)
    h.close()
    return root


def off_by_one_service(root: Path) -> Path:
    """A service that commits the offset of the last record it processed, before each revoke: ``a`` hands p0 to
    ``b`` at 3000 and ``b`` hands it back at 6000; each hand-over re-delivers exactly the committed record."""
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("a", 100, commit_mode="on_revoke")
    h.started("b", 100, commit_mode="on_revoke")
    h.assigned("a", 1000, [0])
    h.produce(0, 20, 1500)
    h.processed("a", 2000, 0, 0, 9, 1500)
    h.commit_result("a", 2999, {0: 9}, trigger="revoke")
    h.revoked("a", 3000, [0])
    h.assigned("b", 3100, [0])
    h.processed("b", 3200, 0, 9, 19, 1500)
    h.commit_result("b", 5999, {0: 19}, trigger="revoke")
    h.revoked("b", 6000, [0])
    h.assigned("a", 6100, [0])
    h.processed("a", 6200, 0, 19, 19, 1500)
    h.harness(Action.DRAIN_END, 8000)
    h.harness(Action.RUN_END, 9000)
    h.close()
    return root


@pytest.fixture(scope="module")
def analysed(tmp_path_factory, spark):  # noqa: F811
    cache: dict[str, tuple] = {}

    def get(history):
        if history.__name__ not in cache:
            root = history(tmp_path_factory.mktemp(history.__name__))
            cache[history.__name__] = (root, analyse(root, spark=spark))
        return cache[history.__name__]

    return get


def table(root: Path) -> pd.DataFrame:
    return pd.read_parquet(root / "analysis" / "tables" / "duplicate_processings.parquet")


def causes_by_partition(root: Path) -> dict[int, list[tuple[str, int, int]]]:
    rows = table(root).sort_values(["partition", "first_offset"])
    out: dict[int, list[tuple[str, int, int]]] = {}
    for r in rows.itertuples():
        out.setdefault(int(r.partition), []).append((r.cause, int(r.first_offset), int(r.last_offset)))
    return out


def test_each_partition_shows_its_cause(analysed):
    root, _ = analysed(every_cause)
    assert causes_by_partition(root) == {
        0: [("commit_below_record", 9, 9)],
        1: [("commit_failed", 0, 9)],
        2: [("no_commit_after_processing", 0, 9)],
        3: [("auto_commit_window", 10, 19)],
        4: [("died_before_commit", 10, 14)],
        5: [("partition_lost_before_commit", 0, 9)],
        6: [("concurrent", 0, 9)],
        7: [("unexplained", 0, 9)],
        8: [("unexplained", 0, 4), ("commit_below_record", 5, 9)],
    }


def test_the_cause_figures_add_up_to_duplicates_total(analysed):
    _, m = analysed(every_cause)
    counts = {cause: m[metric_name(cause)].value for cause in CAUSES}
    assert counts == {"concurrent": 10, "commit_failed": 10, "commit_below_record": 6, "aborted_transaction": 0,
                      "died_before_commit": 5,
                      "partition_lost_before_commit": 10, "auto_commit_window": 10,
                      "no_commit_after_processing": 10, "unexplained": 15}
    assert sum(counts.values()) == m["duplicates_total"].value
    assert m["duplicates_concurrent"].value + m["duplicates_redelivered"].value == m["duplicates_total"].value


def test_each_row_keeps_what_its_cause_was_read_from(analysed):
    root, m = analysed(every_cause)
    rows = table(root).set_index(["partition", "first_offset"])
    failed = rows.loc[(1, 0)]
    assert (failed["previous_member"], failed["member"], failed["commit_error"]) == ("offbyone", "new", "REBALANCE_IN_PROGRESS")
    assert (failed["previous_ts_ms"], failed["handover_ms"], failed["commit_ms"]) == (2000, HANDOVER + 100, HANDOVER - 1)
    below = rows.loc[(8, 5)]
    assert (below["committed_offset"], below["commit_gap"]) == (5, 5)  # records 5-9: gaps 1 to 5
    assert rows.loc[(5, 0)]["previous_end"] == "lost"
    assert pd.isna(rows.loc[(2, 0)]["commit_ms"])  # no commit at all after processing
    assert m["duplicates_commit_gap_max"].value == 5
    examples = m.examples["duplicate_causes"]
    # one of each in precedence order (no transactional member in this history: the test above has its own)
    assert [e["cause"] for e in examples] == [c for c in CAUSES if c != "aborted_transaction"]
    assert all("cause" in e for e in m.examples["duplicates"])


def test_commits_of_the_last_processed_record_leave_a_gap_of_one_per_hand_over(analysed):
    root, m = analysed(off_by_one_service)
    assert causes_by_partition(root) == {0: [("commit_below_record", 9, 9), ("commit_below_record", 19, 19)]}
    assert m["duplicates_commit_below_record"].value == m["duplicates_total"].value == 2
    assert m["duplicates_commit_gap_max"].value == 1
    assert m["duplicates_unexplained"].value == 0


def test_the_redelivery_checker_names_the_causes(analysed):
    root, _ = analysed(off_by_one_service)
    verdict = next(v for v in run_checkers(load_evidence(root)) if v.checker == "duplicates_redelivered")
    # every member commits on revoke and nothing failed: re-delivery is not allowed, and the cause says why it came
    assert verdict.status == "invalid"
    assert verdict.message.startswith("2 records re-delivered (processed again by a later owner), by cause: "
                                      "2 commit_below_record, not allowed")


def test_without_a_duplicate_every_cause_is_zero_and_the_gap_unknown(analysed):
    from histories import scenarios

    def cooperative_join(root: Path) -> Path:
        return scenarios.cooperative_join(root)

    _, m = analysed(cooperative_join)
    assert m["duplicates_total"].value == 0
    assert all(m[metric_name(cause)].value == 0 for cause in CAUSES)
    assert m["duplicates_commit_gap_max"].value is None and m["duplicates_commit_gap_max"].unknown


# ---- the causes against a per-record recount of the documented rules, on random histories ---------------

BATCHES = "member string, ts long, topic string, partition int, first_offset long, last_offset long, count long, pmin long"
COMMITS = "member string, ts long, seq long, topic string, partition int, offset long, error string"
MEMBERS = ("m0", "m1", "m2", "m3")


def _random_history(seed: int):
    rng = random.Random(seed)
    intervals = []
    for p in range(3):
        t = 0
        while t < 9000:
            start = t + rng.randrange(0, 400)
            end = start + rng.randrange(200, 3000)
            intervals.append(OwnershipInterval("t", p, rng.choice(MEMBERS), start, end,
                                               rng.choice(["revoked", "revoked", "lost", "max_poll_exceeded", "killed"])))
            t = end + (rng.randrange(-300, 0) if rng.random() < 0.2 else rng.randrange(0, 200))  # now and then two owners
    times = rng.sample(range(0, 10000), 70)
    batches = []
    for ts in times[:40]:
        first = rng.randrange(0, 30)
        last = first + rng.randrange(0, 8)
        batches.append((rng.choice(MEMBERS), ts, "t", rng.randrange(3), first, last, last - first + 1, ts - 10))
    commits = [(rng.choice(MEMBERS), ts, seq, "t", rng.randrange(3), rng.randrange(0, 40),
                rng.choice([None, None, "REBALANCE_IN_PROGRESS"])) for seq, ts in enumerate(times[40:])]
    died = {m: rng.randrange(0, 10000) for m in MEMBERS if rng.random() < 0.5}
    auto = {m: rng.choice([True, False, None]) for m in MEMBERS}
    return intervals, batches, commits, died, auto


def _recount_causes(intervals, batches, commits, died, auto, transactional=frozenset()) -> tuple[dict[str, int], int | None]:
    """docs/metrics.md's rules record by record."""
    shared = {p: shared_ownership([OwnerSpan(i.member, i.start_ms, i.end_ms) for i in intervals if i.partition == p])
              for p in range(3)}
    holding = disjoint_per_owner(intervals)

    def interval_of(member, p, ts):
        return next((iv for iv, end in holding if iv.member == member and iv.partition == p and iv.start_ms <= ts <= end), None)

    processings = defaultdict(list)
    for member, ts, _, p, first, last, *_ in batches:
        for o in range(first, last + 1):
            processings[(p, o)].append((ts, member))
    counts = dict.fromkeys(CAUSES, 0)
    gaps = []
    for (p, o), done in processings.items():
        done.sort()
        for (t0, m0), (t, m) in zip(done, done[1:]):
            owners = [iv.member for iv in intervals if iv.partition == p and iv.start_ms <= t <= iv.end_ms]
            if any(s.start <= t <= s.end for s in shared[p]) or (m not in owners and owners):
                counts["concurrent"] += 1
                continue
            new = interval_of(m, p, t)
            handover = new.start_ms if new is not None and new.start_ms >= t0 else t
            mine = sorted((c for c in commits if c[0] == m0 and c[4] == p and c[1] <= handover), key=lambda c: (c[1], c[2]))
            attempt = mine[-1] if mine and mine[-1][1] >= t0 else None
            ok = [c for c in mine if c[6] is None]
            success = ok[-1] if ok and ok[-1][1] >= t0 else None
            covered = success is not None and success[5] > o
            prev = interval_of(m0, p, t0)
            if not covered and attempt is not None and attempt[6] is not None:
                cause = "commit_failed"
            elif not covered and success is not None:
                cause = "commit_below_record"
                gaps.append(o + 1 - success[5])
            elif attempt is None and m0 in transactional:
                cause = "aborted_transaction"
            elif attempt is None and m0 in died and t0 <= died[m0] <= t:
                cause = "died_before_commit"
            elif attempt is None and prev is not None and prev.end_reason in ("lost", "max_poll_exceeded"):
                cause = "partition_lost_before_commit"
            elif attempt is None and auto.get(m0) is True:
                cause = "auto_commit_window"
            elif attempt is None and auto.get(m0) is False:
                cause = "no_commit_after_processing"
            else:
                cause = "unexplained"
            counts[cause] += 1
    return counts, max(gaps) if gaps else None


@pytest.mark.parametrize("seed", [6, 9])  # together every cause
def test_random_histories_get_the_causes_of_a_per_record_recount(spark, seed):  # noqa: F811
    intervals, batches, commits, died, auto = _random_history(seed)
    want, gap = _recount_causes(intervals, batches, commits, died, auto)
    assert len([c for c in want.values() if c]) >= 7  # a history worth judging
    shared = {("t", p): shared_ownership([OwnerSpan(i.member, i.start_ms, i.end_ms) for i in intervals if i.partition == p])
              for p in range(3)}
    frames = records.record_frames(spark, spark.createDataFrame(batches, BATCHES), None, None)
    try:
        inputs = CauseInputs(spark.createDataFrame(commits, COMMITS), died, auto)
        stats = records.record_stats(frames, records.duplicates(frames, shared, intervals, inputs))
    finally:
        frames.release()
    causes = stats.duplicate_causes
    assert causes.mismatch is None and sum(causes.counts.values()) == stats.duplicates_total
    assert causes.counts == want
    assert causes.commit_gap_max == gap


def test_a_member_processing_in_transactions_re_delivers_for_its_aborted_transaction(spark):  # noqa: F811
    """A Kafka Streams instance under exactly-once: what it processed without a commit was in a transaction that
    was aborted (fenced, or it died), before any of the other rules without a commit (a death included)."""
    intervals, batches, commits, died, auto = _random_history(9)
    transactional = frozenset(MEMBERS[:2])
    want, _ = _recount_causes(intervals, batches, commits, died, auto, transactional)
    assert want["aborted_transaction"] > 0
    shared = {("t", p): shared_ownership([OwnerSpan(i.member, i.start_ms, i.end_ms) for i in intervals if i.partition == p])
              for p in range(3)}
    frames = records.record_frames(spark, spark.createDataFrame(batches, BATCHES), None, None)
    try:
        inputs = CauseInputs(spark.createDataFrame(commits, COMMITS), died, auto, transactional)
        stats = records.record_stats(frames, records.duplicates(frames, shared, intervals, inputs))
    finally:
        frames.release()
    assert stats.duplicate_causes.counts == want
    assert sum(stats.duplicate_causes.counts.values()) == stats.duplicates_total


def test_causes_that_do_not_add_up_make_every_cause_unknown():
    causes = DuplicateCauses({**dict.fromkeys(CAUSES, 0), "unexplained": 3}, None)
    causes.check(3)
    assert causes.count("unexplained") == 3
    causes.check(4)
    assert isinstance(causes.count("unexplained"), Unknown) and "not duplicates_total 4" in causes.count("unexplained").reason
    assert isinstance(causes.gap_max(), Unknown)
