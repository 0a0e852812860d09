"""What each member owns by its own history, and whether that agrees with the broker's view of the group.

The admin API shows the coordinator's assignment, which runs ahead of the members: under the consumer protocol a
member's partitions appear there seconds before its client has reconciled and called its callback (measured:
10 Java members, one listed as owning 10 partitions 4.6 s before its history did), and under the classic protocol
between SyncGroup and the callback. A group is stable for the harness only when both agree: the broker says
STABLE with every partition owned once, and every live member's callbacks say it holds exactly what the broker
says. ``HistoryOwnership`` replays the member histories incrementally (each check reads only what was appended
since the last), so that checking a 1,000-member group every half second stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..admin.kafka_admin import GroupView
from ..history.events import Assigned, Lost, Revoked, TopicPartition, event_name
from ..history.tail import HistoryTail, markers
from .streams import instance_name, instance_of_thread

_OWNERSHIP_EVENTS = (Assigned, Revoked, Lost)
_OWNERSHIP_NAMES = {event_name(e) for e in _OWNERSHIP_EVENTS}
ASSIGNED = event_name(Assigned)
# A line is parsed only if one of these occurs in it: processed batches, the bulk of a history, are skipped cheaply.
_MARKERS = markers(*_OWNERSHIP_EVENTS)


class _Replay:
    """One member's ownership, replayed from its history as it grows."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tail = HistoryTail(path, _MARKERS)
        self.owned: set[TopicPartition] = set()
        self.kafka_member_id: str | None = None  # the broker's member id, as the member's last callback reported it

    def advance(self) -> set[TopicPartition]:
        for event in self.tail.new_events():
            self._apply(event)
        return self.owned

    def _apply(self, event: dict) -> None:
        # assigned adds (eager clients revoke everything before each full assignment, so adding holds for them
        # too), revoked and lost take away
        if event.get("name") not in _OWNERSHIP_NAMES:
            return
        self.kafka_member_id = event.get("kafka_member_id") or self.kafka_member_id
        partitions = {(tp[0], int(tp[1])) for tp in event.get("partitions", [])}
        if event["name"] == ASSIGNED:
            self.owned |= partitions
        else:
            self.owned -= partitions


class HistoryOwnership:
    """Each member's ownership replayed from its history file, kept between calls."""

    def __init__(self) -> None:
        self._replays: dict[Path, _Replay] = {}

    def owned(self, history_path: Path) -> set[TopicPartition]:
        replay = self._replays.get(history_path)
        if replay is None:
            replay = self._replays[history_path] = _Replay(history_path)
        return set(replay.advance())

    def kafka_member_id(self, history_path: Path) -> str | None:
        """The broker's member id the member's history last reported (after ``owned`` read it up to date)."""
        replay = self._replays.get(history_path)
        return replay.kafka_member_id if replay is not None else None


def fleet_names(view: GroupView, by_instance: Mapping[str, str],
                by_member_id: Mapping[str, str] | None = None) -> dict[str, str]:
    """The fleet's name of each member the broker lists, by the broker's member id.

    A member whose history reported the broker's member id (``by_member_id``: broker member id -> fleet name) is
    known by it: the user's own program chooses its client id. Else a dynamic member is known by its client id
    (testbed's runners set client.id to the member's name; a Streams instance's consumer adds a thread suffix). A static member is
    known by its group.instance.id (``by_instance``: instance id -> fleet name of the live member using it): when a
    replacement rejoins with its predecessor's instance id, the coordinator swaps the member id of the cached member
    and keeps the rest, client id included, so m0's replacement m0.1 is listed as m0. A static Streams instance's
    consumer joins with the instance's id and its thread's index (``instance_of_thread``).
    """
    by_member_id = by_member_id or {}
    return {m.member_id: by_member_id.get(m.member_id)
            or (by_instance.get(instance_of_thread(m.instance_id, m.client_id), instance_name(m.client_id))
                if m.instance_id else instance_name(m.client_id))
            for m in view.members}


def disagreements(view: GroupView, held: Mapping[str, set[TopicPartition]],
                  partitions: set[TopicPartition], names: Mapping[str, str] | None = None) -> list[str]:
    """Why the members' histories (``held``, by fleet name) and the broker's ``view`` do not both show every
    partition owned once by the same member; [] when they do. ``names`` gives the fleet name of each broker
    member id (``fleet_names``); without it, the client id."""
    problems = held_once(held, partitions)
    names = names or {m.member_id: m.client_id for m in view.members}
    from_broker: dict[str, set[TopicPartition]] = {}
    for m in view.members:  # a Streams instance of several threads is one broker member per thread
        from_broker.setdefault(names[m.member_id], set()).update(m.partitions)
    if differ := sorted(m for m in set(from_broker) | set(held) if from_broker.get(m) != held.get(m)):
        problems.append(f"histories and the broker differ for {len(differ)} member(s), e.g. "
                        + "; ".join(f"{m}: broker {_parts(from_broker.get(m))}, history {_parts(held.get(m))}"
                                    for m in differ[:3]))
    return problems


def held_once(held: Mapping[str, set[TopicPartition]], partitions: set[TopicPartition]) -> list[str]:
    """Why the members' histories (``held``, by fleet name) do not show every partition held by exactly one
    member; [] when they do."""
    problems: list[str] = []
    owners: dict[TopicPartition, list[str]] = {}
    for member_id, owned in held.items():
        for tp in owned:
            owners.setdefault(tp, []).append(member_id)
    if missing := sorted(partitions - set(owners)):
        problems.append(f"histories: no live member holds {_some(missing)}")
    if shared := {tp: who for tp, who in owners.items() if len(who) > 1}:
        problems.append(f"histories: several holders of {_some(sorted(shared.items()))}")
    return problems


def _parts(owned: set[TopicPartition] | None) -> str:
    return "not a member" if owned is None else f"{len(owned)} [{_some(sorted(p for _, p in owned))}]"


def _some(items: list, limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")
