"""The member ids a scenario's fleet has at each step, replayed from the file alone.

``Fleet`` names and places members by the rules of ``testbed.members.naming`` (slots after the highest one
in use, ``m<slot>`` then ``m<slot>.<n>`` for each replacement), bounces only running members, and removes
the highest running slots on a scale-in. Replaying the fleet and the steps by those rules tells, before
anything starts, which member a step may name; a member that dies on its own mid-run is beyond a check of
the file and still fails the run.

Members may share a process (``members_per_process``): a fleet entry's slots fill processes in order,
and a bounced member's replacement stays in its process when that one still runs the same client and
version. Stop and stall act on one member; kill, pause and a network cut on its whole process, so a step
that names a member sharing its process must say ``whole_process: true``, and a hard bounce or scale-in
(SIGKILL) over such members is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..clients import names
from ..members.naming import MemberNames, placements
from .base import MemberCount
from .step_model import (Heal, Kill, MemberStep, Partition, Pause, Resume, RollingBounce, ScaleIn, ScaleOut, Stall,
                         StepModel, StopMember)

STALLABLE_CLIENTS = names(lambda f: f.stall)  # runners with a poll loop of their own
PROCESS_SIGNALS = (Kill, Pause, Partition)  # signals and cuts: they reach every member of the process


def named_member(step: StepModel) -> str | None:
    """The member a step acts on: always for member steps, optionally for network steps."""
    return step.member if isinstance(step, (MemberStep, Partition, Heal)) else None


@dataclass
class _Slot:
    name: str
    spec: str
    host: int | None = None  # the process it shares with others (numbered in start order); None: its own
    state: Literal["running", "paused", "gone"] = "running"  # gone: stopped or killed, still addressable
    ended: str = ""  # gone: how and by which step, e.g. "stopped by steps.2"


class Roster:
    """The fleet's table of members (slot -> current process) as the steps change it."""

    def __init__(self, specs: Mapping[str, Any] | None = None) -> None:
        self.slots: dict[int, _Slot] = {}
        self._names = MemberNames()
        self._specs = specs or {}
        self._hosts = 0
        self._dead_hosts: set[int] = set()

    def ids(self) -> list[str]:
        return [s.name for _, s in sorted(self.slots.items())]

    def alive(self) -> list[str]:
        """The members neither stopped nor killed: running or paused."""
        return [s.name for _, s in sorted(self.slots.items()) if s.state != "gone"]

    def running(self) -> list[int]:
        return [slot for slot, s in sorted(self.slots.items()) if s.state == "running"]

    def slot_of(self, member: str) -> _Slot | None:
        return next((s for s in self.slots.values() if s.name == member), None)

    def _start_in(self, slot: int, spec: str, host: int | None = None) -> None:
        self.slots[slot] = _Slot(self._names.take(slot), spec, host)

    def start(self, count: int, spec: str, per_process: int = 1) -> None:
        host = None
        for place in placements(self.slots, count, per_process):
            if place.opens_process:
                host, self._hosts = self._hosts, self._hosts + 1
            self._start_in(place.slot, spec, host)

    def process_mates(self, slot: _Slot) -> list[str]:
        """The other members still in ``slot``'s process (none when it has a process of its own)."""
        if slot.host is None:
            return []
        return [s.name for _, s in sorted(self.slots.items())
                if s.host == slot.host and s is not slot and s.state != "gone"]

    def _whole_process(self, slot: _Slot) -> list[_Slot]:
        return [s for s in self.slots.values() if s.state != "gone" and s.host == slot.host] \
            if slot.host is not None else [slot]

    def _same_runtime(self, a: str, b: str) -> bool:
        sa, sb = self._specs.get(a), self._specs.get(b)
        return sa is not None and sb is not None and (sa.client, sa.client_version) == (sb.client, sb.client_version)

    def apply(self, step: StepModel, where: str = "an earlier step") -> None:
        """Change the table as ``Fleet`` does for this step (``where``: the step's path, e.g. ``steps.2``, for
        what a later refusal says); steps that start or stop no member leave it."""
        if isinstance(step, MemberStep):
            slot = self.slot_of(step.member)
            if slot is None or slot.state == "gone":
                return
            if isinstance(step, StopMember):
                slot.state, slot.ended = "gone", f"stopped by {where}"
            elif isinstance(step, Kill):
                for mate in self._whole_process(slot):
                    mate.state = "gone"
                    mate.ended = f"killed by {where}" if mate is slot else \
                        f"killed by {where}, with the process of {step.member}"
                if slot.host is not None:
                    self._dead_hosts.add(slot.host)
            elif isinstance(step, (Pause, Resume)):  # a pause with seconds resumes within its step
                for mate in self._whole_process(slot):
                    mate.state = "paused" if isinstance(step, Pause) and step.seconds is None else "running"
            # stall, unstall: a stalled member runs on, only its polling stops
        elif isinstance(step, RollingBounce):
            for n in self.running()[:step.count]:
                old = self.slots[n]
                spec = step.to or old.spec
                keep = old.host is not None and old.host not in self._dead_hosts and self._same_runtime(old.spec, spec)
                self._start_in(n, spec, old.host if keep else None)
        elif isinstance(step, ScaleOut):
            self.start(step.count, step.spec, step.members_per_process)
        elif isinstance(step, ScaleIn):
            for slot_number in self.running()[-step.count:]:
                del self.slots[slot_number]


def roster_refusals(fleet: Sequence[MemberCount], steps: Sequence[StepModel], specs: Mapping[str, Any]) -> list[str]:
    """``path: message`` for every step that names a member the fleet does not have then or that an earlier
    step stopped or killed, stalls a member whose client cannot be stalled, scales in more members than are
    running, or signals a process shared by other members without saying so. ``specs``: name -> MemberSpec."""
    clients = {name: spec.client for name, spec in specs.items()}
    roster = Roster(specs)
    problems = []
    for entry in fleet:
        roster.start(entry.count, entry.spec, entry.members_per_process)
    for i, step in enumerate(steps):
        member = named_member(step)
        slot = roster.slot_of(member) if member is not None else None
        if member is not None and slot is None:
            problems.append(f"steps.{i}.{step.kind}.member: {member!r} is not a member at this step; "
                            f"members then: {_some(roster.ids(), 20) or 'none'}")
        elif slot is not None and slot.state == "gone" and not isinstance(step, Heal):
            # a heal ends a cut that may outlive its member's process
            problems.append(f"steps.{i}.{step.kind}.member: {member!r} was already {slot.ended}; members alive "
                            f"then: {_some(roster.alive(), 20) or 'none'}")
            slot = None
        elif isinstance(step, Stall) and slot is not None and clients.get(slot.spec) not in STALLABLE_CLIENTS:
            problems.append(f"steps.{i}.stall.member: {member!r} runs spec {slot.spec!r} "
                            f"({clients.get(slot.spec)}); only {' and '.join(STALLABLE_CLIENTS)} members can be "
                            "stalled (use pause for a Java member)")
        if (isinstance(step, (Kill, Pause)) and step.when is not None and slot is not None
                and not getattr(specs.get(slot.spec), "is_share", False)):
            problems.append(f"steps.{i}.{step.kind}.when: {member!r} runs spec {slot.spec!r}, not a share member; "
                            f"'{step.when}' is read from a share member's history")
        if slot is not None and isinstance(step, PROCESS_SIGNALS) and not step.whole_process and (
                mates := roster.process_mates(slot)):
            problems.append(f"steps.{i}.{step.kind}.whole_process: {member!r} shares its process with "
                            f"{len(mates)} other member(s) ({_some(mates)}); a {step.kind} reaches all of them: "
                            "say whole_process: true, or act on one member with stop or stall")
        if isinstance(step, ScaleIn) and step.count > len(roster.running()):
            problems.append(f"steps.{i}.scale_in.count: {step.count} is more than the "
                            f"{len(roster.running())} running member(s) then")
        if isinstance(step, (RollingBounce, ScaleIn)) and step.mode == "hard":
            running = roster.running()
            targets = running[:step.count] if isinstance(step, RollingBounce) else running[-step.count:]
            shared = [roster.slots[n] for n in targets if roster.process_mates(roster.slots[n])]
            if shared:
                problems.append(f"steps.{i}.{step.kind}.mode: 'hard' SIGKILLs each member's process, and "
                                f"{len(shared)} of them share theirs with other members: use mode 'clean', or "
                                "members_per_process: 1")
        roster.apply(step, f"steps.{i}")
    return problems


def _some(ids: list[str], shown: int = 5) -> str:
    return ", ".join(ids[:shown]) + (f" and {len(ids) - shown} more" if len(ids) > shown else "")
