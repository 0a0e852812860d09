"""Control-plane analysis: ownership intervals, rebalance episodes, revocations, member pauses.

Pure Python over the (small) list of callback events; the record-level part lives in ``records``.
Definitions follow GUIDE §3 and docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .intervals import OwnerSpan, SharedSpan, shared_ownership

TP = tuple[str, int]
PARTITION_EVENTS = ("assigned", "revoked", "lost")


@dataclass(frozen=True)
class MemberEvent:
    """One control event of one member, in the member's own file order (``seq``)."""

    ts: int
    member: str
    name: str
    partitions: tuple[TP, ...] = ()
    seq: int = 0


@dataclass(frozen=True)
class MemberLife:
    """When a member's history ends and why: ``killed`` (harness kill), ``stopped``, ``vanished``
    (exited without a ``stopped`` event: its last event) or ``run_end`` (still alive at the end)."""

    member: str
    end_ms: int
    reason: str


@dataclass(frozen=True)
class OwnershipInterval:
    topic: str
    partition: int
    member: str
    start_ms: int
    end_ms: int
    end_reason: str

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass
class Episode:
    episode_id: int
    start_ms: int
    end_ms: int
    trigger: str
    teardown: bool = False
    during_bounce: bool = False
    members_assigned: set[str] = field(default_factory=set)


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


def member_lives(
    events_by_member: dict[str, list[MemberEvent]],
    last_ts_by_member: dict[str, int],
    kill_ms: dict[str, int],
    exited: set[str],
    run_end_ms: int | None,
) -> dict[str, MemberLife]:
    """How each member's history ends (see :class:`MemberLife`)."""
    lives: dict[str, MemberLife] = {}
    for member, last_ts in last_ts_by_member.items():
        stops = [e.ts for e in events_by_member.get(member, []) if e.name == "stopped"]
        if member in kill_ms:
            lives[member] = MemberLife(member, kill_ms[member], "killed")
        elif stops:
            lives[member] = MemberLife(member, stops[-1], "stopped")
        elif member in exited or run_end_ms is None:
            lives[member] = MemberLife(member, last_ts, "vanished")
        else:
            lives[member] = MemberLife(member, max(run_end_ms, last_ts), "run_end")
    return lives


def ownership_intervals(events: Sequence[MemberEvent], life: MemberLife) -> list[OwnershipInterval]:
    """One member's ownership intervals from its callbacks, closed at its death or the run's end."""
    held: dict[TP, int] = {}
    out: list[OwnershipInterval] = []

    def close(tp: TP, ts: int, reason: str) -> None:
        start = held.pop(tp)
        out.append(OwnershipInterval(tp[0], tp[1], life.member, start, max(ts, start), reason))

    for ev in sorted(events, key=lambda e: (e.ts, e.seq)):
        if ev.ts > life.end_ms and life.reason == "killed":
            break  # a killed process writes nothing after the kill; ignore clock noise
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


@dataclass(frozen=True)
class _Activity:
    ts: int
    seq: int
    kind: str  # started|stopped|death|lost|revoked|assigned
    member: str


def rebalance_episodes(
    events: Iterable[MemberEvent],
    lives: dict[str, MemberLife],
    *,
    gap_ms: int,
    teardown_after_ms: int | None,
    bounce_windows: Sequence[tuple[int, int]] = (),
) -> list[Episode]:
    """Group callback activity into rebalance episodes (definition in docs/metrics.md).

    Every trigger (join, leave, death, loss, revoke) leaves an obligation that the next assignment
    of any member settles; an episode closes at its last assignment once all obligations are settled
    and nothing happens for ``gap_ms`` (so a cooperative second round joins the first).
    """
    acts = [
        _Activity(e.ts, e.seq, e.name, e.member)
        for e in events
        if e.name in ("started", "stopped", "revoked", "lost", "assigned")
    ]
    acts += [_Activity(life.end_ms, 1 << 62, "death", m) for m, life in lives.items() if life.reason in ("killed", "vanished")]
    acts.sort(key=lambda a: (a.ts, a.seq))
    alive: set[str] = set()
    episodes: list[Episode] = []
    cur: Episode | None = None
    obligation_ts: int | None = None
    last_assign: int | None = None
    last_activity = 0

    def settled() -> bool:
        return obligation_ts is None or (last_assign is not None and last_assign >= obligation_ts)

    def close() -> None:
        assert cur is not None
        cur.end_ms = last_assign if last_assign is not None else last_activity
        episodes.append(cur)

    for a in acts:
        if cur is not None and settled() and a.ts - last_activity > gap_ms:
            close()
            cur = None
        if cur is None:
            cur = Episode(len(episodes), a.ts, a.ts, f"{a.kind}:{a.member}")
            obligation_ts, last_assign = None, None
        if a.kind == "assigned":
            last_assign = a.ts
            cur.members_assigned.add(a.member)
            alive.add(a.member)
        elif a.kind in ("stopped", "death"):
            alive.discard(a.member)
            if alive:
                obligation_ts = a.ts
        else:
            if a.kind == "started":
                alive.add(a.member)
            obligation_ts = a.ts
        last_activity = a.ts
    if cur is not None:
        close()
    for ep in episodes:
        # Without a drain/run end, an episode in which nobody is assigned anything is the group winding down.
        ep.teardown = (
            ep.start_ms >= teardown_after_ms if teardown_after_ms is not None else not ep.members_assigned
        )
        ep.during_bounce = any(ep.start_ms <= b_end and b_start <= ep.end_ms for b_start, b_end in bounce_windows)
    return episodes


def episode_at(episodes: Sequence[Episode], ts: int) -> Episode | None:
    for ep in episodes:
        if ep.start_ms <= ts <= ep.end_ms:
            return ep
    return None


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
            stops_after = any(e.name == "stopped" for e in later) or (life is not None and life.reason in ("killed", "vanished"))
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


@dataclass(frozen=True)
class PausePoint:
    """An ownership interval of a partition ending inside a rebalance episode: processing of the
    partition stops here until somebody processes it again."""

    episode_id: int
    topic: str
    partition: int
    member: str
    end_reason: str
    end_ms: int


def pause_points(intervals: Iterable[OwnershipInterval], episodes: Sequence[Episode]) -> list[PausePoint]:
    """The earliest interval end of each partition in each non-teardown episode."""
    first: dict[tuple[int, TP], PausePoint] = {}
    for iv in intervals:
        if iv.end_reason == "run_end":
            continue
        ep = episode_at(episodes, iv.end_ms)
        if ep is None or ep.teardown:
            continue
        key = (ep.episode_id, (iv.topic, iv.partition))
        if key not in first or iv.end_ms < first[key].end_ms:
            first[key] = PausePoint(ep.episode_id, iv.topic, iv.partition, iv.member, iv.end_reason, iv.end_ms)
    return sorted(first.values(), key=lambda p: (p.episode_id, p.topic, p.partition))


def pause_span(end_ms: int, last_processed_ms: int | None, resumed_ms: int | None, resumed_produce_min_ms: int | None) -> tuple[int, int | None]:
    """``(waiting_since, pause)`` of one pause point.

    Records wait from the later of the last processing before the interval ended and the produce time
    of the first record processed after it; with neither known, from the interval's end.
    """
    candidates = [t for t in (last_processed_ms, resumed_produce_min_ms) if t is not None]
    waiting_since = max(candidates) if candidates else end_ms
    if resumed_ms is None:
        return waiting_since, None
    return waiting_since, max(0, resumed_ms - waiting_since)
