"""Edge cases, user data formats and input errors of the three seed cores."""

from __future__ import annotations

import pytest

from testbed.assignors.failover import assign_failover, decode_priority, encode_priority, failover_order
from testbed.assignors.lag_aware import PartitionOffsets, assign_lag_aware, lags_from_offsets, partition_lag
from testbed.assignors.model import AssignorInputError, MemberSubscription, UserDataError
from testbed.assignors.stream_join import (
    assign_sticky_stream_join,
    decode_subscription_user_data,
    encode_subscription_user_data,
)


def member(mid: str, *topics: str, user_data: bytes = b"") -> MemberSubscription:
    return MemberSubscription(member_id=mid, topics=frozenset(topics), user_data=user_data)


# ---- lag-aware ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("offsets", "reset", "lag"),
    [
        (PartitionOffsets(beginning=10, end=100, committed=40), "earliest", 60),
        (PartitionOffsets(beginning=10, end=100, committed=None), "earliest", 90),
        (PartitionOffsets(beginning=10, end=100, committed=None), "none", 90),
        (PartitionOffsets(beginning=10, end=100, committed=None), "latest", 0),
        (PartitionOffsets(beginning=0, end=5, committed=9), "latest", 0),
    ],
)
def test_partition_lag_follows_kip169_and_auto_offset_reset(offsets, reset, lag):
    assert partition_lag(offsets, reset) == lag


@pytest.mark.parametrize("reset,lag", [("earliest", 90), ("smallest", 90), ("none", 90), ("anything", 90),
                                       ("latest", 0), ("largest", 0), (" LATEST ", 0)])
def test_never_committed_lag_is_zero_for_latest_and_everything_for_earliest_or_any_other_value(reset, lag):
    # KIP-169: "If auto.offset.reset=earliest (or any other value) we assume a current lag equal to the total
    # number of records currently available"; kafka-python's aliases smallest/largest mean earliest/latest
    assert partition_lag(PartitionOffsets(beginning=10, end=100, committed=None), reset) == lag


def test_an_auto_offset_reset_that_is_not_a_string_is_refused_naming_the_field():
    with pytest.raises(AssignorInputError, match=r"auto_offset_reset: must be a string .* got 3"):
        partition_lag(PartitionOffsets(0, 1, None), 3)


def test_missing_offsets_count_as_zero_lag():
    lags = lags_from_offsets({"t": 3}, {("t", 1): PartitionOffsets(0, 50, 20)}, "earliest")
    assert lags == {"t": [0, 30, 0]}


def test_lag_aware_is_per_topic_and_respects_subscriptions():
    members = [member("a", "x", "y"), member("b", "x")]
    result = assign_lag_aware({"x": 4, "y": 3}, members, {"x": [1, 2, 3, 4], "y": [9, 9, 9]})
    assert result.partitions["a"]["y"] == [0, 1, 2]
    assert "y" not in result.partitions["b"]
    assert sorted(len(result.partitions[m]["x"]) for m in "ab") == [2, 2]
    # x: 4->a, 3->b, then equal counts: 2 -> b (lag 3 < 4), 1 -> a
    assert result.partitions["a"]["x"] == [0, 3] and result.partitions["b"]["x"] == [1, 2]


def test_lag_aware_rejects_lag_rows_of_the_wrong_length():
    with pytest.raises(AssignorInputError, match=r"lags\['t'\]: expected 3 values"):
        assign_lag_aware({"t": 3}, [member("a", "t")], {"t": [1, 2]})


def test_bad_partition_count_and_duplicate_members_are_named():
    with pytest.raises(AssignorInputError, match=r"partitions_per_topic\['t'\]"):
        assign_lag_aware({"t": -1}, [member("a", "t")])
    with pytest.raises(AssignorInputError, match="member_id 'a' appears twice"):
        assign_failover({"t": 1}, [member("a", "t"), member("a", "t")])


# ---- failover ----------------------------------------------------------------------------------


def test_priority_round_trips_as_big_endian_int32():
    assert encode_priority(10) == b"\x00\x00\x00\x0a"
    assert decode_priority("m", encode_priority(-7)) == -7


def test_priority_out_of_int32_is_a_clear_error():
    with pytest.raises(AssignorInputError, match="priority: must be an int32"):
        encode_priority(2**31)


def test_malformed_priority_user_data_names_member():
    with pytest.raises(UserDataError, match="member 'm2'.*4 bytes"):
        assign_failover({"t": 1}, [member("m2", "t", user_data=b"\x01")])


def test_failover_ties_go_to_smallest_member_id_and_a_member_without_user_data_ranks_last():
    members = [
        member("zz", "t"),
        member("b", "t", user_data=encode_priority(3)),
        member("a", "t", user_data=encode_priority(3)),
    ]
    assert failover_order(members) == ["a", "b", "zz"]
    assert assign_failover({"t": 2}, members).partitions["a"] == {"t": [0, 1]}


def test_failover_topic_goes_to_highest_priority_subscriber_of_that_topic():
    members = [member("hi", "a", user_data=encode_priority(9)), member("lo", "a", "b", user_data=encode_priority(1))]
    result = assign_failover({"a": 2, "b": 2}, members)
    assert result.partitions == {"hi": {"a": [0, 1]}, "lo": {"b": [0, 1]}}


# ---- sticky stream join ------------------------------------------------------------------------


def test_stream_join_user_data_round_trips_and_bad_data_is_named():
    claim = decode_subscription_user_data("m", encode_subscription_user_data(4, [3, 1, 3]))
    assert claim.epoch == 4 and claim.partitions == (1, 3)
    with pytest.raises(UserDataError, match="member 'm'"):
        decode_subscription_user_data("m", b"\x00\x00\x00\x00\x00\x01\x00\x00\x00\x05")


def test_stream_join_higher_epoch_wins_a_conflicting_claim_from_a_zombie():
    zombie = member("z", "a", "b", user_data=encode_subscription_user_data(3, [0, 1, 2, 3]))
    current = member("c", "a", "b", user_data=encode_subscription_user_data(4, [0, 1]))
    result = assign_sticky_stream_join({"a": 4, "b": 4}, [zombie, current])
    assert result.partitions["c"] == {"a": [0, 1], "b": [0, 1]}
    assert result.partitions["z"] == {"a": [2, 3], "b": [2, 3]}


def test_stream_join_differing_partition_counts_assign_only_the_common_numbers():
    result = assign_sticky_stream_join({"a": 4, "b": 6}, [member("m1", "a", "b"), member("m2", "a", "b")])
    owned = result.owner_by_partition()
    assert ("b", 4) not in owned and ("b", 5) not in owned
    assert all(owned[("a", p)] == owned[("b", p)] for p in range(4))


def test_stream_join_differing_subscriptions_leave_unsubscribed_numbers_unassigned():
    # Only m1 reads the new topic c: it gets c's partitions for its own numbers, nothing else.
    result = assign_sticky_stream_join({"a": 4, "c": 4}, [member("m1", "a", "c"), member("m2", "a")])
    assert result.partitions["m1"]["c"] == result.partitions["m1"]["a"]
    assert len(result.owner_by_partition()) == 4 + len(result.partitions["m1"]["c"])
    assert "c" not in result.partitions["m2"]


def test_stream_join_member_without_existing_topics_gets_nothing():
    result = assign_sticky_stream_join({"a": 2}, [member("m1", "a"), member("m2", "missing")])
    assert result.partitions == {"m1": {"a": [0, 1]}, "m2": {}}


def test_stream_join_two_members_claiming_one_number_in_the_same_epoch_the_smaller_id_keeps_it():
    # both say they held number 1 in epoch 5 (a claim replayed after a lost SyncGroup, say): exactly one gets it
    b = member("b", "a", "b", user_data=encode_subscription_user_data(5, [1, 2]))
    a = member("a", "a", "b", user_data=encode_subscription_user_data(5, [0, 1]))
    result = assign_sticky_stream_join({"a": 4, "b": 4}, [b, a])
    assert result.partitions["a"] == {"a": [0, 1], "b": [0, 1]}
    assert result.partitions["b"] == {"a": [2, 3], "b": [2, 3]}


def test_lag_aware_piles_a_multi_topic_backlog_on_one_member_and_the_group_scope_spreads_it():
    # three one-partition topics with equal lag, three members: the KIP's per-topic tie-break (least lag *of
    # that topic*, then smallest id) gives all three to m0; the group scope gives one to each
    members = [member(m, "t1", "t2", "t3") for m in ("m0", "m1", "m2")]
    topics, lags = {"t1": 1, "t2": 1, "t3": 1}, {"t1": [500], "t2": [500], "t3": [500]}
    kip = assign_lag_aware(topics, members, lags)
    assert kip.partitions["m0"] == {"t1": [0], "t2": [0], "t3": [0]}
    spread = assign_lag_aware(topics, members, lags, scope="group")
    assert sorted(spread.partitions.values(), key=str) == [{"t1": [0]}, {"t2": [0]}, {"t3": [0]}]


def test_lag_aware_group_scope_keeps_the_kips_per_topic_counts():
    members = [member(m, "a", "b") for m in ("x", "y", "z")]
    topics = {"a": 7, "b": 5}
    lags = {"a": [9, 1, 1, 1, 1, 1, 0], "b": [4, 4, 4, 0, 0]}
    for scope in ("topic", "group"):
        counts = {t: sorted(len(assign_lag_aware(topics, members, lags, scope).partitions[m].get(t, []))
                            for m in ("x", "y", "z")) for t in topics}
        assert counts == {"a": [2, 2, 3], "b": [1, 2, 2]}
    totals = [sum(len(v) for v in assign_lag_aware(topics, members, lags, "group").partitions[m].values())
              for m in ("x", "y", "z")]
    assert sorted(totals) == [4, 4, 4]  # and over every topic the counts stay within one
    with pytest.raises(AssignorInputError, match="scope: 'all' is not one of topic, group"):
        assign_lag_aware(topics, members, lags, scope="all")
