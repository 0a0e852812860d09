"""Member names and slots, the one source the fleet starts members by and the scenario checks replay."""

from __future__ import annotations

from testbed.members.naming import MemberNames, member_name, placements


def test_a_slot_first_member_is_m_slot_and_each_replacement_counts_on() -> None:
    names = MemberNames()
    assert names.upcoming(3) == "m3" and names.upcoming(3) == "m3"  # looking starts nothing
    assert [names.take(3), names.take(3), names.take(0), names.take(3)] == ["m3", "m3.1", "m0", "m3.2"]
    assert member_name(3, 2) == "m3.2"


def test_new_members_take_the_slots_after_the_highest_in_use() -> None:
    assert [p.slot for p in placements([0, 4], 2)] == [5, 6]
    assert [p.slot for p in placements([], 2)] == [0, 1]


def test_members_started_together_fill_shared_processes_in_slot_order() -> None:
    assert [p.opens_process for p in placements([], 5, per_process=2)] == [True, False, True, False, True]
    assert not any(p.opens_process for p in placements([], 3))  # each in a process of its own: none shared
