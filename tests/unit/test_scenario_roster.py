"""Which members a scenario's fleet has at each step, replayed from the file as Fleet names them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from testbed.scenario.model import Scenario
from testbed.scenario.roster import Roster

BASE = {
    "name": "t",
    "topics": [{"name": "events", "partitions": 6}],
    "members": {"a": {"client": "confluent-kafka"}},
    "fleet": [{"spec": "a", "count": 2}, {"spec": "a", "count": 1}],
}


def scenario(*steps: object) -> Scenario:
    return Scenario.model_validate({**BASE, "steps": list(steps)})


def refusal(*steps: object) -> str:
    with pytest.raises(ValidationError) as exc:
        scenario(*steps)
    return str(exc.value)


def replay(*steps: object) -> Roster:
    roster = Roster()
    s = scenario(*steps)
    for entry in s.fleet:
        roster.start(entry.count, entry.spec)
    for step in s.steps:
        roster.apply(step)
    return roster


def test_fleet_entries_fill_slots_in_order() -> None:
    assert replay().ids() == ["m0", "m1", "m2"]


def test_a_bounce_replaces_running_members_but_not_paused_or_killed_ones() -> None:
    roster = replay({"pause": {"member": "m0"}}, {"kill": {"member": "m1"}}, "rolling_bounce")
    assert roster.ids() == ["m0", "m1", "m2.1"]


def test_a_timed_pause_resumes_within_its_step() -> None:
    assert replay({"pause": {"member": "m0", "seconds": 1}}, "rolling_bounce").ids() == ["m0.1", "m1.1", "m2.1"]


def test_scale_out_adds_slots_after_the_highest_and_scale_in_removes_the_highest_running() -> None:
    roster = replay({"scale_out": {"spec": "a", "count": 2}}, {"kill": {"member": "m4"}}, {"scale_in": {"count": 2}})
    assert roster.ids() == ["m0", "m1", "m4"]


def test_a_slot_reused_after_scale_in_counts_its_incarnations_on() -> None:
    assert replay({"scale_in": {"count": 1}}, {"scale_out": {"spec": "a", "count": 1}}).ids() == ["m0", "m1", "m2.1"]


def test_a_member_the_fleet_never_has_is_refused_with_the_members_it_has() -> None:
    msg = refusal({"stop": {"member": "m9"}})
    assert "steps.0.stop.member" in msg and "'m9'" in msg and "m0, m1, m2" in msg


def test_a_member_replaced_by_a_bounce_is_refused_naming_its_replacement() -> None:
    msg = refusal("rolling_bounce", {"kill": {"member": "m0"}})
    assert "steps.1.kill.member" in msg and "m0.1" in msg


def test_a_member_is_named_only_once_it_is_started() -> None:
    assert "steps.0.resume.member" in refusal({"resume": {"member": "m3"}}, {"scale_out": {"spec": "a", "count": 1}})
    assert scenario({"scale_out": {"spec": "a", "count": 1}}, {"pause": {"member": "m3", "seconds": 2}})


def test_a_killed_member_can_still_be_named() -> None:
    assert scenario({"kill": {"member": "m1"}}, {"stop": {"member": "m1"}})


def test_scale_in_past_the_running_members_is_refused() -> None:
    msg = refusal({"pause": {"member": "m0"}}, {"scale_in": {"count": 3}})
    assert "steps.1.scale_in.count" in msg and "2 running" in msg


def test_every_problem_is_listed_not_only_the_first() -> None:
    msg = refusal({"kill": {"member": "m7"}}, {"rolling_bounce": {"to": "nope"}})
    assert "steps.0.kill.member" in msg and "steps.1.rolling_bounce.to" in msg


def test_a_stall_is_refused_for_a_java_member_and_kept_for_a_python_one() -> None:
    members = {"a": {"client": "confluent-kafka"}, "j": {"client": "java"}}
    fleet = [{"spec": "a", "count": 1}, {"spec": "j", "count": 1}]
    ok = Scenario.model_validate({**BASE, "members": members, "fleet": fleet,
                                  "steps": [{"stall": {"member": "m0", "seconds": 5}}]})
    assert ok.steps[0].kind == "stall"
    with pytest.raises(ValidationError) as exc:
        Scenario.model_validate({**BASE, "members": members, "fleet": fleet,
                                 "steps": [{"rolling_bounce": {"to": "j"}}, {"stall": {"member": "m0.1"}}]})
    assert "steps.1.stall.member" in str(exc.value) and "java" in str(exc.value)
