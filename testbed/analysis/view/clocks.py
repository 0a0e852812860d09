"""Members that ran on other machines (a Ray cluster, testbed.placement) wrote their timestamps by those machines'
clocks; the harness measured each node's offset at the start and the end of the run (``node_clock`` actions). The
analysis puts every member's timestamps on the harness's clock (the one the acks and the harness's own actions were
stamped by) and says how far that can be trusted: a pause or an overlap shorter than the uncertainty may be the
clocks' doing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

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


def member_offsets_ms(actions: Sequence[HarnessAction]) -> dict[str, int]:
    """Whole milliseconds to take off each placed member's timestamps (only those with an offset of 1 ms or more:
    timestamps are whole milliseconds)."""
    clocks = node_clocks(actions)
    out = {}
    for action in actions:
        node = (action.get("detail") or {}).get("node")
        if action["kind"] == Action.MEMBER_START and action.get("target") and node in clocks:
            if shift := round(clocks[node].offset_ms):
                out[action["target"]] = shift
    return out


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
