"""The harness's actions (history/harness.jsonl) as the stages read them, and what they say of the run as a
whole: its windows (start, end, drain, bounces), each member's kill and exit, when the group first formed.

An action is a dict ``{kind, ts_ms, target, detail}`` (``detail`` parsed), in time order.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ...history.events import Action
from ...run.metrics import Windows
from ..spark.sources import read_harness

HarnessAction = dict[str, Any]
NO_HARNESS_LOG = "no harness log: no kill times, bounce windows or drain end"


@dataclass(frozen=True)
class MemberExit:
    """The harness's ``member_exit`` record: when the process really ended and how."""

    ts_ms: int
    cause: str  # stopped | stop_timeout | killed | exited
    crashed: bool = False  # the user's program ended by itself with a failure (a ``member_crash`` follows)


def read_actions(spark: SparkSession, path: str | None) -> list[HarnessAction]:
    """Every action of the harness log in time order; none without a log."""
    if path is None:
        return []
    rows = read_harness(spark, path).orderBy("ts_ms").collect()
    return [
        {"kind": r["kind"], "ts_ms": r["ts_ms"], "target": r["target"], "detail": json.loads(r["detail"]) if r["detail"] else {}}
        for r in rows
    ]


def not_aimed_at(actions: list[HarnessAction], members: Collection[str]) -> list[HarnessAction]:
    """The actions but those aimed at ``members`` (another group kind's: its kill is no death of this kind's)."""
    if not members:
        return actions
    return [h for h in actions if h.get("target") not in members]


def kills(actions: list[HarnessAction]) -> dict[str, int]:
    """When each killed member died: its ``member_kill``, or the ``node_lost`` of the node it ran on (its
    members' ends as the harness learnt them, a kill's)."""
    out = first_by_target(actions, Action.MEMBER_KILL)
    for h in actions:
        if h["kind"] == Action.NODE_LOST:
            for member in (h.get("detail") or {}).get("members") or []:
                out.setdefault(member, h["ts_ms"])
    return out


def first_by_target(actions: list[HarnessAction], kind: Action) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in actions:
        if h["kind"] == kind and h["target"]:
            out.setdefault(h["target"], h["ts_ms"])
    return out


def exits(actions: list[HarnessAction]) -> dict[str, MemberExit]:
    crashed = {h["target"] for h in actions if h["kind"] == Action.MEMBER_CRASH and h["target"]}
    out: dict[str, MemberExit] = {}
    for h in actions:
        if h["kind"] == Action.MEMBER_EXIT and h["target"]:
            out[h["target"]] = MemberExit(h["ts_ms"], str(h["detail"].get("cause") or "exited"),
                                          h["target"] in crashed)
    return out


def stable_at_ms(actions: list[HarnessAction]) -> list[int]:
    """When the harness saw the group stable: each ``group_stable`` (every wait that saw it, a rolling bounce's
    between its replacements too); in a history written before that action existed, the end of each
    ``wait_stable`` step."""
    seen = [h["ts_ms"] for h in actions if h["kind"] == Action.GROUP_STABLE]
    return seen or [h["ts_ms"] for h in actions if h["kind"] == Action.STEP_END and h["target"] == "wait_stable"]


def undrained(windows: Windows, unprocessed: int | None, what: str) -> str | None:
    """Why a loss cannot be told, when the run recorded its start but not its final drain's end: it stopped at an
    error or an interruption before the drain gave every record its chance, so ``unprocessed`` records (``what``)
    may only not have been reached yet; None when the drain ended (or there is no harness log to say), and when
    nothing was left unprocessed (no loss, drain or not)."""
    if windows.run_start_ms is None or windows.drain_end_ms is not None or unprocessed == 0:
        return None
    count = f"{unprocessed:,} {what}" if unprocessed is not None else what.capitalize()
    return (f"the run stopped before its final drain (at an error or an interruption): {count} not processed by "
            "then, lost or only not yet reached cannot be told")


def windows(actions: list[HarnessAction]) -> Windows:
    def last(kind: Action) -> int | None:
        ts = [h["ts_ms"] for h in actions if h["kind"] == kind]
        return ts[-1] if ts else None

    bounces: list[tuple[int, int]] = []
    open_start: int | None = None
    for h in actions:
        if h["kind"] == Action.BOUNCE_START:
            open_start = h["ts_ms"] if open_start is None else open_start
        elif h["kind"] == Action.BOUNCE_END and open_start is not None:
            bounces.append((open_start, h["ts_ms"]))
            open_start = None
    starts = [h["ts_ms"] for h in actions if h["kind"] == Action.RUN_START]
    end = last(Action.RUN_END)
    if open_start is not None and end is not None:
        bounces.append((open_start, end))  # an interrupted bounce lasts to the end of the run
    return Windows(run_start_ms=starts[0] if starts else None, run_end_ms=end, drain_end_ms=last(Action.DRAIN_END),
                   bounces=bounces)
