"""The harness's stable check from the members' side: histories replayed incrementally, and compared with the
broker's view of the group."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.admin.kafka_admin import GroupView, MemberView
from testbed.fleet.ownership import HistoryOwnership, disagreements, fleet_names


def _line(name: str, partitions: list[int], **extra: object) -> str:
    return json.dumps({"name": name, "ts_ms": 1, "source": "m0", "partitions": [["t", p] for p in partitions],
                       **extra}) + "\n"


def test_replays_only_what_was_appended_and_waits_for_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "m0.jsonl"
    ownership = HistoryOwnership()
    assert ownership.owned(path) == set()  # not written yet
    path.write_text(_line("assigned", [0, 1, 2]) + json.dumps({"name": "processed", "ts_ms": 2, "source": "m0",
                                                               "topic": "t", "partition": 0}) + "\n")
    assert ownership.owned(path) == {("t", 0), ("t", 1), ("t", 2)}
    with path.open("a") as f:
        f.write(_line("revoked", [1]))
        f.write(_line("lost", [2])[:20])  # the writer is mid-line
    assert ownership.owned(path) == {("t", 0), ("t", 2)}
    with path.open("a") as f:
        f.write(_line("lost", [2])[20:] + _line("assigned", [5]))
    assert ownership.owned(path) == {("t", 0), ("t", 5)}


def _view(**members: list[int]) -> GroupView:
    return GroupView("g", "STABLE", "range", "CLASSIC", tuple(
        MemberView(member_id=f"id-{name}", client_id=name, instance_id=None,
                   partitions=frozenset(("t", p) for p in parts)) for name, parts in members.items()))


ALL = {("t", p) for p in range(4)}


def test_agreement_needs_every_partition_held_once_and_the_same_owners() -> None:
    assert disagreements(_view(m0=[0, 1], m1=[2, 3]), {"m0": {("t", 0), ("t", 1)}, "m1": {("t", 2), ("t", 3)}},
                         ALL) == []
    # the broker has given m1 partitions 2 and 3; m1's callback has not run yet
    problems = disagreements(_view(m0=[0, 1], m1=[2, 3]), {"m0": {("t", 0), ("t", 1)}, "m1": set()}, ALL)
    assert problems == ["histories: no live member holds ('t', 2), ('t', 3)",
                        "histories and the broker differ for 1 member(s), e.g. m1: broker 2 [2, 3], history 0 []"]
    # a cooperative round: m0 still holds 2 by its history while the broker already lists it with m1
    problems = disagreements(_view(m0=[0, 1], m1=[2, 3]),
                             {"m0": {("t", 0), ("t", 1), ("t", 2)}, "m1": {("t", 2), ("t", 3)}}, ALL)
    assert problems[0] == "histories: several holders of (('t', 2), ['m0', 'm1'])"
    # a member the broker lists that the fleet does not know
    assert "m9: broker 0 [], history not a member" in disagreements(_view(m0=[0, 1, 2, 3], m9=[]),
                                                                    {"m0": ALL}, ALL)[0]


def test_a_static_replacement_is_known_by_its_instance_id_not_the_client_id_the_broker_kept() -> None:
    # m0 was bounced into m0.1 with the same group.instance.id: the coordinator swapped the member id and kept the
    # rest of the cached member, client id included, so it still lists the member as m0
    view = GroupView("g", "STABLE", "range", "CLASSIC", (
        MemberView("id-new", "m0", "g-slot-0", frozenset({("t", 0), ("t", 1)})),
        MemberView("id-m1", "m1", None, frozenset({("t", 2), ("t", 3)}))))
    names = fleet_names(view, {"g-slot-0": "m0.1"})
    assert names == {"id-new": "m0.1", "id-m1": "m1"}
    held = {"m0.1": {("t", 0), ("t", 1)}, "m1": {("t", 2), ("t", 3)}}
    assert disagreements(view, held, ALL, names) == []
    assert disagreements(view, held, ALL)[0].startswith("histories and the broker differ for 2 member(s)")
