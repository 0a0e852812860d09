"""Known-answer tests: the worked examples of the seed documents (000 KIP-54, 001 KIP-169, 003 stream join)."""

from __future__ import annotations

import pytest

from testbed.assignors.failover import assign_failover, encode_priority
from testbed.assignors.lag_aware import assign_lag_aware
from testbed.assignors.model import MemberSubscription
from testbed.assignors.simulator import Join, JoinAll, Leave, simulate
from testbed.assignors.stream_join import (
    assign_sticky_stream_join,
    decode_assignment_user_data,
    encode_subscription_user_data,
)


def member(mid: str, *topics: str, user_data: bytes = b"") -> MemberSubscription:
    return MemberSubscription(member_id=mid, topics=frozenset(topics), user_data=user_data)


def join_all(*specs: tuple[str, tuple[str, ...]]) -> JoinAll:
    return JoinAll(joins=tuple(Join(member=m, topics=t) for m, t in specs))


# ---- seed 001, KIP-169 -------------------------------------------------------------------------


def test_kip169_worked_example_100k_60k_50k():
    lags = {"t0": [100_000, 60_000, 50_000]}
    result = assign_lag_aware({"t0": 3}, [member("C0", "t0"), member("C1", "t0")], lags)
    assert result.partitions == {"C0": {"t0": [0]}, "C1": {"t0": [1, 2]}}
    totals = {m: sum(lags["t0"][p] for p in ps["t0"]) for m, ps in result.partitions.items()}
    assert totals == {"C0": 100_000, "C1": 110_000}


def test_kip169_example_differs_from_range_which_gives_160k_to_one_member():
    result = simulate("range", {"t0": 3}, [join_all(("C0", ("t0",)), ("C1", ("t0",)))])
    assert result.steps[0].assignment["C0"] == [("t0", 0), ("t0", 1)]


def test_kip169_worked_example_through_the_kafka_python_adapter():
    from testbed.assignors.simulator import SetLags

    steps = simulate(
        "lag-aware",
        {"t0": 3},
        [join_all(("C0", ("t0",)), ("C1", ("t0",))), SetLags(lags={"t0": [100_000, 60_000, 50_000]})],
    ).steps
    assert steps[-1].assignment == {"C0": [("t0", 0)], "C1": [("t0", 1), ("t0", 2)]}
    assert steps[-1].lag_spread == 10_000


# ---- seed 002, FailoverAssignor ----------------------------------------------------------------


def test_failover_gives_everything_to_highest_priority_then_to_the_next_when_it_leaves():
    members = [
        member("c1", "a", "b", user_data=encode_priority(10)),
        member("c2", "a", "b", user_data=encode_priority(5)),
        member("c3", "a", "b", user_data=encode_priority(1)),
    ]
    first = assign_failover({"a": 3, "b": 2}, members)
    assert first.partitions["c1"] == {"a": [0, 1, 2], "b": [0, 1]}
    assert first.partitions["c2"] == {} and first.partitions["c3"] == {}
    second = assign_failover({"a": 3, "b": 2}, members[1:])
    assert second.partitions["c2"] == {"a": [0, 1, 2], "b": [0, 1]}


# ---- seed 003, StickyStreamJoinAssignor --------------------------------------------------------


def test_stream_join_d_leaves_moves_only_the_orphans():
    # Before: A 0,1,2  B 3,4,5  C 6,7  D 8,9 (the seed's "valid assignment"); D leaves.
    topics = ("impressions", "clicks")
    members = [
        member("A", *topics, user_data=encode_subscription_user_data(7, [0, 1, 2])),
        member("B", *topics, user_data=encode_subscription_user_data(7, [3, 4, 5])),
        member("C", *topics, user_data=encode_subscription_user_data(7, [6, 7])),
    ]
    result = assign_sticky_stream_join({"impressions": 10, "clicks": 10}, members)
    # The seed's "better assignment": A 0,1,2,9  B 3,4,5  C 6,7,8, same numbers in both topics.
    expected = {"A": [0, 1, 2, 9], "B": [3, 4, 5], "C": [6, 7, 8]}
    assert result.partitions == {m: {t: ps for t in topics} for m, ps in expected.items()}
    assert {decode_assignment_user_data(ud) for ud in result.user_data.values()} == {8}


# ---- seed 000, KIP-54 against kafka-python's shipped sticky assignors -------------------------

STICKY_ASSIGNORS = ["sticky", "cooperative-sticky"]
T4 = ("t0", "t1", "t2", "t3")


@pytest.mark.parametrize("assignor", STICKY_ASSIGNORS)
def test_kip54_example1_agrees_fresh_and_after_c1_leaves(assignor):
    steps = simulate(assignor, {t: 2 for t in T4}, [join_all(("C0", T4), ("C1", T4), ("C2", T4)), Leave(member="C1")]).steps
    assert steps[0].assignment == {
        "C0": [("t0", 0), ("t1", 1), ("t3", 0)],
        "C1": [("t0", 1), ("t2", 0), ("t3", 1)],
        "C2": [("t1", 0), ("t2", 1)],
    }
    assert steps[1].assignment == {
        "C0": [("t0", 0), ("t1", 1), ("t2", 0), ("t3", 0)],
        "C2": [("t0", 1), ("t1", 0), ("t2", 1), ("t3", 1)],
    }
    assert steps[1].moved_from_live == 0  # "preserving 5 of the previous assignments": all of C0's and C2's


@pytest.mark.parametrize("assignor", STICKY_ASSIGNORS)
def test_kip54_example2_agrees_balanced_fresh_and_preserves_5_after_c0_leaves(assignor):
    topics = {"t0": 1, "t1": 2, "t2": 3}
    start = join_all(("C0", ("t0",)), ("C1", ("t0", "t1")), ("C2", ("t0", "t1", "t2")))
    steps = simulate(assignor, topics, [start, Leave(member="C0")]).steps
    assert steps[0].assignment == {
        "C0": [("t0", 0)],
        "C1": [("t1", 0), ("t1", 1)],
        "C2": [("t2", 0), ("t2", 1), ("t2", 2)],
    }
    assert steps[1].assignment == {"C1": [("t0", 0), ("t1", 0), ("t1", 1)], "C2": [("t2", 0), ("t2", 1), ("t2", 2)]}
    assert steps[1].moved_from_live == 0


@pytest.mark.parametrize("assignor", STICKY_ASSIGNORS)
def test_kip54_example3_agrees_one_partition_moves_to_the_newcomer(assignor):
    both = ("t0", "t1")
    steps = simulate(assignor, {"t0": 2, "t1": 2}, [join_all(("C0", both), ("C1", both)), Join(member="C2", topics=both)]).steps
    assert steps[0].assignment == {"C0": [("t0", 0), ("t1", 0)], "C1": [("t0", 1), ("t1", 1)]}
    assert steps[1].assignment == {"C0": [("t0", 0), ("t1", 0)], "C1": [("t0", 1)], "C2": [("t1", 1)]}
    assert steps[1].moved_from_live == 1  # "preserving 3 partition assignments"


def test_kip54_example1_roundrobin_fresh_agrees_and_is_less_sticky():
    steps = simulate("roundrobin", {t: 2 for t in T4}, [join_all(("C0", T4), ("C1", T4), ("C2", T4)), Leave(member="C1")]).steps
    assert steps[0].assignment["C2"] == [("t1", 0), ("t2", 1)]
    # The KIP: round robin "preserves only 3"; of the 5 partitions C0 and C2 held, 2 moved.
    assert steps[1].moved_from_live == 2
