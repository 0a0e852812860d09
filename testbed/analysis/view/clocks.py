"""Members that ran on other machines (a Ray cluster, testbed.placement) wrote their timestamps by those machines'
clocks; the harness measured each node's offset at the start and the end of the run (``node_clock`` actions). The
analysis puts every member's timestamps on the harness's clock (the one the acks and the harness's own actions were
stamped by) and says how far that can be trusted: a pause or an overlap shorter than the uncertainty may be the
clocks' doing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ...history.events import Action
from .harness import HarnessAction


@dataclass(frozen=True)
class NodeClock:
    offset_ms: float  # the node's clock minus the harness's: the mean of its measurements
    uncertainty_ms: float  # the largest of its measurements' uncertainties, plus how far they disagree


def node_clocks(actions: Sequence[HarnessAction]) -> dict[str, NodeClock]:
    """Each node's offset from its ``node_clock`` actions; a drift between start and end widens the uncertainty."""
    seen: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for action in actions:
        detail = action.get("detail") or {}
        if action["kind"] == Action.NODE_CLOCK and action.get("target") and "offset_ms" in detail:
            seen[action["target"]].append((float(detail["offset_ms"]), float(detail.get("uncertainty_ms") or 0.0)))
    clocks = {}
    for node, measured in seen.items():
        offsets = [o for o, _ in measured]
        mean = sum(offsets) / len(offsets)
        spread = max(abs(o - mean) for o in offsets)
        clocks[node] = NodeClock(mean, max(u for _, u in measured) + spread)
    return clocks


def placed_members(actions: Sequence[HarnessAction]) -> dict[str, tuple[str, NodeClock]]:
    """Each member that ran on a node whose clock was measured: its node and that node's clock (members on this
    machine are not in it: their clock is the harness's)."""
    clocks = node_clocks(actions)
    out = {}
    for action in actions:
        node = (action.get("detail") or {}).get("node")
        if action["kind"] == Action.MEMBER_START and action.get("target") and node in clocks:
            out[action["target"]] = (node, clocks[node])
    return out


def member_offsets_ms(actions: Sequence[HarnessAction]) -> dict[str, int]:
    """Whole milliseconds to take off each placed member's timestamps (only those with an offset of 1 ms or more:
    timestamps are whole milliseconds)."""
    return {member: shift for member, (_, clock) in placed_members(actions).items()
            if (shift := round(clock.offset_ms))}


def clock_note(actions: Sequence[HarnessAction]) -> str | None:
    """What the report says of the clocks when members ran on several nodes; None when none did."""
    clocks = node_clocks(actions)
    if not clocks:
        return None
    largest = max(abs(c.offset_ms) for c in clocks.values())
    uncertainty = max(c.uncertainty_ms for c in clocks.values())
    return (f"members ran on {len(clocks)} node(s) of a Ray cluster: their timestamps are put on the harness's clock "
            f"by each node's measured offset (at most {largest:.1f} ms here), known within {uncertainty:.1f} ms: a "
            f"pause or an overlap shorter than that may be the clocks' doing")


def across_uncertainty_ms(members: Sequence[str], placed: dict[str, tuple[str, float]], harness: bool) -> float:
    """How far a duration measured between timestamps of ``members`` (and of the harness's clock: a pause may start
    at a record's produce time) may be the clocks' doing: 0 when all kept one clock, else the two largest
    uncertainties of the clocks involved added (each end may be off by its own)."""
    clocks: dict[str | None, float] = {None: 0.0} if harness else {}  # None: this machine's clock
    for member in members:
        node, uncertainty = placed.get(member, (None, 0.0))
        clocks[node] = uncertainty
    return sum(sorted(clocks.values(), reverse=True)[:2]) if len(clocks) > 1 else 0.0


MARK = "within_clock_uncertainty"


def mark_within_uncertainty(tables: dict[str, pd.DataFrame], actions: Sequence[HarnessAction]) -> str | None:
    """Mark (column ``within_clock_uncertainty``) each pause and duplicate ownership shorter than the uncertainty of
    the clocks it was measured across; a note saying how many, None when no member ran on another node."""
    placed = {member: (node, clock.uncertainty_ms) for member, (node, clock) in placed_members(actions).items()}
    marked = {}
    for name, length, who in (("partition_pauses", "pause_ms", ("last_member", "resumed_member")),
                              ("stop_the_world", "pause_ms", None),
                              ("duplicate_ownership", "duration_ms", ("members",))):
        frame = tables.get(name)
        if frame is None:
            continue
        if not placed or not len(frame):
            tables[name] = frame.assign(**{MARK: pd.Series(False, index=frame.index, dtype=bool)})
            continue

        def involved(row: pd.Series, who: tuple[str, ...] | None = who) -> list[str]:
            if who is None:  # the group as a whole: any of its members
                return list(placed)
            return [m for c in who for m in str(row[c]).split(",") if isinstance(row[c], str)]

        harness = name != "duplicate_ownership"  # an ownership span is the members' callbacks alone
        flags = frame.apply(lambda row: bool(pd.notna(row[length]) and row[length] <
                                             across_uncertainty_ms(involved(row), placed, harness)), axis=1)
        tables[name] = frame.assign(**{MARK: flags.astype(bool)})
        marked[name] = int(flags.sum())
    if not placed:
        return None
    pauses = marked.get("partition_pauses", 0) + marked.get("stop_the_world", 0)
    return (f"{pauses} pause(s) and {marked.get('duplicate_ownership', 0)} duplicate ownership span(s) are shorter "
            f"than the uncertainty of the clocks they were measured across (column {MARK} of their tables)")
