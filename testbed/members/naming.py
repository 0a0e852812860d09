"""Member names: which slot a new member takes, and what its process is called.

One source for the fleet, which starts members by these rules, and for the scenario's checks, which replay
them from the file alone to know which member a step may name. New members take the slots after the highest
one in use; a slot's first process is ``m<slot>`` and each replacement ``m<slot>.<n>``; members started
together share processes of ``per_process`` members, in slot order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def member_name(slot: int, incarnation: int) -> str:
    """``m<slot>`` for a slot's first process, ``m<slot>.<n>`` for its n-th replacement."""
    return f"m{slot}" if incarnation == 0 else f"m{slot}.{incarnation}"


class MemberNames:
    """The name of each slot's next member. A slot's count outlives a scale-in that freed the slot, so a
    slot used again counts on (``m2``, then ``m2.1``) and a history never holds one name twice."""

    def __init__(self) -> None:
        self._last: dict[int, int] = {}  # slot -> the incarnation started last

    def upcoming(self, slot: int) -> str:
        """The name the slot's next member will get, without starting it."""
        return member_name(slot, self._last.get(slot, -1) + 1)

    def take(self, slot: int) -> str:
        """The name of the member starting in ``slot`` now."""
        name = self.upcoming(slot)
        self._last[slot] = self._last.get(slot, -1) + 1
        return name


@dataclass(frozen=True)
class Placement:
    slot: int
    opens_process: bool  # the first member of a process that ``per_process`` members share


def placements(slots_in_use: Iterable[int], count: int, per_process: int = 1) -> list[Placement]:
    """Where ``count`` members started together go: the slots after the highest in use, and which of them
    opens a new shared process (none does when each member has a process of its own)."""
    first = max(slots_in_use, default=-1) + 1
    return [Placement(slot, per_process > 1 and i % per_process == 0)
            for i, slot in enumerate(range(first, first + count))]
