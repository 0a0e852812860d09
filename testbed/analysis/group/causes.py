"""Why a pause happened: member freeze, member partition, member death, broker fault, rebalance episode, or none.

Pure Python over the (few) gaps, the harness's fault windows, member lives and client episodes. The first
rule that matches names the cause; the overlapping rebalance episode is kept whatever the cause, so a
kill's pause shows both its death and the rebalance that followed.

1. ``member_freeze``: the member that processed the partition last before the gap (for the group's
   stop-the-world: any member) was frozen (SIGSTOP, or its poll loop stalled) during the gap.
   ``member_partition``: that member was cut off from the brokers (a ``partition`` step) during the gap.
2. ``member_death``: that member died (kill, crash, SIGKILL after a stop timeout) before the gap ended.
3. ``broker_fault``: a broker was stopped, killed, paused or partitioned during the gap, or came back less than
   ``BROKER_RECOVERY_MS`` before it began (leadership and the coordinator move back after a restart).
4. ``rebalance``: a client-side rebalance episode (not teardown) overlaps the gap or ended less than
   ``EPISODE_TAIL_MS`` before it began (after an assignment the consumer fetches its committed offset and
   restarts its fetches: seen as a gap that opens just after the last callback).
   A rebalance pause in the group's formation episode (its first, see ``episodes``) is start-up instead:
   kind ``startup``, cause ``group_formation``.
5. ``none``: nothing the harness did or the group went through explains it (a slow consumer, GC, load).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...history.events import BROKER_OUTAGES, SPANS, Action
from .episodes import Episode, episodes_overlapping
from ..view.lives import MemberLife

BROKER_RECOVERY_MS = 5_000
EPISODE_TAIL_MS = 1_000
# Processing stops from a member's pause (SIGSTOP) until its resume, or from a stall of its poll loop until the
# stall ends: both are freezes of the member that processed the partition last.
FREEZE = {kind: SPANS[kind] for kind in (Action.MEMBER_PAUSE, Action.MEMBER_STALL)}
MEMBER_CUT = {Action.MEMBER_PARTITION: SPANS[Action.MEMBER_PARTITION]}


@dataclass(frozen=True)
class Window:
    target: str
    start_ms: int
    end_ms: int

    def overlaps(self, start: int, end: int) -> bool:
        return self.start_ms < end and start < self.end_ms


@dataclass
class FaultContext:
    freezes: list[Window] = field(default_factory=list)
    member_cuts: list[Window] = field(default_factory=list)
    broker_faults: list[Window] = field(default_factory=list)
    deaths: dict[str, int] = field(default_factory=dict)
    episodes: Sequence[Episode] = ()


def _paired_windows(harness: list[dict[str, Any]], starts: Mapping[str, str], end_of_run: int, grace_ms: int = 0) -> list[Window]:
    """Each start action paired with the next matching end action of the same target (open: the run's end)."""
    out: list[Window] = []
    for i, h in enumerate(harness):
        end_kind = starts.get(h["kind"])
        if end_kind is None or not h.get("target"):
            continue
        end = next((x["ts_ms"] for x in harness[i + 1:] if x["kind"] == end_kind and x.get("target") == h["target"]), None)
        out.append(Window(h["target"], h["ts_ms"], end + grace_ms if end is not None else end_of_run))
    return out


def fault_context(harness: list[dict[str, Any]], lives: dict[str, MemberLife], episodes: Sequence[Episode],
                  end_of_run: int) -> FaultContext:
    def until_death(windows: list[Window]) -> list[Window]:
        """A member frozen or cut off until it died: the window ends at its death, not at the run's end."""
        return [Window(w.target, w.start_ms, min(w.end_ms, lives[w.target].end_ms))
                if w.target in lives and lives[w.target].died else w for w in windows]

    return FaultContext(
        freezes=until_death(_paired_windows(harness, FREEZE, end_of_run)),
        member_cuts=until_death(_paired_windows(harness, MEMBER_CUT, end_of_run)),
        broker_faults=_paired_windows(harness, BROKER_OUTAGES, end_of_run, BROKER_RECOVERY_MS),
        deaths={m: life.end_ms for m, life in lives.items() if life.died},
        episodes=[ep for ep in episodes if not ep.teardown],
    )


def attribute(gaps: pd.DataFrame, ctx: FaultContext, *, group_level: bool = False) -> pd.DataFrame:
    """``gaps`` with ``cause``, ``cause_target`` (member, broker or episode id) and ``episode_id`` added."""
    causes, targets, episode_ids, kinds = [], [], [], []
    for row in gaps.itertuples(index=False):
        start, end = int(row.start_ms), int(row.end_ms)
        eps = episodes_overlapping(ctx.episodes, start - EPISODE_TAIL_MS, end)
        episode_ids.append(eps[0].episode_id if eps else None)
        cause, target = _cause(row, start, end, eps, ctx, group_level)
        kind = row.kind
        if cause == "rebalance" and eps[0].formation:
            kind, cause = "startup", "group_formation"  # start-up, kept out of the pause figures
        kinds.append(kind)
        causes.append(cause)
        targets.append(target)
    out = gaps.copy()
    out["kind"] = pd.Series(kinds, index=out.index, dtype="object")
    out["cause"] = pd.Series(causes, index=out.index, dtype="object")
    out["cause_target"] = pd.Series(targets, index=out.index, dtype="object")
    out["episode_id"] = pd.Series(episode_ids, index=out.index, dtype="Int64")
    return out


def _cause(row, start: int, end: int, eps: list[Episode], ctx: FaultContext, group_level: bool) -> tuple[str, str | None]:
    if row.kind == "startup":
        return "startup", None
    last = row.last_member if isinstance(row.last_member, str) else None
    suspects = None if group_level else {last}
    for w in ctx.freezes:
        if (suspects is None or w.target in suspects) and w.overlaps(start, end):
            return "member_freeze", w.target
    for w in ctx.member_cuts:
        if (suspects is None or w.target in suspects) and w.overlaps(start, end):
            return "member_partition", w.target
    for member, died_at in ctx.deaths.items():
        if (suspects is None and start - BROKER_RECOVERY_MS <= died_at < end) or (suspects and member in suspects and died_at < end):
            return "member_death", member
    for w in ctx.broker_faults:
        if w.overlaps(start, end):
            return "broker_fault", w.target
    if eps:
        return "rebalance", str(eps[0].episode_id)
    return "none", None
