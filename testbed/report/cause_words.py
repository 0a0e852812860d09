"""How a pause's causes read in a sentence: its primary cause, then each contributing one as a clause.

Read from a ``partition_pauses`` row (``cause``, ``cause_target``, ``contributing``: docs/metrics.md) and the
harness's marks, which tell a bounce from a lone stop and a slowed broker from a stopped one. Nothing here
decides a cause: the analysis did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from testbed.history.events import Action

from .inputs import HarnessMark

# The primary cause; {target} is its cause_target (member_stop is worded by ``primary``: a bounce or a stop,
# waiting for a replacement or a rebalance).
CAUSE_WORDS: dict[str, str] = {
    "rebalance": "a rebalance (episode {target})",
    "member_freeze": "a frozen member ({target}: stopped by SIGSTOP or its poll loop stalled)",
    "member_partition": "a member cut off from the brokers ({target})",
    "member_death": "a member's death ({target})",
    "broker_fault": "a broker fault ({broker})",
    "host_saturated": "the host's saturation (no fault, death, stop or rebalance explains it; the machine was saturated across it)",
    "none": "nothing the run recorded (no rebalance, fault or death explains it)",
}
# A contributing cause, as a clause after the primary one.
CLAUSE_WORDS: dict[str, str] = {
    "rebalance": "during rebalance episode {target}",
    "member_freeze": "while {target} was frozen",
    "member_partition": "while {target} was cut off from the brokers",
    "member_death": "after {target} died",
    "member_stop": "after {target} stopped",
    "broker_fault": "while {target} {state}",
    "host_saturated": "while the host was saturated",
}
# What a broker fault of each kind did to the broker, for "while broker-1 was slowed".
BROKER_STATE: dict[str, str] = {
    Action.BROKER_LATENCY: "was slowed", Action.BROKER_PAUSE: "was paused", Action.BROKER_PARTITION: "was cut off",
    Action.BROKER_STOP: "was down", Action.BROKER_KILL: "was down", Action.BROKER_START: "was coming back",
    Action.BROKER_RESTART: "was restarting",
}


def primary(row: dict[str, Any] | pd.Series, marks: Sequence[HarnessMark]) -> str:
    cause, target = str(row["cause"]), _target(row.get("cause_target"))
    if cause == "member_stop":
        # A static member's partitions wait for its replacement; any other's for the rebalance its leaving starts.
        contributing = row.get("contributing")
        waited = ("the rebalance its leaving started" if isinstance(contributing, str) and "rebalance:" in contributing
                  else "its replacement" if _bounced(target, marks) else "its next owner")
        stop = "the bounce" if _bounced(target, marks) else "the clean stop"
        return f"{stop} of {target} (the partition waited for {waited})"
    if cause == "member_death" and _crashed(target, marks):
        return f"the crash of {target} (the user's program died by itself)"
    return CAUSE_WORDS.get(cause, cause).format(target=target, broker=_broker_name(target))


def clauses(row: dict[str, Any] | pd.Series, marks: Sequence[HarnessMark]) -> list[str]:
    """One clause per contributing cause, in the analysis's order; none for an older table without them."""
    text = row.get("contributing")
    if not isinstance(text, str) or not text:
        return []
    out = []
    items = [item.partition(":")[::2] for item in text.split(", ")]
    episodes = [target for cause, target in items if cause == "rebalance"]
    for cause, target in items:
        if cause == "member_stop" and _bounced(target, marks):
            out.append(f"after the bounce of {target}")
        elif cause == "rebalance":  # one clause for every overlapping episode
            if target == episodes[0]:
                out.append(f"during rebalance episode{'s' if len(episodes) > 1 else ''} {', '.join(episodes)}")
        elif cause == "member_death" and _crashed(target, marks):
            out.append(f"after {target} crashed")
        elif cause == "broker_fault":
            out.append(CLAUSE_WORDS[cause].format(
                target=_broker_name(target), state=_broker_state(target, int(row["start_ms"]), int(row["end_ms"]), marks)))
        else:
            out.append(CLAUSE_WORDS.get(cause, cause + " {target}").format(target=target or "?"))
    return out


def causes_phrase(row: dict[str, Any] | pd.Series, marks: Sequence[HarnessMark]) -> str:
    """"the bounce of m1 (...), while broker-1 was slowed"."""
    return ", ".join([primary(row, marks), *clauses(row, marks)])


def _target(value: Any) -> str:
    return "?" if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _broker_name(target: str) -> str:
    """The harness names brokers ``broker-1``; an older history may give the node id alone."""
    return target if target.startswith("broker") else f"broker {target}"


def _crashed(member: str, marks: Sequence[HarnessMark]) -> bool:
    """The member's program crashed (the harness's ``member_crash``): its death was its own."""
    return any(m.kind == Action.MEMBER_CRASH and m.target == member for m in marks)


def _bounced(member: str, marks: Sequence[HarnessMark]) -> bool:
    """The member's stop came inside a bounce (the harness's bounce span); the fleet's close at the run's end is no
    bounce's stop, also inside a bounce the run's end cut short (no ``bounce_end``)."""
    stops = [m.start_ms for m in marks
             if m.kind == Action.MEMBER_STOP and m.target == member and m.reason != "fleet_close"]
    bounces = [m for m in marks if m.kind == Action.BOUNCE_START]
    return any(b.start_ms <= t <= (b.end_ms if b.end_ms is not None else t) for t in stops for b in bounces)


def _broker_state(broker: str, start_ms: int, end_ms: int, marks: Sequence[HarnessMark]) -> str:
    """What the broker's fault overlapping the pause was (the latest one begun before the pause ended)."""
    faults = [m for m in marks if m.target == broker and m.kind in BROKER_STATE and m.start_ms < end_ms]
    return BROKER_STATE[faults[-1].kind] if faults else "had a fault"
