"""Control-plane analysis: ownership intervals, duplicate ownership, revocations.

Pure Python over the (small) list of callback events; the record-level part lives in ``records/``.
Definitions follow docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .episodes import Episode, episode_at
from ..intervals import OwnershipInterval, OwnerSpan, SharedSpan, shared_ownership
from ..view.lives import MemberEvent, MemberLife

TP = tuple[str, int]
PARTITION_EVENTS = ("assigned", "revoked", "lost")


@dataclass(frozen=True)
class Revocation:
    ts_ms: int
    member: str
    topic: str
    partition: int
    kind: str  # revoked | lost
    category: str  # live | shutdown | lost
    needless: bool
    episode_id: int | None
    member_pause_ms: int | None


def ownership_intervals(events: Sequence[MemberEvent], life: MemberLife) -> list[OwnershipInterval]:
    """One member's ownership intervals from its callbacks, closed at its death or the run's end."""
    held: dict[TP, int] = {}
    out: list[OwnershipInterval] = []

    def close(tp: TP, ts: int, reason: str) -> None:
        start = held.pop(tp)
        out.append(OwnershipInterval(tp[0], tp[1], life.member, start, max(ts, start), reason))

    for ev in sorted(events, key=lambda e: (e.ts, e.seq)):
        if ev.ts > life.end_ms and life.died:
            break  # a dead process writes nothing after its death; ignore clock noise
        if ev.name == "assigned":
            for tp in ev.partitions:
                held.setdefault(tp, ev.ts)
        elif ev.name in ("revoked", "lost"):
            for tp in ev.partitions:
                if tp in held:
                    close(tp, ev.ts, ev.name)
        elif ev.name == "stopped":
            for tp in list(held):
                close(tp, ev.ts, "stopped")
    for tp in list(held):
        close(tp, life.end_ms, life.reason)
    return out


def duplicate_ownership(intervals: Iterable[OwnershipInterval]) -> dict[TP, list[SharedSpan]]:
    by_tp: dict[TP, list[OwnerSpan]] = defaultdict(list)
    for iv in intervals:
        by_tp[(iv.topic, iv.partition)].append(OwnerSpan(iv.member, iv.start_ms, iv.end_ms))
    return {tp: spans for tp, owners in by_tp.items() if (spans := shared_ownership(owners))}


def revocations(
    events_by_member: dict[str, list[MemberEvent]],
    lives: dict[str, MemberLife],
    intervals: Sequence[OwnershipInterval],
    episodes: Sequence[Episode],
) -> list[Revocation]:
    """Every partition taken by a revoke or lost callback, categorised (docs/metrics.md)."""
    starts_by_tp: dict[TP, list[tuple[int, str]]] = defaultdict(list)
    for iv in intervals:
        starts_by_tp[(iv.topic, iv.partition)].append((iv.start_ms, iv.member))
    def keeps_partitions(member: str, ev: MemberEvent) -> bool:
        taken = set(ev.partitions)
        return any(iv.member == member and iv.start_ms <= ev.ts < iv.end_ms and (iv.topic, iv.partition) not in taken
                   for iv in intervals)

    out: list[Revocation] = []
    for member, evs in events_by_member.items():
        ordered = sorted(evs, key=lambda e: (e.ts, e.seq))
        life = lives.get(member)
        for i, ev in enumerate(ordered):
            if ev.name not in ("revoked", "lost"):
                continue
            later = ordered[i + 1 :]
            next_assign = next((e for e in later if e.name == "assigned"), None)
            stops_after = any(e.name == "stopped" for e in later) or (life is not None and life.died)
            ep = episode_at(episodes, ev.ts)
            same_episode = next_assign is not None and ep is not None and ep.start_ms <= next_assign.ts <= ep.end_ms
            if ev.name == "lost":
                category = "lost"
            elif next_assign is None and stops_after and not keeps_partitions(member, ev):
                # A member that keeps other partitions stayed in the group: kafka-python's cooperative
                # mode revokes some partitions and skips the empty on_partitions_assigned that follows.
                category = "shutdown"
            else:
                category = "live"
            pause = next_assign.ts - ev.ts if (category == "live" and same_episode and next_assign) else None
            for tp in ev.partitions:
                needless = bool(
                    ev.name == "revoked"
                    and same_episode
                    and next_assign is not None
                    and tp in next_assign.partitions
                    and not any(ev.ts <= s <= next_assign.ts and m != member for s, m in starts_by_tp[tp])
                )
                out.append(
                    Revocation(ev.ts, member, tp[0], tp[1], ev.name, category, needless, ep.episode_id if ep else None, pause)
                )
    out.sort(key=lambda r: (r.ts_ms, r.member, r.topic, r.partition))
    return out
