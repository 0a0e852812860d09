"""Partitions moved by an episode against the fewest a balanced assignment needs: known answers."""

from __future__ import annotations

from testbed.analysis.control import OwnershipInterval
from testbed.analysis.movement import fewest_moves, movement, owners_at

P6 = [("t", p) for p in range(6)]


def iv(p: int, member: str, start: int, end: int) -> OwnershipInterval:
    return OwnershipInterval("t", p, member, start, end, "test")


def test_a_member_leaving_must_move_only_its_own_partitions() -> None:
    before = {tp: m for tp, m in zip(P6, "AABBCC")}
    assert fewest_moves(before, P6, {"A", "B"}) == 2  # C's two go; A and B keep 2 each and get 1 more
    assert fewest_moves(before, P6, {"A", "B", "C"}) == 0


def test_a_member_joining_takes_the_least_from_the_fullest() -> None:
    before = {tp: m for tp, m in zip(P6, "AAABBB")}
    assert fewest_moves(before, P6, {"A", "B", "C"}) == 2  # quotas 2, 2, 2: one from each
    uneven = {tp: m for tp, m in zip(P6, "AAAAAB")}
    assert fewest_moves(uneven, P6, {"A", "B"}) == 2  # quotas 3, 3: A gives 2 to B
    seven = [("t", p) for p in range(7)]
    assert fewest_moves({tp: m for tp, m in zip(seven, "AAAABBB")}, seven, {"A", "B"}) == 0  # 4 and 3 is balanced


def test_partitions_without_an_owner_before_are_assignments_not_moves() -> None:
    before = {("t", 0): "A", ("t", 1): "B"}
    assert fewest_moves(before, P6, {"A", "B"}) == 0
    assert fewest_moves(before, P6, set()) == 2


def test_an_episode_counts_owner_changes_and_the_balance_it_left() -> None:
    # A and B own 3 each; C joins at 1000 and an assignor reshuffles: 0, 1 -> C, 2, 3 -> A, 4, 5 -> B.
    intervals = [iv(p, "AAABBB"[p], 0, 1000) for p in range(6)]
    intervals += [iv(p, "CCAABB"[p], 1500, 9000) for p in range(6)]
    m = movement(intervals, 1000, 1500, {"A", "B", "C"}, set(P6))
    assert (m.moved, m.moved_min, m.spread) == (3, 2, 0)  # 0, 1 (A->C) and 3 (B->A) moved; one from each sufficed
    assert owners_at(intervals, 999)[("t", 3)] == "B" and owners_at(intervals, 1500)[("t", 3)] == "A"


def test_during_duplicate_ownership_the_incumbent_owns() -> None:
    intervals = [iv(0, "A", 0, 2000), iv(0, "B", 1000, 5000)]
    assert owners_at(intervals, 1500) == {("t", 0): "A"}
    assert owners_at(intervals, 2500) == {("t", 0): "B"}


def test_the_spread_is_unknown_when_no_member_is_left() -> None:
    intervals = [iv(p, "A", 0, 1000) for p in range(6)]
    m = movement(intervals, 500, 2000, set(), set(P6))
    assert (m.moved, m.moved_min, m.spread) == (6, 6, None)
