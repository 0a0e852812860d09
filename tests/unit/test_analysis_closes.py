"""Close times and hung closes from the harness's stop and exit records and the members' own `stopped` events."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.group.closes import CATALOGUE, member_closes
from testbed.analysis.group.episodes import Episode
from testbed.analysis.view.lives import MemberEvent
from testbed.history.events import Action


def action(kind: Action, target: str, ts: int, **detail) -> dict:
    return {"kind": kind, "target": target, "ts_ms": ts, "detail": detail}


def test_a_close_ends_at_the_members_stopped_event_and_a_sigkilled_one_is_a_hang_of_unknown_length() -> None:
    harness = [
        action(Action.MEMBER_STOP, "m0", 1_000),
        action(Action.MEMBER_EXIT, "m0", 1_900, cause="stopped"),
        action(Action.MEMBER_STOP, "m1", 2_000),
        action(Action.MEMBER_EXIT, "m1", 32_000, cause="stop_timeout"),
        action(Action.MEMBER_STOP, "m2", 40_000, reason="fleet_close"),
        action(Action.MEMBER_EXIT, "m2", 40_300, cause="stopped"),  # no stopped event: closed at its exit
        action(Action.MEMBER_KILL, "m3", 41_000),
    ]
    events = {"m0": [MemberEvent(500, "m0", "stopped"), MemberEvent(1_650, "m0", "stopped")],
              "m1": [], "m2": []}
    closes = member_closes(harness, events).set_index("member")
    assert closes.loc["m0", "close_ms"] == 650  # the stopped event after the request, not the earlier one
    assert bool(closes.loc["m1", "hung"]) and pd.isna(closes.loc["m1", "close_ms"])
    assert closes.loc["m2", "close_ms"] == 300 and closes.loc["m2", "reason"] == "fleet_close"
    assert "m3" not in closes.index  # a kill is no close
    measures = CATALOGUE.measure(closes.reset_index())
    assert measures["member_closes"].value == 3 and measures["close_hangs"].value == 1
    assert measures["close_max_ms"].value == 650 and measures["close_p50_ms"].value == 475


def test_without_a_stop_the_close_times_are_unknown_not_zero() -> None:
    measures = CATALOGUE.measure(member_closes([], {}))
    assert measures["member_closes"].value == 0 and measures["close_hangs"].value == 0
    assert (measures["close_max_ms"].value, measures["close_max_ms"].unknown) == (None, "no member was asked to stop")


def test_a_stop_inside_an_episode_that_began_before_it_is_a_close_during_rebalance() -> None:
    harness = [action(Action.MEMBER_STOP, "m0", 5_000), action(Action.MEMBER_EXIT, "m0", 5_400, cause="stopped"),
               action(Action.MEMBER_STOP, "m1", 9_000), action(Action.MEMBER_EXIT, "m1", 9_300, cause="stopped"),
               action(Action.MEMBER_STOP, "m2", 20_000, reason="fleet_close"),
               action(Action.MEMBER_EXIT, "m2", 20_100, cause="stopped")]
    episodes = [Episode(1, 4_000, 7_000, "started:m3"),       # m0 stops while m3's join is under way
                Episode(2, 9_000, 10_000, "stopped:m1"),       # the episode m1's own stop begins
                Episode(3, 19_000, 21_000, "stopped:m2", teardown=True)]
    closes = member_closes(harness, {"m0": [], "m1": [], "m2": []}, episodes).set_index("member")
    assert closes["during_rebalance"].to_dict() == {"m0": True, "m1": False, "m2": False}
    assert CATALOGUE.measure(closes.reset_index())["closes_during_rebalance"].value == 1
