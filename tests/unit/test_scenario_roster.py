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


def test_a_step_naming_a_member_an_earlier_step_stopped_is_refused_naming_that_step() -> None:
    msg = refusal("wait_stable", "rolling_bounce", {"stop": {"member": "m0.1"}}, {"wait": {"seconds": 1}},
                  {"kill": {"member": "m0.1"}})
    assert "steps.4.kill.member: 'm0.1' was already stopped by steps.2; members alive then: m1.1, m2.1" in msg


@pytest.mark.parametrize("step", [{"stop": {"member": "m1"}}, {"kill": {"member": "m1"}}, {"pause": {"member": "m1"}},
                                  {"resume": {"member": "m1"}}, {"stall": {"member": "m1"}},
                                  {"unstall": {"member": "m1"}}, {"partition": {"member": "m1", "seconds": 1}}])
def test_every_step_on_a_killed_member_is_refused(step: dict[str, object]) -> None:
    kind = next(iter(step))
    assert f"steps.1.{kind}.member: 'm1' was already killed by steps.0" in refusal({"kill": {"member": "m1"}}, step)


def test_a_heal_may_name_a_killed_member_its_cut_outlives() -> None:
    assert scenario({"partition": {"member": "m1"}}, {"kill": {"member": "m1"}}, {"heal": {"member": "m1"}})


def test_a_paused_member_can_still_be_killed_or_stopped() -> None:
    assert scenario({"pause": {"member": "m0"}}, {"kill": {"member": "m0"}}, {"pause": {"member": "m1"}},
                    {"stop": {"member": "m1"}})


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


# ---- members sharing a process --------------------------------------------------------------

HOSTED = {
    "name": "t",
    "topics": [{"name": "events", "partitions": 6}],
    "members": {"a": {"client": "confluent-kafka"}, "b": {"client": "confluent-kafka", "client_version": "2.12.0"},
                "j": {"client": "java"}},
    "fleet": [{"spec": "a", "count": 5, "members_per_process": 2}],
}


def hosted(*steps: object, **changes: object) -> Scenario:
    return Scenario.model_validate({**HOSTED, **changes, "steps": list(steps)})


def hosted_refusal(*steps: object, **changes: object) -> str:
    with pytest.raises(ValidationError) as exc:
        hosted(*steps, **changes)
    return str(exc.value)


def test_a_kill_of_a_member_sharing_its_process_must_say_whole_process() -> None:
    message = hosted_refusal({"kill": {"member": "m2"}})
    assert "steps.0.kill.whole_process: 'm2' shares its process with 1 other member(s) (m3)" in message
    # the last process holds m4 alone: nothing else is hit, nothing to say
    hosted({"kill": {"member": "m4"}})


def test_a_whole_process_kill_takes_every_member_there() -> None:
    s = hosted({"kill": {"member": "m2", "whole_process": True}}, "rolling_bounce")
    roster = Roster(s.members)
    roster.start(5, "a", 2)
    for step in s.steps:
        roster.apply(step)
    # m2 and m3 died with their process; the bounce replaced the running ones only
    assert roster.ids() == ["m0.1", "m1.1", "m2", "m3", "m4.1"]


def test_a_member_killed_with_its_process_is_refused_naming_the_kill() -> None:
    message = hosted_refusal({"kill": {"member": "m2", "whole_process": True}}, {"stop": {"member": "m3"}})
    assert "steps.1.stop.member: 'm3' was already killed by steps.0, with the process of m2" in message


def test_pause_and_partition_of_a_shared_process_need_whole_process_too() -> None:
    assert "steps.0.pause.whole_process" in hosted_refusal({"pause": {"member": "m0"}})
    assert "steps.0.partition.whole_process" in hosted_refusal({"partition": {"member": "m0", "seconds": 1}})
    hosted({"pause": {"member": "m0", "whole_process": True, "seconds": 1}},
           {"partition": {"member": "m1", "seconds": 1, "whole_process": True}})


def test_stop_and_stall_act_on_one_member_of_a_shared_process() -> None:
    hosted({"stall": {"member": "m0", "seconds": 1}}, {"stop": {"member": "m1"}}, {"kill": {"member": "m0"}})


def test_a_hard_bounce_or_scale_in_over_shared_processes_is_refused() -> None:
    assert "steps.0.rolling_bounce.mode: 'hard'" in hosted_refusal({"rolling_bounce": {"mode": "hard"}})
    assert "steps.0.scale_in.mode: 'hard'" in hosted_refusal({"scale_in": {"count": 2, "mode": "hard"}})
    hosted({"scale_in": {"count": 1, "mode": "hard"}})  # m4 has its process to itself


def test_a_replacement_stays_in_its_process_only_with_the_same_client_and_version() -> None:
    roster = Roster(hosted().members)
    roster.start(4, "a", 2)
    roster.apply(hosted({"rolling_bounce": {"to": "b", "count": 1}}).steps[0])
    roster.apply(hosted({"rolling_bounce": {"count": 1}}).steps[0])
    # m0.1 (another version) runs in a process of its own; m0.2 (back on a) then too, m1 stays alone there
    assert roster.slots[0].host is None and roster.process_mates(roster.slots[1]) == []


def test_every_client_can_share_a_process() -> None:
    hosted(fleet=[{"spec": "j", "count": 4, "members_per_process": 2}],
           members={**HOSTED["members"], "k": {"client": "kafka-python"}})
    hosted({"scale_out": {"spec": "j", "count": 2, "members_per_process": 2}})


def test_more_than_200_member_processes_are_refused_with_the_per_process_needed() -> None:
    message = hosted_refusal(fleet=[{"spec": "a", "count": 1000}])
    assert "fleet.0\n" in message
    assert "count: 1000 members at members_per_process 1 are 1000 processes; at most 200" in message
    assert "raise members_per_process to at least 5" in message
    hosted(fleet=[{"spec": "a", "count": 1000, "members_per_process": 5}])
