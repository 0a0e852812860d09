"""KIP-429 rules for the cooperative seed variants, by hypothesis over random churn through the simulator.

Each round of each step is checked (``GroupSimulator.rounds``): no partition given to two members in one
generation; no partition given to a member while another still holds it; a partition that stays with its
owner through a step is never taken away in between. After each step every subscribed partition has an
owner (stream-join: the same partitions as its eager original, which leaves some out by design) and the
assignment equals the eager variant's for the same events: the cores are deterministic, so the two rounds
must end where one eager rebalance does. A rebalance takes at most two rounds.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import RebalanceProtocol

from testbed.assignors import simulator_assignors
from testbed.assignors.kafka_python import CooperativeFailoverAssignor, FailoverAssignor
from testbed.assignors.simulator import Bounce, GroupSimulator, Join, JoinAll, Leave, Round, SetLags

CHURN = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOPICS = ("t0", "t1", "t2")
SEED_ASSIGNORS = ("lag-aware", "lag-aware-group", "failover", "sticky-stream-join")


def kip429_violations(rounds: list[Round]) -> list[str]:
    """Every breach of KIP-429's rules in these rounds. Per rebalance (its rounds share ``Round.rebalance``):
    a partition its owner holds before and after must be in that owner's assignment in every round."""
    found = []
    for r in rounds:
        given_to = Counter(tp for parts in r.assigned.values() for tp in parts)
        found += [f"gen {r.generation}: {tp} assigned to two members" for tp, n in given_to.items() if n > 1]
        for member, parts in r.assigned.items():
            for tp in parts - r.owned_before.get(member, frozenset()):
                holders = [m for m, owned in r.owned_before.items() if m != member and tp in owned]
                if holders:
                    found.append(f"gen {r.generation}: {tp} given to {member} while {holders} still held it")
    for rebalance in {r.rebalance for r in rounds}:
        its = [r for r in rounds if r.rebalance == rebalance]
        for member, before in its[0].owned_before.items():
            for tp in before & its[-1].assigned.get(member, frozenset()):
                found += [f"gen {r.generation}: {tp} revoked from {member}, who keeps it"
                          for r in its if tp not in r.assigned[member]]
    return found


@st.composite
def churn(draw, same_topics: bool, max_steps=7):
    """Joins (alone or together), leaves, bounces and new lags; per member a topic set and a priority."""
    events, alive, next_id = [], [], 0

    def new_join() -> Join:
        nonlocal next_id
        name = f"c{next_id:02d}"
        next_id += 1
        alive.append(name)
        topics = TOPICS if same_topics else tuple(sorted(draw(st.sets(st.sampled_from(TOPICS), min_size=1))))
        return Join(member=name, topics=topics, options={"priority": draw(st.integers(0, 3))})

    for _ in range(draw(st.integers(1, max_steps))):
        kind = draw(st.sampled_from(["join", "join", "join-all", "leave", "bounce", "lags"])) if alive else "join"
        if kind == "join":
            events.append(new_join())
        elif kind == "join-all":
            events.append(JoinAll(joins=tuple(new_join() for _ in range(draw(st.integers(2, 3))))))
        elif kind == "lags":
            events.append(SetLags(lags={t: draw(st.lists(st.integers(0, 500), min_size=8, max_size=8)) for t in TOPICS}))
        else:  # a leave ends the member; a bounced one comes back
            victim = draw(st.sampled_from(alive))
            events.append({"leave": Leave, "bounce": Bounce}[kind](member=victim))
            alive[:] = [m for m in alive if m != victim or kind == "bounce"]
    return events


def membership_changes(event) -> int:
    return 2 if isinstance(event, Bounce) else 1


def check_against_eager(eager_name: str, counts: dict[str, int], events) -> None:
    cooperative = GroupSimulator(eager_name + "-cooperative", counts)
    eager = GroupSimulator(eager_name, counts)
    assert RebalanceProtocol.COOPERATIVE in simulator_assignors.assignor_factory(cooperative.assignor_name)(
        "x", {}, dict).supported_protocols()
    for event in events:
        first_round = len(cooperative.rounds)
        step = cooperative.apply(event)
        expected = eager.apply(event)
        problems = kip429_violations(cooperative.rounds[first_round:])
        assert not problems, f"{event}: {problems}"
        assert step.assignment == expected.assignment, f"{event}: cooperative ended elsewhere than eager"
        assert step.unassigned_subscribed == expected.unassigned_subscribed
        if not eager_name.startswith("sticky-stream-join") and step.members:
            assert step.unassigned_subscribed == 0, f"{event}: {step}"
        assert step.rebalances <= 2 * membership_changes(event), f"{event}: {step.rebalances} rounds"


@CHURN
@given(st.sampled_from(["lag-aware", "lag-aware-group", "failover"]), st.integers(1, 8), churn(same_topics=False))
def test_cooperative_lag_aware_and_failover_keep_kip429_rules_and_end_at_the_eager_target(name, per_topic, events):
    check_against_eager(name, {t: per_topic for t in TOPICS}, events)


@CHURN
@given(st.integers(1, 12), churn(same_topics=True))
def test_cooperative_stream_join_keeps_kip429_rules_and_ends_at_the_eager_target(per_topic, events):
    check_against_eager("sticky-stream-join", {t: per_topic for t in TOPICS}, events)


@CHURN
@given(st.lists(st.integers(1, 12), min_size=3, max_size=3), churn(same_topics=False))
def test_cooperative_stream_join_with_uneven_topics_leaves_out_what_eager_leaves_out(sizes, events):
    check_against_eager("sticky-stream-join", dict(zip(TOPICS, sizes)), events)


# ---- the checks can fail ------------------------------------------------------------------------------


class _NoWithholding(CooperativeFailoverAssignor):
    """A cooperative assignor that skips the KIP-429 rule: the eager target at once."""

    def assign(self, cluster, members):
        return FailoverAssignor.assign(self, cluster, members)  # the eager path: the target as it is


def test_the_round_checks_catch_an_assignor_that_hands_over_owned_partitions(monkeypatch):
    monkeypatch.setitem(simulator_assignors.ASSIGNOR_FACTORIES, "no-withholding",
                        lambda member, options, lags: _NoWithholding(priority=options.get("priority")))
    group = GroupSimulator("no-withholding", {"t0": 2})
    group.apply(Join(member="low", topics=("t0",), options={"priority": 1}))
    group.apply(Join(member="high", topics=("t0",), options={"priority": 9}))
    problems = kip429_violations(group.rounds[1:])
    assert problems and all("while ['low'] still held it" in p for p in problems)


def test_the_round_checks_catch_a_kept_partition_revoked_and_given_back():
    rounds = [
        Round(1, 1, {"a": frozenset({("t", 0), ("t", 1)})}, {"a": frozenset({("t", 1)})}),
        Round(2, 1, {"a": frozenset({("t", 1)}), "b": frozenset()}, {"a": frozenset({("t", 0), ("t", 1)}), "b": frozenset()}),
        Round(3, 2, {"a": frozenset(), "b": frozenset()}, {"a": frozenset({("t", 2)}), "b": frozenset({("t", 2)})}),
    ]
    problems = kip429_violations(rounds)
    assert "gen 1: ('t', 0) revoked from a, who keeps it" in problems
    assert "gen 3: ('t', 2) assigned to two members" in problems


@pytest.mark.parametrize("name", SEED_ASSIGNORS)
def test_a_joining_member_gets_moved_partitions_only_in_the_second_round(name):
    group = GroupSimulator(name + "-cooperative", {"t0": 4, "t1": 4})
    group.apply(Join(member="a", topics=("t0", "t1"), options={"priority": 1}))
    step = group.apply(Join(member="b", topics=("t0", "t1"), options={"priority": 9}))
    first, second = group.rounds[-2:]
    assert step.rebalances == 2 and step.moved_from_live > 0
    assert first.assigned["b"] == frozenset()  # everything b gets was a's: nothing in round one
    assert second.assigned["b"] and second.assigned["a"] == first.assigned["a"]
