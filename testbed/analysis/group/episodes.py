"""Rebalance episodes as the clients saw them, from the members' callbacks.

An episode opens at its first trigger (a member joins, leaves, is fenced or dies, or a revoke arrives
outside any episode) and stays open while the group owes something: a partition taken from a member
(revoked, lost, or held by a member that left or died) that no live member holds yet, or a member that
joined and has not had its first assignment. It closes at its last assignment once nothing is owed and
nothing happens for ``gap_ms``. Because a cooperative first round revokes partitions that only the
second round assigns, both rounds stay in one episode however long the pause between them.

Episodes that begin before the harness first saw the group stable (the end of the run's first
``wait_stable`` step; without one, the run's first episode if a join opened it) are the group forming:
members started one after another hand partitions to each other until all have joined. Its pauses are start-up, not the cost of a
change to a running group. Every time the harness saw the group stable (the end of each ``wait_stable`` step) ends
the episode open then: the first change after it (anything but a late assignment) with nothing owed opens an
episode of its own, however soon it follows. Otherwise a step right after a ``wait_stable``, with no ``wait``
between, would fall into the episode before it: a rolling bounce into the group's forming (its revocations, moves
and pauses left out of every figure), a kill into the scale-out before it (one episode, the death's pauses the
scale-out's).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..view.lives import MemberEvent, MemberLife

TP = tuple[str, int]
DEFAULT_STALE_MS = 120_000  # longer than any session timeout a scenario uses (librdkafka's default: 45 s)
_ORDER_AFTER_EVENTS = 1 << 62  # a death at ms t sorts after the member's own events of ms t


@dataclass
class Episode:
    episode_id: int
    start_ms: int
    end_ms: int
    trigger: str  # "<event>:<member>"
    teardown: bool = False
    during_bounce: bool = False
    settled: bool = True  # False: closed after ``stale_ms`` of silence with something still owed
    formation: bool = False  # the group forming (see the module docstring)
    members_assigned: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class _Activity:
    ts: int
    seq: int
    kind: str  # started|stopped|death|lost|revoked|assigned
    member: str
    partitions: tuple[TP, ...] = ()


class _GroupDebt:
    """What the group owes while a rebalance is under way: orphaned partitions and members awaiting
    their first assignment."""

    def __init__(self) -> None:
        self.alive: set[str] = set()
        self.holdings: dict[str, set[TP]] = {}
        self.orphans: set[TP] = set()
        self.awaiting: set[str] = set()

    @property
    def owed(self) -> bool:
        return bool(self.orphans or self.awaiting)

    def forget_owed(self) -> None:
        self.orphans.clear()
        self.awaiting.clear()

    def _held_by_other(self, tp: TP, member: str) -> bool:
        return any(tp in held for m, held in self.holdings.items() if m != member and m in self.alive)

    def _orphan(self, member: str, partitions: Iterable[TP]) -> None:
        for tp in partitions:
            if not self._held_by_other(tp, member):
                self.orphans.add(tp)

    def apply(self, a: _Activity) -> None:
        if a.kind == "started":
            self.alive.add(a.member)
            self.awaiting.add(a.member)
        elif a.kind == "assigned":
            self.alive.add(a.member)
            self.awaiting.discard(a.member)
            self.holdings.setdefault(a.member, set()).update(a.partitions)
            self.orphans.difference_update(a.partitions)
        elif a.kind in ("revoked", "lost"):
            held = self.holdings.setdefault(a.member, set())
            taken = [tp for tp in a.partitions if tp in held]
            held.difference_update(taken)
            self._orphan(a.member, taken)
        elif a.kind in ("stopped", "death"):
            self.alive.discard(a.member)
            self.awaiting.discard(a.member)
            self._orphan(a.member, self.holdings.pop(a.member, set()))
            if not self.alive:
                self.orphans.clear()  # nobody is left to take them: the group is gone, not rebalancing


def rebalance_episodes(
    events: Iterable[MemberEvent],
    lives: dict[str, MemberLife],
    *,
    gap_ms: int,
    teardown_after_ms: int | None,
    bounce_windows: Sequence[tuple[int, int]] = (),
    stale_ms: int = DEFAULT_STALE_MS,
    stable_at_ms: Sequence[int] = (),
) -> list[Episode]:
    """Group callback activity into rebalance episodes (see the module docstring). ``stable_at_ms``: when the
    harness saw the group stable (episodes before the first are the group forming)."""
    stable = sorted(stable_at_ms)
    formed_at_ms = stable[0] if stable else None
    acts = [
        _Activity(e.ts, e.seq, e.name, e.member, tuple(e.partitions))
        for e in events
        if e.name in ("started", "stopped", "revoked", "lost", "assigned")
    ]
    acts += [_Activity(life.end_ms, _ORDER_AFTER_EVENTS, "death", m) for m, life in lives.items() if life.died]
    acts.sort(key=lambda a: (a.ts, a.seq))
    debt = _GroupDebt()
    episodes: list[Episode] = []
    cur: Episode | None = None
    last_assign: int | None = None
    last_activity = 0

    def close(settled: bool) -> None:
        assert cur is not None
        cur.end_ms = last_assign if last_assign is not None else last_activity
        cur.settled = settled
        episodes.append(cur)

    for a in acts:
        if cur is not None:
            quiet = a.ts - last_activity
            # A late callback of the episode (an assignment) stays in it; any other change from then on is new (a
            # kill as the next step is recorded in the very millisecond the harness saw the group stable).
            seen_stable = a.kind != "assigned" and _any_within(stable, cur.start_ms, a.ts)
            if not debt.owed and (quiet > gap_ms or seen_stable):
                close(True)
                cur = None
            elif quiet > stale_ms:
                close(False)
                cur = None
                debt.forget_owed()  # what was owed then is no longer evidence of this rebalance
        if cur is None:
            cur = Episode(len(episodes), a.ts, a.ts, f"{a.kind}:{a.member}")
            last_assign = None
        debt.apply(a)
        if a.kind == "assigned":
            last_assign = a.ts
            cur.members_assigned.add(a.member)
        last_activity = a.ts
    if cur is not None:
        close(not debt.owed)
    for ep in episodes:
        ep.formation = (ep.start_ms < formed_at_ms if formed_at_ms is not None
                        else ep.episode_id == 0 and ep.trigger.startswith("started:"))
    for ep in episodes:
        # Without a drain/run end, an episode in which nobody is assigned anything is the group winding down.
        ep.teardown = (
            ep.start_ms >= teardown_after_ms if teardown_after_ms is not None else not ep.members_assigned
        )
        ep.during_bounce = any(ep.start_ms <= b_end and b_start <= ep.end_ms for b_start, b_end in bounce_windows)
    return episodes


def _any_within(points: list[int], after: int, until: int) -> bool:
    """Whether a sorted ``points`` holds one in ``(after, until]``."""
    i = bisect_right(points, after)
    return i < len(points) and points[i] <= until


def episode_at(episodes: Sequence[Episode], ts: int) -> Episode | None:
    for ep in episodes:
        if ep.start_ms <= ts <= ep.end_ms:
            return ep
    return None


def episodes_overlapping(episodes: Sequence[Episode], start: int, end: int) -> list[Episode]:
    return [ep for ep in episodes if ep.start_ms <= end and start <= ep.end_ms]
