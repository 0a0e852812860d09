"""Which members of a run are share-group members (KIP-932), so that the consumer-group analysis never reads
them: a share member has no assignment, so its ``started`` would open a rebalance episode that never closes,
its death would look like a group member's, and the records of its topics would all look lost.

A share member: its ``started`` says ``group_protocol: share``, or it wrote a share event.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..view.run_view import RunView

SHARE_EVENTS = ("share_acquired", "share_acknowledged")


def share_members(view: RunView) -> frozenset[str]:
    """The members that wrote share events (the run's member summary) or started as share members."""
    wrote = {m for m, summary in view.member_summary.items() if summary.names & set(SHARE_EVENTS)}
    return frozenset(wrote | {m for m, row in view.started_rows.items() if row.get("group_protocol") == "share"})


def groups_of(started_rows: dict[str, dict[str, Any]], members: Iterable[str]) -> dict[str, str]:
    """Share member -> its group id (a member whose ``started`` names none is left out)."""
    rows = {m: started_rows[m] for m in members if m in started_rows}
    return {m: row["group_id"] for m, row in rows.items() if row.get("group_id")}


def topics_by_group(started_rows: dict[str, dict[str, Any]], group_of: dict[str, str]) -> dict[str, frozenset[str]]:
    """Share group -> the topics its members read."""
    topics: dict[str, set[str]] = {}
    for member, group in group_of.items():
        topics.setdefault(group, set()).update(started_rows[member].get("topics") or [])
    return {g: frozenset(t) for g, t in topics.items()}
