"""Why a pause happened: every cause the run recorded across it, the first by priority as the primary.

Pure Python over the (few) gaps, the harness's fault windows, member lives and client episodes. Every rule that
matches is kept: the first (by the order below) is the pause's ``cause`` and ``cause_target``, the others are
its ``contributing`` causes, so a bounce during a broker's latency reads "the bounce of m1, while broker-1 was
slowed" instead of one guess. The overlapping rebalance episode is kept in ``episode_id`` whatever the cause.

The suspects of a partition's gap are the member that processed the partition last before it and every member
that owned the partition during it, for what happened to it while it owned the partition (a member handed the
partition that died, froze or stopped before processing it kept the records waiting as much as the last processor
would have); of the group's stop-the-world, every member.

1. ``member_freeze``: a suspect was frozen (SIGSTOP, or its poll loop stalled) during the gap.
   ``member_partition``: a suspect was cut off from the brokers (a ``partition`` step) during the gap.
2. ``member_death``: a suspect died (kill, crash, SIGKILL after a stop timeout) before the gap ended.
3. ``member_stop``: a suspect stopped cleanly (a stop step, a clean bounce or scale-in, or it ended itself
   with its own ``stopped``) before the gap ended: the partition waited for its next owner, the replacement
   under the same static instance id or the members the rebalance that follows gives it to.
4. ``broker_fault``: a broker was stopped, killed, paused, partitioned or slowed (latency) during the gap, or
   came back less than ``BROKER_RECOVERY_MS`` before it began (leadership and the coordinator move back).
5. ``rebalance``: a client-side rebalance episode (not teardown) overlaps the gap or ended less than
   ``EPISODE_TAIL_MS`` before it began (after an assignment the consumer fetches its committed offset and
   restarts its fetches: seen as a gap that opens just after the last callback).
   The episode in force when the gap opened (the last to begin by then) comes first (``episode_id``, the primary
   ``rebalance`` target), any other it overlaps after it. A rebalance pause that opened in the group's formation
   episode (its first, see ``episodes``) is start-up instead: kind ``startup``, cause ``group_formation``.
6. ``host_saturated``: the machine itself was saturated across the whole gap (``view.host``: the definition).
7. ``none``: nothing the harness did, the group went through or the host showed explains it (a slow consumer,
   GC). Whether the host was saturated is its own column, ``host_saturated``: null (unknown) where the run has
   no host samples over the gap, so "none" in a run without samples never claims the host was idle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from ...history.events import BROKER_OUTAGES, SPANS, Action
from .episodes import Episode, episodes_overlapping
from ..intervals import OwnershipInterval, Window, paired_windows
from ..view.lives import MemberLife

BROKER_RECOVERY_MS = 5_000
EPISODE_TAIL_MS = 1_000
# Processing stops from a member's pause (SIGSTOP) until its resume, or from a stall of its poll loop until the
# stall ends: both are freezes of the member.
FREEZE = {kind: SPANS[kind] for kind in (Action.MEMBER_PAUSE, Action.MEMBER_STALL)}
MEMBER_CUT = {Action.MEMBER_PARTITION: SPANS[Action.MEMBER_PARTITION]}
# Every cause a pause can have, primary first when several hold (``none`` only alone).
CAUSES = ("member_freeze", "member_partition", "member_death", "member_stop", "broker_fault", "rebalance",
          "host_saturated")
CAUSE_COLUMNS = ("cause", "cause_target", "contributing", "episode_id", "host_saturated")


class HostState(Protocol):
    """Whether the host was saturated across a span: True, False, or None when its samples do not cover it."""

    def saturated_across(self, start_ms: int, end_ms: int) -> bool | None: ...


@dataclass
class FaultContext:
    freezes: list[Window] = field(default_factory=list)
    member_cuts: list[Window] = field(default_factory=list)
    broker_faults: list[Window] = field(default_factory=list)
    deaths: dict[str, int] = field(default_factory=dict)
    stops: dict[str, int] = field(default_factory=dict)  # member -> when its clean stop was asked for (or came)
    episodes: Sequence[Episode] = ()
    host: HostState | None = None  # None: the run has no host samples (saved before the sampler existed)
    owners: Mapping[tuple[str, int], Sequence[OwnershipInterval]] = field(default_factory=dict)

    def held_during(self, topic: str, partition: int, start: int, end: int) -> list[OwnershipInterval]:
        """The partition's ownership intervals that overlap ``[start, end)``."""
        return [iv for iv in self.owners.get((topic, partition), ()) if iv.start_ms < end and start < iv.end_ms]


def clean_stops(harness: list[dict[str, Any]], lives: dict[str, MemberLife]) -> dict[str, int]:
    """member -> when it stopped cleanly: the harness's first ``member_stop`` of it (the SIGTERM: its partitions
    stop being processed from then on, before its own ``stopped`` event), else its own ``stopped`` event (it
    ended by itself: ``max_records``, a handler error with ``stop``). A member that died is not among them: a
    stop that ran into its timeout is a death."""
    asked: dict[str, int] = {}
    for h in harness:
        if h["kind"] == Action.MEMBER_STOP and h.get("target"):
            asked.setdefault(h["target"], int(h["ts_ms"]))
    out = {m: t for m, t in asked.items() if not (m in lives and lives[m].died)}
    out.update({m: life.end_ms for m, life in lives.items() if life.reason == "stopped" and m not in out})
    return out


def fault_context(harness: list[dict[str, Any]], lives: dict[str, MemberLife], episodes: Sequence[Episode],
                  end_of_run: int, host: HostState | None = None,
                  intervals: Sequence[OwnershipInterval] = ()) -> FaultContext:
    def until_death(windows: list[Window]) -> list[Window]:
        """A member frozen or cut off until it died: the window ends at its death, not at the run's end."""
        return [Window(w.target, w.start_ms, min(w.end_ms, lives[w.target].end_ms), w.kind)
                if w.target in lives and lives[w.target].died else w for w in windows]

    return FaultContext(
        freezes=until_death(paired_windows(harness, FREEZE, end_of_run)),
        member_cuts=until_death(paired_windows(harness, MEMBER_CUT, end_of_run)),
        broker_faults=paired_windows(harness, BROKER_OUTAGES, end_of_run, BROKER_RECOVERY_MS),
        deaths={m: life.end_ms for m, life in lives.items() if life.died},
        stops=clean_stops(harness, lives),
        episodes=[ep for ep in episodes if not ep.teardown],
        host=host,
        owners=_by_partition(intervals),
    )


def _by_partition(intervals: Sequence[OwnershipInterval]) -> dict[tuple[str, int], list[OwnershipInterval]]:
    out: dict[tuple[str, int], list[OwnershipInterval]] = {}
    for iv in intervals:
        out.setdefault((iv.topic, iv.partition), []).append(iv)
    return out


def attribute(gaps: pd.DataFrame, ctx: FaultContext, *, group_level: bool = False) -> pd.DataFrame:
    """``gaps`` with ``cause``, ``cause_target`` (member, broker or episode id), ``contributing`` (the other
    causes, ``cause:target`` joined by ``, ``; null when none), ``episode_id`` and ``host_saturated`` added."""
    columns: dict[str, list[Any]] = {name: [] for name in ("kind", *CAUSE_COLUMNS)}
    for row in gaps.itertuples(index=False):
        start, end = int(row.start_ms), int(row.end_ms)
        eps = _in_force_first(episodes_overlapping(ctx.episodes, start - EPISODE_TAIL_MS, end), start)
        host = ctx.host.saturated_across(start, end) if ctx.host is not None else None
        kind = row.kind
        found = [] if kind == "startup" else _causes(row, start, end, eps, ctx, group_level, host)
        cause, target = found[0] if found else (("startup", None) if kind == "startup" else ("none", None))
        if cause == "rebalance" and eps[0].formation:
            kind, cause = "startup", "group_formation"  # start-up, kept out of the pause figures
        columns["kind"].append(kind)
        columns["cause"].append(cause)
        columns["cause_target"].append(target)
        columns["contributing"].append(", ".join(_label(c, t) for c, t in found[1:]) or None)
        columns["episode_id"].append(eps[0].episode_id if eps else None)
        columns["host_saturated"].append(host)
    out = gaps.copy()
    dtypes = {"episode_id": "Int64", "host_saturated": "boolean"}
    for name, values in columns.items():
        out[name] = pd.Series(values, index=out.index, dtype=dtypes.get(name, "object"))
    return out


def _in_force_first(eps: list[Episode], start: int) -> list[Episode]:
    """The episode in force when the gap opened (the last to start by then) first: a gap that opens in a bounce
    less than EPISODE_TAIL_MS after the forming ended is the bounce's, one that opens in the forming and runs on
    into the next episode (a hand-over whose new owner fetches after the next episode began) the forming's."""
    begun = [ep for ep in eps if ep.start_ms <= start]
    if not begun:
        return eps
    first = max(begun, key=lambda ep: ep.start_ms)
    return [first, *(ep for ep in eps if ep is not first)]


def _label(cause: str, target: str | None) -> str:
    return cause if target is None else f"{cause}:{target}"


def _causes(row, start: int, end: int, eps: list[Episode], ctx: FaultContext, group_level: bool,
            host: bool | None) -> list[tuple[str, str | None]]:
    """Every (cause, target) that holds across the gap, in priority order, each once."""
    last = row.last_member if isinstance(row.last_member, str) else None
    held = [] if group_level else ctx.held_during(row.topic, int(row.partition), start, end)

    def suspect(member: str, lo: int, hi: int) -> bool:
        """The last processor, or a member that owned the partition during the gap at some moment of ``[lo, hi]``
        (its death or stop while it held the partition; not one after it gave the partition up alive)."""
        return group_level or member == last or any(
            iv.member == member and iv.start_ms <= hi and lo <= iv.end_ms for iv in held)

    def window_suspect(w: Window) -> bool:
        return w.overlaps(start, end) and suspect(w.target, max(w.start_ms, start), min(w.end_ms, end))

    def ended_before(at: int) -> bool:
        """A member's death or stop explains the gap: a suspect's before the gap ended; for
        the whole group, any member's from BROKER_RECOVERY_MS before the span to its end."""
        return start - BROKER_RECOVERY_MS <= at < end if group_level else at < end

    found: list[tuple[str, str | None]] = []
    found += [("member_freeze", w.target) for w in ctx.freezes if window_suspect(w)]
    found += [("member_partition", w.target) for w in ctx.member_cuts if window_suspect(w)]
    found += [("member_death", m) for m, at in ctx.deaths.items() if suspect(m, at, at) and ended_before(at)]
    found += [("member_stop", m) for m, at in ctx.stops.items() if suspect(m, at, at) and ended_before(at)]
    found += [("broker_fault", w.target) for w in ctx.broker_faults if w.overlaps(start, end)]
    found += [("rebalance", str(ep.episode_id)) for ep in eps]
    if host:
        found.append(("host_saturated", None))
    return list(dict.fromkeys(found))
