"""The member ids a scenario's fleet has at each step, replayed from the file alone.

``Fleet`` starts members in slots after the highest one in use, names a slot's first process
``m<slot>`` and each replacement ``m<slot>.<n>`` (``member_name``), bounces only running members,
and removes the highest running slots on a scale-in. Replaying the fleet and the steps by those
rules tells, before anything starts, which member a step may name; a member that dies on its own
mid-run is beyond a check of the file and still fails the run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..members.config import member_name

STALLABLE_CLIENTS = ("confluent-kafka", "kafka-python")  # runners with a poll loop of their own
MEMBER_STEPS = ("kill", "stop", "pause", "resume", "stall", "unstall")


def named_member(step: Any) -> str | None:
    """The member a step acts on: always for member steps, optionally for network steps."""
    return step.member if step.kind in MEMBER_STEPS or step.kind in ("partition", "heal") else None


@dataclass
class _Slot:
    incarnation: int
    spec: str
    state: Literal["running", "paused", "gone"] = "running"  # gone: stopped or killed, still addressable


class Roster:
    """The fleet's table of members (slot -> current process) as the steps change it."""

    def __init__(self) -> None:
        self.slots: dict[int, _Slot] = {}
        self._incarnations: dict[int, int] = {}  # outlives a scale-in, as in Fleet: a reused slot counts on

    def ids(self) -> list[str]:
        return [member_name(slot, s.incarnation) for slot, s in sorted(self.slots.items())]

    def running(self) -> list[int]:
        return [slot for slot, s in sorted(self.slots.items()) if s.state == "running"]

    def slot_of(self, member: str) -> _Slot | None:
        return next((s for slot, s in self.slots.items() if member_name(slot, s.incarnation) == member), None)

    def _start_in(self, slot: int, spec: str) -> None:
        self._incarnations[slot] = self._incarnations.get(slot, -1) + 1
        self.slots[slot] = _Slot(self._incarnations[slot], spec)

    def start(self, count: int, spec: str) -> None:
        first = max(self.slots, default=-1) + 1
        for slot in range(first, first + count):
            self._start_in(slot, spec)

    def apply(self, step: Any) -> None:
        """Change the table as ``Fleet`` does for this step; steps that start or stop no member leave it."""
        if step.kind in MEMBER_STEPS:
            slot = self.slot_of(step.member)
            if slot is None or slot.state == "gone":
                return
            if step.kind in ("kill", "stop"):
                slot.state = "gone"
            elif step.kind in ("stall", "unstall"):  # a stalled member runs on; only its polling stops
                pass
            else:  # a pause with seconds resumes within its step
                slot.state = "paused" if step.kind == "pause" and step.seconds is None else "running"
        elif step.kind == "rolling_bounce":
            for slot in self.running()[:step.count]:
                self._start_in(slot, step.to or self.slots[slot].spec)
        elif step.kind == "scale_out":
            self.start(step.count, step.spec)
        elif step.kind == "scale_in":
            for slot in self.running()[-step.count:]:
                del self.slots[slot]


def roster_refusals(fleet: Sequence[Any], steps: Sequence[Any], clients: Mapping[str, str]) -> list[str]:
    """``path: message`` for every step that names a member the fleet does not have then, stalls a member
    whose client cannot be stalled, or scales in more members than are running. ``clients``: spec -> client."""
    roster = Roster()
    for entry in fleet:
        roster.start(entry.count, entry.spec)
    problems = []
    for i, step in enumerate(steps):
        member = named_member(step)
        slot = roster.slot_of(member) if member is not None else None
        if member is not None and slot is None:
            problems.append(f"steps.{i}.{step.kind}.member: {member!r} is not a member at this step; "
                            f"members then: {', '.join(roster.ids()) or 'none'}")
        elif step.kind == "stall" and slot is not None and clients.get(slot.spec) not in STALLABLE_CLIENTS:
            problems.append(f"steps.{i}.stall.member: {step.member!r} runs spec {slot.spec!r} "
                            f"({clients.get(slot.spec)}); only {' and '.join(STALLABLE_CLIENTS)} members can be "
                            "stalled (use pause for a Java member)")
        if step.kind == "scale_in" and step.count > len(roster.running()):
            problems.append(f"steps.{i}.scale_in.count: {step.count} is more than the "
                            f"{len(roster.running())} running member(s) then")
        roster.apply(step)
    return problems
