"""What a rebalance episode moved: partitions that changed owner, against the fewest a balanced assignment
of the same partitions over the group's members after it needed, and the balance it left.

A sticky assignor should move only what must move (the partitions of members that left, and enough to
balance newcomers); users report cooperative-sticky moving far more. Both sides are counted from the
ownership intervals, so every client and protocol is measured the same way:

- before: the owner of each partition just before the episode's first event; after: its owner at the
  episode's end. A partition without an owner before (new, or never assigned) is an assignment, not a move.
- moved: partitions with an owner before whose owner after differs (none after counts too).
- the group's members after it: members alive after the episode that had joined by its end (their first
  ``assigned`` event, an empty one too) and held partitions before it or after it. A newcomer that the
  episode left empty-handed is owed its share in the episode that serves it: under the consumer protocol a
  newcomer first gets an empty assignment and its partitions a few seconds later, once their owners have
  revoked them (two episodes); owing its share in both would count the same moves twice.
- moved_min: the fewest such changes any assignment needed in which every member of the group after the
  episode holds ``floor(P/n)`` or ``ceil(P/n)`` of the P partitions: P minus the most partitions the members could
  keep, giving the larger quotas to the members that held the most (this greedy choice is optimal).
  Balance is counted over all topics together, as sticky assignors balance; a per-topic assignor (range)
  may need more moves for its own balance.
- spread: max - min partitions per member of the group after the episode (unknown when it has none).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..intervals import OwnershipInterval
from .episodes import Episode
from ..view.lives import TP, MemberLife


@dataclass(frozen=True)
class Movement:
    moved: int
    moved_min: int
    spread: int | None  # None: no member alive after the episode


def owners_at(intervals: Iterable[OwnershipInterval], ts_ms: int) -> dict[TP, str]:
    """Each partition's owner at ``ts_ms``; where two members hold one (a duplicate ownership), the
    incumbent: the one whose interval began first."""
    out: dict[TP, tuple[int, str]] = {}
    for iv in intervals:
        if iv.start_ms <= ts_ms < iv.end_ms:
            tp = (iv.topic, iv.partition)
            if tp not in out or iv.start_ms < out[tp][0]:
                out[tp] = (iv.start_ms, iv.member)
    return {tp: member for tp, (_, member) in out.items()}


def fewest_moves(before: dict[TP, str], partitions: Collection[TP], members_after: Collection[str]) -> int:
    """The fewest partitions with an owner before that must change owner to reach a balanced assignment of
    ``partitions`` over ``members_after``."""
    owned = [tp for tp in partitions if tp in before]
    if not members_after:
        return len(owned)  # nobody to keep anything
    base, extra = divmod(len(partitions), len(members_after))
    held = Counter(before[tp] for tp in owned)
    counts = sorted((held.get(m, 0) for m in members_after), reverse=True)
    kept = sum(min(c, base + (1 if i < extra else 0)) for i, c in enumerate(counts))
    return len(owned) - kept


def movement(intervals: list[OwnershipInterval], start_ms: int, end_ms: int, members_after: Collection[str],
             partitions: Collection[TP]) -> Movement:
    before = owners_at(intervals, start_ms - 1)
    after = owners_at(intervals, end_ms)
    moved = sum(1 for tp, owner in before.items() if after.get(tp) != owner)
    served = set(members_after) & (set(before.values()) | set(after.values()))
    held = Counter(after.get(tp) for tp in partitions)
    per_member = [held.get(m, 0) for m in served]
    return Movement(moved=moved, moved_min=fewest_moves(before, partitions, served),
                    spread=max(per_member) - min(per_member) if per_member else None)


def episode_movements(episodes: Sequence[Episode], intervals: list[OwnershipInterval], lives: Mapping[str, MemberLife],
                      joined: Mapping[str, int]) -> dict[int, Movement]:
    """What each settled episode moved; not the teardown's (members leave for good there). ``joined``: each
    member's first ``assigned`` event (members without one never joined)."""
    out = {}
    for ep in episodes:
        if ep.teardown or not ep.settled:
            continue
        alive = {m for m, ts in joined.items() if ts <= ep.end_ms and m in lives and lives[m].end_ms > ep.end_ms}
        partitions = {(iv.topic, iv.partition) for iv in intervals if iv.start_ms <= ep.end_ms}
        out[ep.episode_id] = movement(intervals, ep.start_ms, ep.end_ms, alive, partitions)
    return out
