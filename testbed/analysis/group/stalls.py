"""A member whose poll loop stalled past max.poll.interval.ms stops owning its partitions when its client
gives up, not when the stall ends.

The client leaves the group by itself once max.poll.interval.ms has passed without a poll (librdkafka
and Java send a LeaveGroup, kafka-python's heartbeat thread does), and the group moves the partitions on;
the member hears of it (``lost`` or ``revoked``) only at its next poll, after the stall. The ownership
intervals end at the stall's start plus the member's max.poll.interval.ms (recorded on the
``member_stall`` action), so records the new owners re-process meanwhile count as re-deliveries, and
anything the stalled member itself processes before its callback counts as processing outside ownership.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...history.events import SPANS, Action
from ..intervals import OwnershipInterval

END_REASON = "max_poll_exceeded"


def client_give_ups(harness: list[dict[str, Any]], end_of_run_ms: int) -> dict[str, list[int]]:
    """member -> the times its client gave up the group during stalls longer than its max.poll.interval.ms."""
    out: dict[str, list[int]] = {}
    open_stalls: dict[str, dict[str, Any]] = {}
    for h in harness:
        if h["kind"] == Action.MEMBER_STALL and h["target"]:
            open_stalls[h["target"]] = h
        elif h["kind"] in (SPANS[Action.MEMBER_STALL], Action.MEMBER_EXIT, Action.MEMBER_KILL) and h["target"] in open_stalls:
            _give_up(open_stalls.pop(h["target"]), int(h["ts_ms"]), out)
    for stall in open_stalls.values():
        _give_up(stall, end_of_run_ms, out)
    return out


def _give_up(stall: dict[str, Any], end_ms: int, out: dict[str, list[int]]) -> None:
    max_poll = stall["detail"].get("max_poll_interval_ms")
    if max_poll is not None and end_ms - int(stall["ts_ms"]) > int(max_poll):
        out.setdefault(stall["target"], []).append(int(stall["ts_ms"]) + int(max_poll))


def end_at_give_ups(intervals: list[OwnershipInterval], give_ups: dict[str, list[int]]) -> list[OwnershipInterval]:
    """Intervals that span a give-up of their member end there."""
    out = []
    for iv in intervals:
        cut = next((t for t in give_ups.get(iv.member, []) if iv.start_ms < t < iv.end_ms), None)
        out.append(iv if cut is None else replace(iv, end_ms=cut, end_reason=END_REASON))
    return out
