"""Ownership of a member stalled past max.poll.interval.ms ends when its client gives up, not at its callback."""

from __future__ import annotations

from testbed.analysis.intervals import OwnershipInterval
from testbed.analysis.group.stalls import END_REASON, client_give_ups, end_at_give_ups
from testbed.history.events import Action


def act(kind: Action, ts: int, target: str = "m1", **detail) -> dict:
    return {"kind": kind, "ts_ms": ts, "target": target, "detail": detail}


def test_a_stall_longer_than_max_poll_ends_the_members_intervals_at_the_give_up_and_a_short_one_does_not() -> None:
    harness = [act(Action.MEMBER_STALL, 10_000, max_poll_interval_ms=10_000), act(Action.MEMBER_UNSTALL, 30_000),
               act(Action.MEMBER_STALL, 40_000, max_poll_interval_ms=10_000), act(Action.MEMBER_UNSTALL, 45_000),
               act(Action.MEMBER_STALL, 60_000, target="m2", max_poll_interval_ms=10_000)]  # open until the run ends
    give_ups = client_give_ups(harness, end_of_run_ms=75_000)
    assert give_ups == {"m1": [20_000], "m2": [70_000]}
    intervals = [OwnershipInterval("t", 0, "m1", 1_000, 30_500, "lost"),
                 OwnershipInterval("t", 1, "m1", 31_000, 50_000, "revoked"),
                 OwnershipInterval("t", 2, "m0", 1_000, 50_000, "revoked")]
    cut = end_at_give_ups(intervals, give_ups)
    assert (cut[0].end_ms, cut[0].end_reason) == (20_000, END_REASON)
    assert cut[1:] == intervals[1:]
