"""The run's configuration as the history tells it: protocol, commit modes, membership, faults."""

from __future__ import annotations

import json
from typing import Any

from .metrics import RunConfig

COOPERATIVE = {"cooperative-sticky"}
FAULT_KINDS = {
    "member_kill",
    "member_pause",
    "broker_stop",
    "broker_kill",
    "broker_pause",
    "broker_restart",
}


def protocol_of(started: dict[str, Any]) -> str:
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
    faults = sorted({h["kind"] for h in harness if h.get("kind") in FAULT_KINDS})
    return RunConfig(
        protocol=protocol,
        commit_modes=sorted({s.get("commit_mode") or "auto" for s in started.values()}),
        static_membership=bool(started) and all(s.get("group_instance_id") for s in started.values()),
        clients=sorted({s["client"] for s in started.values() if s.get("client")}),
        assignors=sorted({a for s in started.values() for a in (s.get("assignors") or [])}),
        faults=faults,
        pause_past_session_timeout=_pause_past_session_timeout(harness),
        members=started,
    )


def _pause_past_session_timeout(harness: list[dict[str, Any]]) -> bool | None:
    """True if some member pause lasted longer than the session timeout the harness recorded.

    The harness may note ``past_session_timeout`` or ``session_timeout_ms`` in a pause's detail; a
    pause without either leaves the question open (None).
    """
    pauses = [h for h in harness if h.get("kind") == "member_pause"]
    if not pauses:
        return False
    answer: bool | None = None
    for p in pauses:
        detail = p.get("detail") or {}
        if isinstance(detail, str):
            detail = json.loads(detail) if detail else {}
        if "past_session_timeout" in detail:
            answer = answer or bool(detail["past_session_timeout"])
            continue
        timeout = detail.get("session_timeout_ms")
        resume = next(
            (h for h in harness if h.get("kind") == "member_resume" and h.get("target") == p.get("target") and h["ts_ms"] >= p["ts_ms"]),
            None,
        )
        if timeout is not None and resume is not None:
            answer = answer or (resume["ts_ms"] - p["ts_ms"] > int(timeout))
    return answer
