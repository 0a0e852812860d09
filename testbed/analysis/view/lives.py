"""The members' control events and how each member's history ends: what episodes and ownership read."""

from __future__ import annotations

from dataclasses import dataclass

from .harness import MemberExit

TP = tuple[str, int]


@dataclass(frozen=True)
class MemberEvent:
    """One control event of one member, in the member's own file order (``seq``)."""

    ts: int
    member: str
    name: str
    partitions: tuple[TP, ...] = ()
    seq: int = 0


DEATHS = ("killed", "stop_timeout", "exited", "crashed", "vanished")


@dataclass(frozen=True)
class MemberLife:
    """When a member's history ends and why: ``killed`` (harness kill), ``stopped`` (its own ``stopped``
    event), ``stop_timeout`` (asked to stop, SIGKILLed after the timeout), ``crashed`` (the user's program ended
    by itself with a failure: the harness's ``member_crash``, whatever the program wrote on its way out),
    ``exited`` (the harness saw the process end without a ``stopped`` event), ``vanished`` (neither an exit record nor ``stopped``: its
    last event) or ``run_end`` (alive at the end). All but ``stopped`` and ``run_end`` are deaths."""

    member: str
    end_ms: int
    reason: str

    @property
    def died(self) -> bool:
        return self.reason in DEATHS


def member_lives(
    events_by_member: dict[str, list[MemberEvent]],
    last_ts_by_member: dict[str, int],
    kill_ms: dict[str, int],
    exits: dict[str, MemberExit],
    run_end_ms: int | None,
) -> dict[str, MemberLife]:
    """How each member's history ends (see :class:`MemberLife`).

    A kill ends ownership at the kill, or at the member's last event if it wrote one after the kill was
    asked for (the signal lands some milliseconds later: a process hosting 50 members wrote batches 1 ms after
    its kill's record); a process SIGKILLed after its stop timeout ends at its recorded exit (without that
    record it would "own" its partitions to the end of the run).
    """
    lives: dict[str, MemberLife] = {}
    for member, last_ts in last_ts_by_member.items():
        stops = [e.ts for e in events_by_member.get(member, []) if e.name == "stopped"]
        exit_ = exits.get(member)
        if member in kill_ms:
            lives[member] = MemberLife(member, max(kill_ms[member], last_ts), "killed")
        elif exit_ is not None and exit_.crashed:
            lives[member] = MemberLife(member, max(exit_.ts_ms, last_ts), "crashed")
        elif stops:
            lives[member] = MemberLife(member, stops[-1], "stopped")
        elif exit_ is not None and exit_.cause in ("stop_timeout", "killed"):
            lives[member] = MemberLife(member, exit_.ts_ms, exit_.cause)
        elif exit_ is not None:
            lives[member] = MemberLife(member, max(exit_.ts_ms, last_ts), "exited")
        elif run_end_ms is None:
            lives[member] = MemberLife(member, last_ts, "vanished")
        else:
            lives[member] = MemberLife(member, max(run_end_ms, last_ts), "run_end")
    return lives
