"""The kafka-python 3.x adapters and the simulator that drives them (no broker)."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

from testbed.assignors.kafka_python import (
    FailoverAssignor,
    LagAwareAssignor,
    StickyStreamJoinAssignor,
)
from testbed.assignors.model import AssignorInputError
from testbed.assignors.simulator import Bounce, Join, JoinAll, Leave, SetPartitions, minimal_moves_for_balance, simulate

BOTH = ("a", "b")


def test_failover_adapter_reads_priority_from_consumer_config_and_rejects_bad_values():
    assignor = FailoverAssignor(consumer_config={"assignment_consumer_priority": 7})
    assert assignor.metadata({"t"}).user_data == b"\x00\x00\x00\x07"
    with pytest.raises(AssignorInputError, match="priority: must be an int32 or its decimal string, got 'high'"):
        FailoverAssignor(priority="high")
    with pytest.raises(AssignorInputError, match=r"assignment.consumer.priority: must be an int32 .* got 2147483648"):
        FailoverAssignor(consumer_config={"assignment.consumer.priority": "2147483648"})


def test_failover_adapter_follows_the_seed_string_priority_and_default():
    # the seed configures props.put(..., "10"); a consumer without one gets ConfigDef's Integer.MAX_VALUE
    assert FailoverAssignor(consumer_config={"assignment.consumer.priority": " 10 "}).priority == 10
    assert FailoverAssignor().priority == 2**31 - 1
    assert FailoverAssignor().metadata({"t"}).user_data == b"\x7f\xff\xff\xff"


def test_lag_aware_adapter_reads_auto_offset_reset_as_kip169_does():
    assert LagAwareAssignor({"auto_offset_reset": "smallest"}).auto_offset_reset == "earliest"
    assert LagAwareAssignor({"auto_offset_reset": "largest"}).auto_offset_reset == "latest"
    assert LagAwareAssignor().auto_offset_reset == "latest"  # kafka-python's default
    with pytest.raises(AssignorInputError, match=r"consumer_config\['auto_offset_reset'\]: must be a string"):
        LagAwareAssignor({"auto_offset_reset": None})


def test_lag_aware_adapter_without_bootstrap_balances_counts_only():
    from kafka.protocol.consumer.group import JoinGroupResponse

    from testbed.assignors.simulator_assignors import FakeCluster

    lone = LagAwareAssignor()  # no consumer config: lags unknown, no broker contacted
    wire = [
        JoinGroupResponse.JoinGroupResponseMember(member_id=m, group_instance_id=None, metadata=lone.metadata({"t"}))
        for m in ("x", "y")
    ]
    result = lone.assign(FakeCluster({"t": 3}), wire)
    assert [tp.partition for tp in result["x"].partitions()] == [0, 2]
    assert [tp.partition for tp in result["y"].partitions()] == [1]


def test_stream_join_adapter_carries_epoch_and_numbers_into_next_subscription():
    assignor = StickyStreamJoinAssignor()
    assignor.on_assignment(ConsumerProtocolAssignment(0, [("a", [1, 4]), ("b", [1, 4])], b"\x00\x00\x00\x00\x00\x09"), 3)
    from testbed.assignors.stream_join import decode_subscription_user_data

    claim = decode_subscription_user_data("me", assignor.metadata(set(BOTH)).user_data)
    assert claim.epoch == 9 and claim.partitions == (1, 4)


def test_simulated_failover_moves_everything_to_the_next_priority_when_active_leaves():
    events = [
        Join(member="p10", topics=BOTH, options={"priority": 10}),
        Join(member="p5", topics=BOTH, options={"priority": 5}),
        Leave(member="p10"),
    ]
    steps = simulate("failover", {"a": 3, "b": 3}, events).steps
    assert len(steps[1].assignment["p10"]) == 6 and steps[1].assignment["p5"] == []
    assert steps[1].moved_from_live == 0
    assert len(steps[2].assignment["p5"]) == 6 and steps[2].reassigned_from_departed == 6


def test_simulated_stream_join_is_sticky_and_co_partitioned_through_churn():
    events = [Join(member=m, topics=BOTH) for m in "ABCD"] + [Leave(member="D"), Join(member="E", topics=BOTH)]
    steps = simulate("sticky-stream-join", {"a": 10, "b": 10}, events).steps
    previous: dict[str, list] = {}
    for step in steps:
        for parts in step.assignment.values():
            assert {p for t, p in parts if t == "a"} == {p for t, p in parts if t == "b"}
        # Balance is over partition numbers (each is 2 topic partitions here), so is the move bound.
        kept_numbers = [len(previous.get(m, [])) // 2 for m in step.assignment]
        assert step.moved_from_live == 2 * minimal_moves_for_balance(kept_numbers, 10) == step.minimal_moves
        previous = step.assignment
    assert steps[4].moved_from_live == 0  # D leaves: only D's numbers move


def test_simulated_cooperative_sticky_needs_a_second_round_when_partitions_move():
    events = [Join(member="c0", topics=BOTH), Join(member="c1", topics=BOTH)]
    steps = simulate("cooperative-sticky", {"a": 2, "b": 2}, events).steps
    assert steps[1].rebalances == 2 and steps[1].moved_from_live == 2


def test_simulated_bounce_is_two_rebalances_and_counts_the_hand_over_and_the_hand_back():
    events = [JoinAll(joins=(Join(member="x", topics=BOTH), Join(member="y", topics=BOTH))), Bounce(member="x")]
    step = simulate("sticky", {"a": 2, "b": 2}, events).steps[1]
    # x's 2 partitions go to y while x is away (departed), then 2 of y's 4 come back to x (moved from a live
    # member, and the fewest a balanced result needs)
    assert (step.rebalances, step.reassigned_from_departed, step.moved_from_live, step.minimal_moves) == (2, 2, 2, 2)


def test_a_failover_bounce_of_the_active_member_counts_both_hand_overs():
    events = [Join(member="p10", topics=BOTH, options={"priority": 10}),
              Join(member="p5", topics=BOTH, options={"priority": 5}), Bounce(member="p10")]
    step = simulate("failover", {"a": 3, "b": 3}, events).steps[2]
    assert len(step.assignment["p10"]) == 6
    assert (step.reassigned_from_departed, step.moved_from_live) == (6, 6)  # all to p5 and all back


def test_stream_join_minimal_moves_count_partition_numbers_not_topic_partitions():
    # 5 numbers of two topics: A holds 3 numbers (6 topic partitions), B 2 (4). When C joins, balance over numbers
    # (2, 2, 1) needs one number to move: 2 topic partitions. Balancing the 10 topic partitions as if each could
    # move alone (4, 3, 3) would say 3, which no stream-join assignment can do.
    events = [Join(member="A", topics=BOTH), Join(member="B", topics=BOTH), Join(member="C", topics=BOTH)]
    steps = simulate("sticky-stream-join", {"a": 5, "b": 5}, events).steps
    assert [len(steps[1].assignment[m]) for m in "AB"] == [6, 4]
    assert minimal_moves_for_balance([6, 4, 0], 10) == 3
    assert steps[2].minimal_moves == 2 == steps[2].moved_from_live


def test_simulator_reports_partition_growth_and_unknown_lag():
    events = [Join(member="x", topics=BOTH), SetPartitions(partitions_per_topic={"a": 2, "b": 3})]
    steps = simulate("sticky-stream-join", {"a": 2, "b": 2}, events).steps
    assert steps[1].unassigned_subscribed == 1 and steps[1].lag_spread is None


def test_simulator_rejects_unknown_assignor_and_unknown_member():
    with pytest.raises(AssignorInputError, match="assignor: 'fair'"):
        simulate("fair", {"a": 1}, [])
    with pytest.raises(AssignorInputError, match="leave.member: 'ghost'"):
        simulate("range", {"a": 1}, [Leave(member="ghost")])


def test_minimal_moves_for_balance():
    assert minimal_moves_for_balance([4, 4, 0], 8) == 2  # 3,3,2 targets: two leave the full members
    assert minimal_moves_for_balance([5, 0], 5) == 2


def test_kafka_python_roundrobin_3_0_12_crashes_on_differing_subscriptions():
    # A bug in kafka-python 3.0.12 (roundrobin.py: `member_id = next(member_iter)` binds a tuple).
    # KIP-54 example 2 cannot be run against its RoundRobinPartitionAssignor; if this starts passing
    # through, the bug is fixed: update docs/assignors.md and turn this into a known-answer test.
    start = JoinAll(joins=(Join(member="C0", topics=("t0",)), Join(member="C1", topics=("t0", "t1"))))
    with pytest.raises(KeyError):
        simulate("roundrobin", {"t0": 1, "t1": 2}, [start])


def test_offset_fetch_admin_config_keeps_connection_settings_and_requires_bootstrap():
    from testbed.assignors.offsets_fetch import admin_config_from_consumer_config

    config = admin_config_from_consumer_config(
        {"bootstrap_servers": "127.0.0.1:9092", "group_id": "g", "security_protocol": "PLAINTEXT", "client_id": "m1"}
    )
    assert config == {"bootstrap_servers": "127.0.0.1:9092", "security_protocol": "PLAINTEXT", "client_id": "m1-lag-aware-leader"}
    with pytest.raises(AssignorInputError, match=r"consumer_config\['bootstrap_servers'\]"):
        admin_config_from_consumer_config({"group_id": "g"})


def test_a_consumer_without_a_priority_takes_over_as_in_the_seed():
    from testbed.assignors.failover import failover_order
    from testbed.assignors.model import MemberSubscription

    configured = FailoverAssignor(priority=10).metadata({"t"}).user_data
    unconfigured = FailoverAssignor().metadata({"t"}).user_data
    members = [MemberSubscription("configured", frozenset({"t"}), configured),
               MemberSubscription("unconfigured", frozenset({"t"}), unconfigured)]
    assert failover_order(members) == ["unconfigured", "configured"]


def test_failover_fails_back_when_the_preferred_member_returns():
    events = [Join(member="p10", topics=BOTH, options={"priority": 10}),
              Join(member="p5", topics=BOTH, options={"priority": 5}),
              Leave(member="p10"), Join(member="p10", topics=BOTH, options={"priority": 10})]
    steps = simulate("failover", {"a": 3, "b": 3}, events).steps
    assert len(steps[2].assignment["p5"]) == 6
    assert len(steps[3].assignment["p10"]) == 6 and steps[3].assignment["p5"] == []
    assert steps[3].moved_from_live == 6  # everything leaves the live standby for the preferred member


def test_lag_spread_is_the_spread_of_total_lag_per_member_once_lags_are_set():
    from testbed.assignors.simulator import SetLags

    events = [Join(member="x", topics=("a",)), Join(member="y", topics=("a",)),
              SetLags(lags={"a": [100, 10, 10, 0]})]
    steps = simulate("lag-aware", {"a": 4}, events).steps
    assert steps[1].lag_spread is None  # no lags known yet: unknown, not 0
    # lag-aware puts 100 with one member, then 10 and 10 on the other, then 0 on the first: 100 vs 20
    assert steps[2].lag_spread == 80
    assert sorted(sorted(p for _, p in parts) for parts in steps[2].assignment.values()) == [[0, 3], [1, 2]]


def test_run_with_deadline_returns_raises_and_gives_up_on_a_hang():
    import time

    from testbed.assignors.kafka_python import run_with_deadline

    assert run_with_deadline(lambda: 42, 1.0) == 42
    with pytest.raises(ValueError, match="boom"):
        run_with_deadline(lambda: (_ for _ in ()).throw(ValueError("boom")), 1.0)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="still running after"):
        run_with_deadline(lambda: time.sleep(5), 0.2)
    assert time.monotonic() - started < 2


def test_lag_aware_falls_back_to_count_balance_when_the_offset_fetch_fails_or_hangs(monkeypatch, caplog):
    import time

    import testbed.assignors.kafka_python as adapters
    import testbed.assignors.offsets_fetch as fetch

    assignor = LagAwareAssignor({"bootstrap_servers": "127.0.0.1:1", "group_id": "g"})
    monkeypatch.setattr(fetch, "fetch_partition_offsets", lambda *a: (_ for _ in ()).throw(OSError("refused")))
    assert assignor._fetch_offsets([("t", 0)]) == {}
    assert "fetching offsets failed" in caplog.text
    monkeypatch.setattr(fetch, "fetch_partition_offsets", lambda *a: time.sleep(5))
    monkeypatch.setattr(adapters, "FETCH_DEADLINE_FACTOR", 0.2 / (fetch.DEFAULT_FETCH_TIMEOUT_MS / 1000))
    started = time.monotonic()
    assert assignor._fetch_offsets([("t", 0)]) == {}  # the rebalance goes on without lags
    assert time.monotonic() - started < 2
