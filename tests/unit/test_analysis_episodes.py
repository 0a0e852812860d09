"""Known answers for the pure control-plane parts: member deaths, episodes, pause causes (no Spark)."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.group.broker_logs import BrokerLine, broker_reactions, for_group
from testbed.analysis.group.causes import attribute, fault_context
from testbed.analysis.group.ownership import ownership_intervals
from testbed.analysis.group.episodes import rebalance_episodes
from testbed.analysis.records.gaps import GAP_COLUMNS
from testbed.analysis.view.lives import MemberEvent, MemberExit, member_lives
from testbed.history.events import Action


def ev(ts, member, name, parts=(), seq=0):
    return MemberEvent(ts, member, name, tuple(("t", p) for p in parts), seq)


def test_cooperative_two_rounds_are_one_episode_however_long_the_second_round_takes():
    # C joins; round 1 (revoke 1 from A, 3 from B, C gets nothing) settles the joins; round 2 comes 4 s later.
    evs = [ev(0, "A", "started"), ev(0, "B", "started", seq=1), ev(100, "A", "assigned", [0, 1], 2),
           ev(100, "B", "assigned", [2, 3], 3), ev(10_000, "C", "started", seq=4),
           ev(10_500, "A", "revoked", [1], 5), ev(10_500, "B", "revoked", [3], 6), ev(10_600, "A", "assigned", [], 7),
           ev(10_600, "B", "assigned", [], 8), ev(10_600, "C", "assigned", [], 9), ev(14_600, "C", "assigned", [1, 3], 10)]
    lives = {m: member_lives({}, {m: 20_000}, {}, {}, 20_000)[m] for m in "ABC"}
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)
    assert [(e.start_ms, e.end_ms, e.trigger, e.settled) for e in eps] == [
        (0, 100, "started:A", True), (10_000, 14_600, "started:C", True)]


def test_a_zombie_losing_partitions_others_already_hold_owes_nothing():
    evs = [ev(0, "A", "started"), ev(0, "B", "started", seq=1), ev(100, "A", "assigned", [0], 2),
           ev(100, "B", "assigned", [1], 3), ev(9_000, "B", "revoked", [1], 4), ev(9_100, "B", "assigned", [0, 1], 5),
           ev(20_000, "A", "lost", [0], 6)]
    lives = member_lives({}, {"A": 20_000, "B": 30_000}, {}, {}, 30_000)
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)
    assert [(e.start_ms, e.end_ms) for e in eps] == [(0, 100), (9_000, 9_100), (20_000, 20_000)]


def test_sigkill_after_a_stop_timeout_ends_ownership_at_the_recorded_exit():
    events = {"A": [ev(100, "A", "assigned", [0, 1])]}
    exits = {"A": MemberExit(5_000, "stop_timeout")}
    lives = member_lives(events, {"A": 4_000}, {}, exits, 60_000)
    assert lives["A"].reason == "stop_timeout" and lives["A"].died
    ivs = ownership_intervals(events["A"], lives["A"])
    assert sorted((iv.partition, iv.end_ms, iv.end_reason) for iv in ivs) == [(0, 5_000, "stop_timeout"), (1, 5_000, "stop_timeout")]
    # Without the exit record the member would hold its partitions to the run's end.
    assert member_lives(events, {"A": 4_000}, {}, {}, 60_000)["A"].end_ms == 60_000


def test_broker_lines_of_other_groups_and_other_runs_are_left_out():
    lines = [BrokerLine("1", 1_000, "prepare", "g"), BrokerLine("1", 1_100, "stabilized", "g", 2),
             BrokerLine("1", 1_050, "prepare", "other"), BrokerLine("1", 90_000, "prepare", "g"),
             BrokerLine("1", 1_200, "epoch_bump", None, 3)]
    kept = for_group(lines, {"g"}, 500, 10_000)
    assert [(ln.ts_ms, ln.event) for ln in kept] == [(1_000, "prepare"), (1_100, "stabilized")]
    (reaction,) = broker_reactions(kept)
    assert (reaction.reaction_ms, reaction.coordinated_ms, reaction.protocol) == (1_000, 1_100, "classic")


def test_consumer_protocol_epoch_bump_pairs_with_its_target_assignment():
    lines = [BrokerLine("1", 1_000, "epoch_bump", "g", 5), BrokerLine("1", 1_020, "target_assignment", "g", 5)]
    (r,) = broker_reactions(lines)
    assert (r.reaction_ms, r.coordinated_ms, r.protocol, r.generation) == (1_000, 1_020, "consumer", 5)


def _gaps(rows):
    return pd.DataFrame([dict(zip(GAP_COLUMNS, r)) for r in rows], columns=GAP_COLUMNS)


def test_causes_freeze_first_then_death_broker_fault_rebalance_none():
    harness = [{"kind": Action.MEMBER_PAUSE, "ts_ms": 1_000, "target": "A", "detail": {}},
               {"kind": Action.MEMBER_RESUME, "ts_ms": 9_000, "target": "A", "detail": {}},
               {"kind": Action.BROKER_STOP, "ts_ms": 20_000, "target": "broker-1", "detail": {}},
               {"kind": Action.BROKER_START, "ts_ms": 22_000, "target": "broker-1", "detail": {}}]
    lives = member_lives({}, {"A": 50_000, "B": 50_000, "C": 12_000}, {"C": 12_000}, {}, 50_000)
    evs = [ev(0, "A", "started"), ev(100, "A", "assigned", [0]), ev(30_000, "B", "started", seq=2),
           ev(30_400, "B", "assigned", [1], 3)]
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)
    gaps = _gaps([
        ("t", 0, "pause", 990, 8_000, 7_010, False, "A", "B"),      # A frozen: member_freeze
        ("t", 2, "pause", 11_900, 14_000, 2_100, False, "C", "B"),  # C killed at 12 000: member_death
        ("t", 1, "pause", 26_000, 28_000, 2_000, False, "B", "B"),  # within 5 s of broker-1's return
        ("t", 1, "pause", 30_900, 32_000, 1_100, False, "B", "B"),  # starts < 1 s after the join episode: rebalance
        ("t", 1, "pause", 40_000, 41_500, 1_500, False, "B", "B"),  # nothing explains it
        ("t", 3, "startup", 0, 500, 500, False, None, "B"),
    ])
    out = attribute(gaps, fault_context(harness, lives, eps, 50_000))
    assert out["cause"].tolist() == ["member_freeze", "member_death", "broker_fault", "rebalance", "none", "startup"]
    assert out["cause_target"].tolist()[:3] == ["A", "C", "broker-1"]


def test_pause_of_a_partitioned_member_is_its_partition_and_a_partitioned_broker_a_broker_fault():
    harness = [{"kind": Action.MEMBER_PARTITION, "ts_ms": 1_000, "target": "A", "detail": {"brokers": "all"}},
               {"kind": Action.MEMBER_HEAL, "ts_ms": 16_000, "target": "A", "detail": {}},
               {"kind": Action.BROKER_PARTITION, "ts_ms": 20_000, "target": "broker-1", "detail": {}},
               {"kind": Action.BROKER_HEAL, "ts_ms": 25_000, "target": "broker-1", "detail": {}}]
    lives = member_lives({}, {"A": 50_000, "B": 50_000}, {}, {}, 50_000)
    gaps = _gaps([
        ("t", 0, "pause", 1_500, 8_000, 6_500, False, "A", "B"),    # A cut off: member_partition
        ("t", 1, "pause", 1_500, 8_000, 6_500, False, "B", "B"),    # B was not: nothing explains it
        ("t", 1, "pause", 21_000, 24_000, 3_000, False, "B", "B"),  # while broker-1 was cut off
    ])
    out = attribute(gaps, fault_context(harness, lives, [], 50_000))
    assert out["cause"].tolist() == ["member_partition", "none", "broker_fault"]
    assert out["cause_target"].tolist() == ["A", None, "broker-1"]


def test_pauses_while_the_group_forms_are_start_up_not_rebalance_cost():
    # A starts alone and takes both partitions; B joins 2 s later and p1 moves: that pause is the group forming.
    evs = [ev(0, "A", "started"), ev(100, "A", "assigned", [0, 1], 1), ev(2_000, "B", "started", seq=2),
           ev(2_100, "A", "revoked", [1], 3), ev(2_200, "B", "assigned", [1], 4),
           ev(20_000, "A", "stopped", seq=5), ev(20_100, "B", "revoked", [1], 6), ev(20_200, "B", "assigned", [0, 1], 7)]
    lives = member_lives({}, {"A": 20_000, "B": 40_000}, {}, {}, 40_000)
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[3_000])
    assert [(e.start_ms, e.formation) for e in eps] == [(0, True), (2_000, True), (20_000, False)]
    assert [e.formation for e in rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)] == [True, False, False]
    gaps = _gaps([("t", 1, "pause", 2_000, 3_500, 1_500, False, "A", "B"),
                  ("t", 0, "pause", 20_000, 21_500, 1_500, False, "A", "B")])
    out = attribute(gaps, fault_context([], lives, eps, 40_000))
    assert out[["kind", "cause"]].values.tolist() == [["startup", "group_formation"], ["pause", "rebalance"]]


def test_a_bounce_right_after_the_group_formed_is_not_part_of_its_forming():
    # A and B form by 100; the harness sees the group stable at 400; 500 ms later (no wait step) the bounce stops A,
    # and B takes A's partition: a rebalance of the running group, not the group still forming.
    evs = [ev(0, "A", "started"), ev(0, "B", "started", seq=1), ev(100, "A", "assigned", [0], 2),
           ev(100, "B", "assigned", [1], 3), ev(450, "B", "assigned", [1], 4),  # a late callback of the forming
           ev(900, "A", "revoked", [0], 5), ev(900, "A", "stopped", seq=6), ev(1_400, "B", "revoked", [1], 7),
           ev(1_500, "B", "assigned", [0, 1], 8)]
    lives = member_lives({}, {"A": 900, "B": 30_000}, {}, {}, 30_000)
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[400])
    assert [(e.start_ms, e.end_ms, e.trigger, e.formation) for e in eps] == [
        (0, 450, "started:A", True), (900, 1_500, "revoked:A", False)]
    # Without the harness's word the gap alone decides: one episode from the first start.
    assert len(rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)) == 1


def test_a_kill_in_the_millisecond_the_group_was_seen_stable_is_not_part_of_its_forming():
    # The kill step follows wait_stable at once: its record, and so the member's death, share the step end's ms.
    evs = [ev(0, "A", "started"), ev(0, "B", "started", seq=1), ev(100, "A", "assigned", [0], 2),
           ev(100, "B", "assigned", [1], 3), ev(45_500, "B", "assigned", [0], 4)]
    lives = member_lives({}, {"A": 100, "B": 60_000}, {"A": 400}, {}, 60_000)  # A killed at 400
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[400])
    assert [(e.start_ms, e.end_ms, e.trigger, e.formation) for e in eps] == [
        (0, 100, "started:A", True), (400, 45_500, "death:A", False)]


def test_a_killed_member_lives_until_its_last_event_after_the_kill():
    """The kill's record comes before the signal lands: a batch written 1 ms after it is still the member's."""
    lives = member_lives({}, {"A": 10_001, "B": 9_000}, {"A": 10_000, "B": 10_000}, {}, 60_000)
    assert (lives["A"].end_ms, lives["A"].reason) == (10_001, "killed")
    assert (lives["B"].end_ms, lives["B"].reason) == (10_000, "killed")


def test_a_kill_right_after_a_later_wait_stable_is_not_part_of_the_rebalance_before_it():
    # A and B form (seen stable at 1,000); C joins at 5,000, the group settles at 5,300, the harness sees it stable
    # at 5,500 and kills B 13 ms later (the next step); B's partition moves only after its session, at 15,000.
    evs = [ev(0, "A", "started"), ev(0, "B", "started", seq=1), ev(100, "A", "assigned", [0], 2),
           ev(100, "B", "assigned", [1, 2], 3), ev(5_000, "C", "started", seq=4), ev(5_100, "B", "revoked", [2], 5),
           ev(5_300, "C", "assigned", [2], 6), ev(15_000, "A", "assigned", [0, 1], 7)]
    lives = member_lives({}, {"A": 30_000, "B": 5_513, "C": 30_000}, {"B": 5_513}, {}, 30_000)
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[1_000, 5_500])
    assert [(e.start_ms, e.end_ms, e.trigger) for e in eps] == [
        (0, 100, "started:A"), (5_000, 5_300, "started:C"), (5_513, 15_000, "death:B")]
    # Without the harness's word the kill 213 ms after the scale-out's last assignment is part of it.
    assert len(rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[1_000])) == 2
