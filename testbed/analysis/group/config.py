"""The run's configuration as the history tells it: protocol, commit modes, membership, faults."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...history.events import FAULTS, Action
from ...run.metrics import RunConfig

COOPERATIVE = {"cooperative-sticky"}
# The faults that cut a member off from its group (no heartbeat reaches the coordinator), each with the
# actions aimed at the member that end it: a SIGSTOP, and a network partition from the brokers.
CUT_OFF_ENDS: dict[Action, frozenset[Action]] = {
    Action.MEMBER_PAUSE: frozenset({Action.MEMBER_RESUME, Action.MEMBER_EXIT, Action.MEMBER_KILL}),
    Action.MEMBER_PARTITION: frozenset({Action.MEMBER_HEAL, Action.MEMBER_EXIT, Action.MEMBER_KILL}),
}


def protocol_of(started: dict[str, Any]) -> str:
    """The member's rebalance protocol as its started event says; histories written before members said so
    (or a member with only unknown custom assignors) are judged by the built-in assignor names."""
    if started.get("rebalance_protocol"):
        return started["rebalance_protocol"]
    if started.get("group_protocol") == "consumer":
        return "consumer"
    assignors = started.get("assignors") or []
    if not assignors:
        return "unknown"
    kinds = {"cooperative" if a in COOPERATIVE else "eager" for a in assignors}
    # A list with both is the KIP-429 upgrade path: the group stays eager until every member drops eager.
    return "eager" if "eager" in kinds else "cooperative"


def run_config(started: dict[str, dict[str, Any]], harness: list[dict[str, Any]]) -> RunConfig:
    protocols = {protocol_of(s) for s in started.values()}
    protocol = protocols.pop() if len(protocols) == 1 else ("mixed" if protocols else "unknown")
    faults = sorted({h["kind"] for h in harness if h.get("kind") in FAULTS})
    cut_offs = cut_offs_past_session_timeout(started, harness)
    return RunConfig(
        protocol=protocol,
        commit_modes=sorted({s.get("commit_mode") or "auto" for s in started.values()}),
        static_membership=bool(started) and all(s.get("group_instance_id") for s in started.values()),
        clients=sorted({s["client"] for s in started.values() if s.get("client")}),
        assignors=sorted({a for s in started.values() for a in (s.get("assignors") or [])}),
        faults=faults,
        cut_off_past_session_timeout=cut_offs.past,
        members_cut_off_past_timeout=cut_offs.members_past,
        members_cut_off_timeout_unknown=cut_offs.members_unknown,
        members_crashed=sorted({h["target"] for h in harness if h.get("kind") == Action.MEMBER_CRASH and h.get("target")}),
        crashes_allowed=any(bool(_detail(h).get("allow_crashes")) for h in harness if h.get("kind") == Action.RUN_START),
        members=started,
    )


@dataclass(frozen=True)
class CutOffPastTimeout:
    """Whether members were cut off (paused or partitioned) longer than their session timeout: ``past`` is True
    if one was, None if none was but some cannot be judged (timeout, end or loss unknown), False otherwise."""

    past: bool | None
    members_past: list[str]
    members_unknown: list[str]


def _detail(h: dict[str, Any]) -> dict[str, Any]:
    detail = h.get("detail") or {}
    if isinstance(detail, str):
        detail = json.loads(detail) if detail else {}
    return detail


def cut_offs_past_session_timeout(started: dict[str, dict[str, Any]], harness: list[dict[str, Any]]) -> CutOffPastTimeout:
    """Each ``member_pause`` and ``member_partition`` against the member's effective ``session_timeout_ms``
    (its ``started`` event; the action detail's ``session_timeout_ms`` if the member did not say). A pause
    lasts until the member's next ``member_resume``, a partition until its next ``member_heal``, either until
    its ``member_exit`` or ``member_kill``, else the run's end; with none of those it is past the timeout only
    if the harness log itself runs on longer than that. A detail's explicit ``past_session_timeout`` wins.
    A partition with random ``loss`` lets some heartbeats through: whether it outlasted the timeout in
    effect cannot be told from the history."""
    past: set[str] = set()
    unsure: set[str] = set()
    last_ts = max((h["ts_ms"] for h in harness), default=None)
    run_ends = [h["ts_ms"] for h in harness if h.get("kind") == Action.RUN_END]
    for p in (h for h in harness if h.get("kind") in CUT_OFF_ENDS):
        member, detail = p.get("target"), _detail(p)
        if detail.get("loss") is not None:
            unsure.add(member)
            continue
        if "past_session_timeout" in detail:
            if detail["past_session_timeout"]:
                past.add(member)
            continue
        timeout = (started.get(member) or {}).get("session_timeout_ms")
        if timeout is None:
            timeout = detail.get("session_timeout_ms")
        ends = [h["ts_ms"] for h in harness if h.get("kind") in CUT_OFF_ENDS[p["kind"]]
                and h.get("target") == member and h["ts_ms"] >= p["ts_ms"]]
        ends = ends or [t for t in run_ends if t >= p["ts_ms"]]
        end = min(ends) if ends else None
        if timeout is None:
            unsure.add(member)
        elif end is not None:
            if end - p["ts_ms"] > int(timeout):
                past.add(member)
        elif last_ts is not None and last_ts - p["ts_ms"] > int(timeout):
            past.add(member)  # still paused when the harness log ends, already longer than the timeout
        else:
            unsure.add(member)
    unsure -= past
    return CutOffPastTimeout(True if past else (None if unsure else False), sorted(past), sorted(unsure))
