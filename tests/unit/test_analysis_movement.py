"""Partitions moved by an episode against the fewest a balanced assignment needs: known answers."""

from __future__ import annotations

from testbed.analysis.intervals import OwnershipInterval
from testbed.analysis.group.movement import fewest_moves, movement, owners_at

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


def test_a_newcomer_is_owed_partitions_only_once_it_joined() -> None:
    from testbed.analysis.group.episodes import Episode
    from testbed.analysis.view.lives import MemberLife
    from testbed.analysis.group.movement import episode_movements

    # 12 partitions, A and B 6 each. C and D start at 500; C joins in the first episode (1000-1500) and takes 4;
    # D, slow to start, joins only in the second (3000-3500) and takes 3: each episode moves the minimum.
    first, second = "AAAACCBBBBCC", "AAADCCBBBDCD"
    intervals = [iv(p, "A" if p < 6 else "B", 0, 1500) for p in range(12)]
    intervals += [iv(p, first[p], 1500, 3500) for p in range(12)]
    intervals += [iv(p, second[p], 3500, 9000) for p in range(12)]
    lives = {m: MemberLife(m, 9000, "run_end") for m in "ABCD"}
    episodes = [Episode(episode_id=i, start_ms=s, end_ms=e, trigger="assigned:x")
                for i, (s, e) in enumerate([(1000, 1500), (3000, 3500)])]
    moves = episode_movements(episodes, intervals, lives, joined={"A": 0, "B": 0, "C": 1500, "D": 3500})
    assert [(m.moved, m.moved_min) for m in moves.values()] == [(4, 4), (3, 3)]
    # D joined with an empty assignment in the first episode (the consumer protocol's way) and got its partitions
    # in the second: its share is owed there only, else the first would need 6 moves and the total 9 for 7 moved
    empty_first = episode_movements(episodes, intervals, lives, joined={"A": 0, "B": 0, "C": 1500, "D": 1500})
    assert [(m.moved, m.moved_min, m.spread) for m in empty_first.values()] == [(4, 4, 0), (3, 3, 0)]
