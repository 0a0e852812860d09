"""Property tests (hypothesis) over random groups and churn, for the seed cores and the sticky built-ins."""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testbed.assignors.failover import assign_failover, encode_priority
from testbed.assignors.lag_aware import assign_lag_aware
from testbed.assignors.model import MemberSubscription
from testbed.assignors.simulator import Bounce, GroupSimulator, Join, Leave, minimal_moves_for_balance
from testbed.assignors.stream_join import assign_sticky_stream_join, encode_subscription_user_data

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHURN = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOPICS = ["t0", "t1", "t2"]
# Stated slack for kafka-python's KIP-54 sticky assignors: moves from live members beyond the minimum a
# count-balanced result needs. 0 means "as sticky as possible" (see docs/assignors.md).
STICKY_SLACK = 0


@st.composite
def groups(draw, max_members=6):
    counts = {t: draw(st.integers(0, 12)) for t in draw(st.sets(st.sampled_from(TOPICS), min_size=1))}
    n = draw(st.integers(1, max_members))
    members = [
        MemberSubscription(member_id=f"m{i}", topics=frozenset(draw(st.sets(st.sampled_from(sorted(counts)), min_size=1))))
        for i in range(n)
    ]
    return counts, members


def assert_exactly_once(result, counts, members):
    owners = result.owner_by_partition()  # raises on a double assignment
    subscribed = {t for m in members for t in m.topics}
    assert set(owners) == {(t, p) for t in subscribed for p in range(counts[t])}
    topics_of = {m.member_id: m.topics for m in members}
    assert all(t in topics_of[owner] for (t, _), owner in owners.items())


@FAST
@given(groups(), st.data())
def test_lag_aware_assigns_once_balances_counts_per_topic_and_is_deterministic(group, data):
    counts, members = group
    lags = {t: data.draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n)) for t, n in counts.items()}
    result = assign_lag_aware(counts, members, lags)
    assert_exactly_once(result, counts, members)
    for topic in counts:
        per_member = [len(result.partitions[m.member_id].get(topic, [])) for m in members if topic in m.topics]
        if per_member:
            assert max(per_member) - min(per_member) <= 1
    shuffled = data.draw(st.permutations(members))
    assert assign_lag_aware(counts, shuffled, lags).partitions == result.partitions


@FAST
@given(groups(), st.data())
def test_failover_gives_each_topic_to_its_top_subscriber(group, data):
    counts, members = group
    members = [
        MemberSubscription(m.member_id, m.topics, encode_priority(data.draw(st.integers(0, 3)))) for m in members
    ]
    result = assign_failover(counts, members)
    assert_exactly_once(result, counts, members)
    for (topic, _), owner in result.owner_by_partition().items():
        best = max((int.from_bytes(m.user_data, "big"), -int(m.member_id[1:])) for m in members if topic in m.topics)
        assert owner == f"m{-best[1]}"
    assert assign_failover(counts, data.draw(st.permutations(members))).partitions == result.partitions


@FAST
@given(st.integers(1, 30), st.integers(1, 8), st.data())
def test_stream_join_co_partitions_balances_numbers_and_moves_only_what_balance_needs(n, m, data):
    topics = frozenset({"left", "right"})
    # A previous assignment: each number owned by one random old member (or nobody), all at epoch 5.
    previous_owner = data.draw(st.lists(st.integers(-1, m + 1), min_size=n, max_size=n))
    members = []
    for i in range(m):
        owned = [p for p, o in enumerate(previous_owner) if o == i]
        members.append(MemberSubscription(f"m{i}", topics, encode_subscription_user_data(5, owned)))
    result = assign_sticky_stream_join({"left": n, "right": n}, members)
    assert_exactly_once(result, {"left": n, "right": n}, members)
    numbers = {mid: by_topic.get("left", []) for mid, by_topic in result.partitions.items()}
    assert all(by_topic.get("right", []) == numbers[mid] for mid, by_topic in result.partitions.items())
    sizes = [len(v) for v in numbers.values()]
    assert max(sizes) - min(sizes) <= 1
    kept_before = Counter(o for o in previous_owner if 0 <= o < m)
    moved = sum(1 for p, o in enumerate(previous_owner) if 0 <= o < m and p not in numbers[f"m{o}"])
    assert moved == minimal_moves_for_balance([kept_before.get(i, 0) for i in range(m)], n)
    assert assign_sticky_stream_join({"left": n, "right": n}, data.draw(st.permutations(members))).partitions == result.partitions


@st.composite
def churn(draw, max_steps=8):
    """Joins, leaves and bounces of members that all read every topic."""
    events, alive, next_id = [], [], 0
    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["join", "join", "leave", "bounce"])) if alive else "join"
        if kind == "join":
            events.append(Join(member=f"c{next_id:02d}", topics=tuple(TOPICS)))
            alive.append(f"c{next_id:02d}")
            next_id += 1
        else:
            victim = draw(st.sampled_from(alive))
            events.append(Leave(member=victim) if kind == "leave" else Bounce(member=victim))
            if kind == "leave":
                alive.remove(victim)
    return events


def run_churn(assignor, counts, events):
    group = GroupSimulator(assignor, counts)
    for event in events:
        step = group.apply(event)
        owners = Counter(tp for parts in step.assignment.values() for tp in parts)
        assert all(c == 1 for c in owners.values())
        if step.members:
            assert step.unassigned_subscribed == 0
        yield step


@CHURN
@given(st.sampled_from(["sticky", "cooperative-sticky", "lag-aware", "roundrobin"]), st.integers(1, 7), churn())
def test_balanced_assignors_keep_counts_within_one_through_churn(assignor, per_topic, events):
    for step in run_churn(assignor, {t: per_topic for t in TOPICS}, events):
        if step.members and assignor != "lag-aware":  # lag-aware balances per topic, not in total
            assert step.count_spread <= 1, step


@CHURN
@given(st.sampled_from(["sticky", "cooperative-sticky"]), st.integers(1, 7), churn())
def test_kafka_python_sticky_moves_no_more_than_balance_needs(assignor, per_topic, events):
    for step in run_churn(assignor, {t: per_topic for t in TOPICS}, events):
        if step.members and not step.event.startswith("bounce"):
            assert step.moved_from_live <= step.minimal_moves + STICKY_SLACK, step


@CHURN
@given(st.integers(1, 12), churn())
def test_stream_join_stays_co_partitioned_and_deterministic_through_churn(per_topic, events):
    counts = {t: per_topic for t in TOPICS}
    first = [s.assignment for s in run_churn("sticky-stream-join", counts, events)]
    for assignment in first:
        for parts in assignment.values():
            by_topic = [{p for t, p in parts if t == topic} for topic in TOPICS]
            assert by_topic[0] == by_topic[1] == by_topic[2]
    assert [s.assignment for s in run_churn("sticky-stream-join", counts, events)] == first
