"""Known answers for a pause's causes: each combination of what the run recorded across it (no Spark).

Every history is built by hand: the harness's actions, the members' lives and control events, the gaps. The
primary cause is the first by priority; every other cause that holds is kept as contributing.
"""

from __future__ import annotations

import pandas as pd

from testbed.analysis.group.causes import attribute, clean_stops, fault_context
from testbed.analysis.group.episodes import rebalance_episodes
from testbed.analysis.intervals import OwnershipInterval
from testbed.analysis.records.gaps import GAP_COLUMNS
from testbed.analysis.view.lives import MemberEvent, MemberExit, member_lives
from testbed.history.events import Action


def ev(ts, member, name, parts=(), seq=0):
    return MemberEvent(ts, member, name, tuple(("t", p) for p in parts), seq)


def act(kind, ts, target=None, **detail):
    return {"kind": kind, "ts_ms": ts, "target": target, "detail": detail}


def gaps(*rows):
    """(partition, start, end, last member, resumed member) per pause."""
    return pd.DataFrame([dict(zip(GAP_COLUMNS, ("t", p, "pause", s, e, e - s, False, last, resumed)))
                         for p, s, e, last, resumed in rows], columns=GAP_COLUMNS)


def causes(frame):
    return [(r.cause, r.cause_target, r.contributing) for r in frame.itertuples()]


# A static bounce of m1: stopped at 10 s (its own `stopped` 400 ms later), its replacement m1.1 takes p1 back
# under the same instance id. No rebalance: the partition waits for the replacement.
STATIC_BOUNCE = [act(Action.BOUNCE_START, 10_000, members=["m1"]), act(Action.MEMBER_STOP, 10_000, "m1"),
                 act(Action.MEMBER_EXIT, 10_450, "m1", cause="stopped"), act(Action.MEMBER_START, 10_500, "m1.1"),
                 act(Action.BOUNCE_END, 10_500)]
STATIC_EVENTS = {"m0": [ev(0, "m0", "started"), ev(100, "m0", "assigned", [0])],
                 "m1": [ev(0, "m1", "started", seq=1), ev(100, "m1", "assigned", [1], 2),
                        ev(10_300, "m1", "revoked", [1], 3), ev(10_400, "m1", "stopped", seq=4)],
                 "m1.1": [ev(10_600, "m1.1", "started"), ev(14_000, "m1.1", "assigned", [1], 1)]}
STATIC_LAST = {"m0": 40_000, "m1": 10_400, "m1.1": 40_000}


def _static_lives():
    return member_lives(STATIC_EVENTS, STATIC_LAST, {}, {"m1": MemberExit(10_450, "stopped")}, 40_000)


def test_a_bounced_owner_is_the_cause_of_its_partitions_pause_and_a_live_owner_is_not():
    lives = _static_lives()
    out = attribute(gaps((1, 9_950, 14_500, "m1", "m1.1"), (0, 20_000, 21_500, "m0", "m0")),
                    fault_context(STATIC_BOUNCE, lives, [], 40_000))
    assert causes(out) == [("member_stop", "m1", None), ("none", None, None)]
    assert out["episode_id"].isna().all()


def test_a_bounce_while_a_broker_was_slowed_keeps_both_the_bounce_first():
    """The issue's report: static members bounced while the coordinator had 300 ms of added latency. The
    latency used to win (broker_fault came before any stop); the stop is now primary, the latency kept."""
    harness = [act(Action.BROKER_LATENCY, 5_000, "broker-1", latency_ms=300), *STATIC_BOUNCE,
               act(Action.BROKER_LATENCY_END, 30_000, "broker-1")]
    out = attribute(gaps((1, 9_950, 14_500, "m1", "m1.1"), (0, 20_000, 21_500, "m0", "m0")),
                    fault_context(harness, _static_lives(), [], 40_000))
    assert causes(out) == [("member_stop", "m1", "broker_fault:broker-1"), ("broker_fault", "broker-1", None)]


def test_a_stop_after_the_gap_ended_explains_nothing():
    out = attribute(gaps((1, 2_000, 4_000, "m1", "m1")), fault_context(STATIC_BOUNCE, _static_lives(), [], 40_000))
    assert causes(out) == [("none", None, None)]


def test_a_member_that_stopped_by_itself_stopped_at_its_own_stopped_event():
    events = {"m0": [ev(0, "m0", "started"), ev(100, "m0", "assigned", [0]), ev(8_000, "m0", "stopped", seq=2)]}
    lives = member_lives(events, {"m0": 8_000}, {}, {"m0": MemberExit(8_100, "exited")}, 40_000)
    assert clean_stops([], lives) == {"m0": 8_000}
    # Asked to stop, then SIGKILLed after the stop timeout: a death, not a clean stop.
    lives = member_lives({}, {"m0": 5_000}, {}, {"m0": MemberExit(35_000, "stop_timeout")}, 40_000)
    assert clean_stops([act(Action.MEMBER_STOP, 5_000, "m0")], lives) == {}


def test_an_eager_bounce_gives_the_stopped_members_partition_its_stop_and_the_others_the_rebalance():
    # m1 leaves (clean stop at 10 s); the group rebalances 10.2-12 s; m0 keeps p0 but eager revokes it too.
    events = [ev(0, "m0", "started"), ev(0, "m1", "started", seq=1), ev(100, "m0", "assigned", [0], 2),
              ev(100, "m1", "assigned", [1], 3), ev(10_200, "m1", "revoked", [1], 4), ev(10_300, "m1", "stopped", seq=5),
              ev(10_400, "m0", "revoked", [0], 6), ev(12_000, "m0", "assigned", [0, 1], 7)]
    lives = member_lives({"m1": [e for e in events if e.member == "m1"]}, {"m0": 40_000, "m1": 10_300}, {}, {}, 40_000)
    eps = rebalance_episodes(events, lives, gap_ms=1500, teardown_after_ms=None)
    ep = next(e for e in eps if e.start_ms >= 10_000)
    out = attribute(gaps((1, 10_000, 13_000, "m1", "m0"), (0, 10_400, 12_900, "m0", "m0")),
                    fault_context([act(Action.MEMBER_STOP, 10_000, "m1")], lives, eps, 40_000))
    assert causes(out) == [("member_stop", "m1", f"rebalance:{ep.episode_id}"),
                           ("rebalance", str(ep.episode_id), None)]
    assert out["episode_id"].tolist() == [ep.episode_id, ep.episode_id]


def test_a_death_and_the_rebalance_it_triggers_are_both_kept_the_death_first():
    events = [ev(0, "m0", "started"), ev(0, "m2", "started", seq=1), ev(100, "m0", "assigned", [0], 2),
              ev(100, "m2", "assigned", [2], 3), ev(23_000, "m0", "assigned", [2], 4)]
    lives = member_lives({}, {"m0": 40_000, "m2": 20_000}, {"m2": 20_000}, {}, 40_000)
    eps = rebalance_episodes(events, lives, gap_ms=1500, teardown_after_ms=None)
    ep = next(e for e in eps if e.start_ms >= 20_000)
    out = attribute(gaps((2, 19_900, 24_000, "m2", "m0")),
                    fault_context([act(Action.MEMBER_KILL, 20_000, "m2")], lives, eps, 40_000))
    assert causes(out) == [("member_death", "m2", f"rebalance:{ep.episode_id}")]


def test_a_frozen_member_that_was_also_cut_off_is_a_freeze_with_the_cut_contributing():
    harness = [act(Action.MEMBER_PAUSE, 1_000, "A"), act(Action.MEMBER_PARTITION, 2_000, "A"),
               act(Action.MEMBER_HEAL, 8_000, "A"), act(Action.MEMBER_RESUME, 9_000, "A")]
    lives = member_lives({}, {"A": 50_000, "B": 50_000}, {}, {}, 50_000)
    out = attribute(gaps((0, 990, 9_500, "A", "A"), (1, 990, 9_500, "B", "B")),
                    fault_context(harness, lives, [], 50_000))
    assert causes(out) == [("member_freeze", "A", "member_partition:A"), ("none", None, None)]


def test_a_pause_nothing_explains_has_no_cause_and_an_unknown_host():
    lives = member_lives({}, {"A": 50_000}, {}, {}, 50_000)
    out = attribute(gaps((0, 10_000, 11_000, "A", "A")), fault_context([], lives, [], 50_000))
    assert causes(out) == [("none", None, None)]
    assert out["host_saturated"].isna().all()  # no samples: unknown, never "not saturated"


def test_the_group_stops_as_a_whole_after_any_members_stop():
    lives = _static_lives()
    out = attribute(gaps((None, 9_000, 12_000, None, None)), fault_context(STATIC_BOUNCE, lives, [], 40_000),
                    group_level=True)
    assert causes(out) == [("member_stop", "m1", None)]


def test_a_member_handed_the_partition_that_died_before_processing_it_is_the_cause_of_its_pause():
    """The partition's last processor (m2) gave it up alive; m0 was handed it and was killed 50 ms later,
    before it processed anything; m1 took it over only after m0's session ran out. The wait is m0's death, not
    m3's, which held the partition for a moment before m0 and gave it up alive before it was killed."""
    lives = member_lives({}, {"m0": 10_050, "m1": 60_000, "m2": 60_000, "m3": 20_000},
                         {"m0": 10_050, "m3": 20_000}, {}, 60_000)
    owned = [OwnershipInterval("t", 0, "m2", 100, 9_500, "revoked"),
             OwnershipInterval("t", 0, "m3", 9_600, 9_800, "revoked"),
             OwnershipInterval("t", 0, "m0", 10_000, 10_050, "killed"),
             OwnershipInterval("t", 0, "m1", 55_000, 60_000, "run_end")]
    out = attribute(gaps((0, 9_400, 55_200, "m2", "m1"), (1, 9_400, 55_200, "m2", "m1")),
                    fault_context([act(Action.MEMBER_KILL, 10_050, "m0"), act(Action.MEMBER_KILL, 20_000, "m3")],
                                  lives, [], 60_000, intervals=owned))
    # p1 was never m0's: nothing the run recorded explains its wait.
    assert causes(out) == [("member_death", "m0", None), ("none", None, None)]


def test_a_pause_is_the_episode_in_force_when_it_opened_the_forming_or_a_later_one():
    # A takes both partitions; B joins and p1 moves to it as the group forms (seen stable at 3,000); C joins at
    # 3,500 and p0 moves on to C at 5,000.
    evs = [ev(0, "A", "started"), ev(100, "A", "assigned", [0, 1], 1), ev(2_000, "B", "started", seq=2),
           ev(2_100, "A", "revoked", [1], 3), ev(2_800, "B", "assigned", [1], 4), ev(3_500, "C", "started", seq=5),
           ev(3_600, "A", "revoked", [0], 6), ev(5_000, "C", "assigned", [0], 7)]
    lives = member_lives({}, {"A": 40_000, "B": 40_000, "C": 40_000}, {}, {}, 40_000)
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None, stable_at_ms=[3_000])
    forming, later = [e for e in eps if e.formation], [e for e in eps if not e.formation]
    assert forming and [e.start_ms for e in later] == [3_500]
    # p1 waited from A's last processing in the forming until B fetched, just after C's join began the next
    # episode: the forming's, start-up. p0 waited from A's revoke, less than 1 s after the forming ended: C's join's.
    out = attribute(gaps((1, 2_050, 3_900, "A", "B"), (0, 3_550, 5_400, "A", "C")),
                    fault_context([], lives, eps, 40_000))
    assert out["kind"].tolist() == ["startup", "pause"]
    assert out["cause"].tolist() == ["group_formation", "rebalance"]
    assert out["episode_id"].tolist() == [forming[-1].episode_id, later[0].episode_id]
    assert out["cause_target"].tolist()[1] == str(later[0].episode_id)
    assert out["contributing"].tolist()[1] == f"rebalance:{forming[-1].episode_id}"
