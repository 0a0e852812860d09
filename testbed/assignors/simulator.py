"""Offline rebalance simulator: a churn sequence applied to an assignor, no broker.

Each step applies one event (join, leave, bounce, new lags, new partition counts) and runs the group
protocol the way kafka-python's coordinator does it: every member encodes ``metadata(topics)``, the
leader (the longest-lived member) decodes them and calls ``assign(cluster, members)``, every member
decodes its ``ConsumerProtocolAssignment`` and gets ``on_assignment(assignment, generation)``. A
COOPERATIVE assignor gets follow-up rounds while any member lost a partition, as KIP-429 prescribes.

Member ids are the member names, stable across bounces, so results read naturally; a bounce still
loses the member's assignor state (a new instance), as a restarted process would.

Moves are counted against the previous step's final ownership: ``moved_from_live`` is the cost a user
feels (a partition taken from a member that is still in the group); partitions of departed members
must move and are counted apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from pydantic import BaseModel, ConfigDict, Field

from testbed.assignors.model import AssignorInputError, TopicPartition
from testbed.assignors.simulator_assignors import FakeCluster, assignor_factory

MAX_COOPERATIVE_ROUNDS = 5


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Join(_Event):
    kind: Literal["join"] = "join"
    member: str
    topics: tuple[str, ...]
    options: dict[str, Any] = Field(default_factory=dict, description="per-member assignor options, e.g. priority")


class JoinAll(_Event):
    """Several members join before one rebalance, e.g. a group's first start with everyone at once."""

    kind: Literal["join-all"] = "join-all"
    joins: tuple[Join, ...]


class Leave(_Event):
    kind: Literal["leave"] = "leave"
    member: str


class Bounce(_Event):
    """Leave, then rejoin with the same topics and options but a fresh assignor: two rebalances."""

    kind: Literal["bounce"] = "bounce"
    member: str


class SetLags(_Event):
    kind: Literal["lags"] = "lags"
    lags: dict[str, list[int]]


class SetPartitions(_Event):
    kind: Literal["partitions"] = "partitions"
    partitions_per_topic: dict[str, int]


ChurnEvent = Annotated[Union[Join, JoinAll, Leave, Bounce, SetLags, SetPartitions], Field(discriminator="kind")]


class StepResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    event: str
    rebalances: int = Field(description="assign() calls in this step, cooperative follow-up rounds included")
    members: int
    moved_from_live: int = Field(description="partitions taken from a member that is still in the group")
    reassigned_from_departed: int
    newly_assigned: int = Field(description="partitions that had no owner before the step and have one now")
    unassigned_subscribed: int = Field(description="partitions of a subscribed topic that nobody owns after")
    count_min: int
    count_max: int
    minimal_moves: int | None = Field(
        description="fewest moves from live members any count-balanced result needs; None unless every member "
        "subscribes to every topic"
    )
    lag_spread: int | None = Field(description="max - min total lag per member; None (unknown) when no lags were set")
    assignment: dict[str, list[TopicPartition]]

    @property
    def count_spread(self) -> int:
        return self.count_max - self.count_min


class SimulationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    assignor: str
    steps: list[StepResult]


@dataclass(frozen=True)
class Round:
    """One JoinGroup/SyncGroup round as the members saw it: what each held going in, what each was given.

    Kept so tests can check the KIP-429 rules round by round (``GroupSimulator.rounds``); a step's
    result only shows where it ended.
    """

    generation: int
    rebalance: int  # the rebalance (membership change) the round belongs to: a cooperative one has several
    owned_before: dict[str, frozenset[TopicPartition]]
    assigned: dict[str, frozenset[TopicPartition]]


@dataclass
class _Member:
    name: str
    topics: tuple[str, ...]
    options: dict[str, Any]
    assignor: AbstractPartitionAssignor
    owned: set[TopicPartition] = field(default_factory=set)


class GroupSimulator:
    """One consumer group under one assignor; ``apply`` an event, get a :class:`StepResult`."""

    def __init__(self, assignor: str, partitions_per_topic: Mapping[str, int]) -> None:
        self.assignor_name = assignor
        self._factory = assignor_factory(assignor)
        self.partitions_per_topic = dict(partitions_per_topic)
        self.lags: dict[str, list[int]] | None = None
        self.members: dict[str, _Member] = {}  # insertion order = join order; the first is the leader
        self.generation = 0
        self._steps = 0
        self.rounds: list[Round] = []
        self._rebalances = 0

    def _new_member(self, name: str, topics: Sequence[str], options: Mapping[str, Any]) -> _Member:
        instance = self._factory(name, options, lambda: self.lags or {})
        return _Member(name=name, topics=tuple(topics), options=dict(options), assignor=instance)

    def apply(self, event: ChurnEvent) -> StepResult:
        before = self.ownership()
        # A bounced member restarts: what it held counts as departed, not as taken from a live member.
        stayed = set(self.members) - ({event.member} if isinstance(event, Bounce) else set())
        phases: list[tuple[dict[TopicPartition, str], set[str]]] = [(before, stayed)]
        rebalances = 0
        if isinstance(event, (Join, JoinAll)):
            for join in event.joins if isinstance(event, JoinAll) else (event,):
                if join.member in self.members:
                    raise AssignorInputError(f"join.member: {join.member!r} is already in the group")
                self.members[join.member] = self._new_member(join.member, join.topics, join.options)
            rebalances += self.rebalance()
        elif isinstance(event, Leave):
            self._require_member(event)
            del self.members[event.member]
            rebalances += self.rebalance()
        elif isinstance(event, Bounce):
            old = self._require_member(event)
            del self.members[event.member]
            rebalances += self.rebalance()
            # Its return is a second membership change: what then leaves the others for it moved too.
            phases.append((self.ownership(), set(self.members)))
            self.members[event.member] = self._new_member(old.name, old.topics, old.options)
            rebalances += self.rebalance()
        elif isinstance(event, SetLags):
            self.lags = {t: list(v) for t, v in event.lags.items()}
            rebalances += self.rebalance()
        else:
            self.partitions_per_topic = dict(event.partitions_per_topic)
            rebalances += self.rebalance()
        self._steps += 1
        return self._step_result(event, phases, rebalances)

    def _require_member(self, event: Leave | Bounce) -> _Member:
        member = self.members.get(event.member)
        if member is None:
            raise AssignorInputError(f"{event.kind}.member: {event.member!r} is not in the group {sorted(self.members)}")
        return member

    def ownership(self) -> dict[TopicPartition, str]:
        return {tp: m.name for m in self.members.values() for tp in m.owned}

    def rebalance(self) -> int:
        """Run one (eager) or several (cooperative) JoinGroup/SyncGroup rounds; returns the count."""
        if not self.members:
            return 0
        leader = next(iter(self.members.values()))
        self._rebalances += 1
        cooperative = RebalanceProtocol.COOPERATIVE in leader.assignor.supported_protocols()
        rounds = 0
        while True:
            rounds += 1
            lost_any = self._one_round(leader)
            if not (cooperative and lost_any) or rounds >= MAX_COOPERATIVE_ROUNDS:
                return rounds

    def _one_round(self, leader: _Member) -> bool:
        self.generation += 1
        wire_members = []
        for m in self.members.values():
            encoded = m.assignor.metadata(set(m.topics)).encode()
            # The coordinator decodes the bytes it got from the broker before calling assign().
            wire = JoinGroupResponse.JoinGroupResponseMember(member_id=m.name, group_instance_id=None, metadata=encoded)
            wire.metadata = ConsumerProtocolSubscription.decode(encoded)
            wire_members.append(wire)
        assignments = leader.assignor.assign(FakeCluster(self.partitions_per_topic), wire_members)
        owned_before = {m.name: frozenset(m.owned) for m in self.members.values()}
        lost_any = False
        for m in self.members.values():
            received = ConsumerProtocolAssignment.decode(assignments[m.name].encode())
            new_owned = {(tp.topic, tp.partition) for tp in received.partitions()}
            lost_any = lost_any or bool(m.owned - new_owned)
            m.owned = new_owned
            m.assignor.on_assignment(received, self.generation)
        assigned = {m.name: frozenset(m.owned) for m in self.members.values()}
        self.rounds.append(Round(self.generation, self._rebalances, owned_before, assigned))
        return lost_any

    def _step_result(
        self, event: _Event, phases: list[tuple[dict[TopicPartition, str], set[str]]], rebalances: int
    ) -> StepResult:
        """Moves are counted per membership change of the step (a bounce is two: the leave, then the return), so
        that partitions handed over and back within one step are counted both ways."""
        after = self.ownership()
        moved = departed = 0
        minimal: int | None = 0
        # each phase ends where the next starts (its members: the next phase's), the last with the group now
        ends = [*phases[1:], (after, set(self.members))]
        for (start, stayed), (end, members_then) in zip(phases, ends):
            stayed = stayed & members_then
            for tp, owner in start.items():
                if end.get(tp) == owner:
                    continue
                if owner in stayed:
                    moved += 1
                else:
                    departed += 1
            phase_minimal = self._minimal_moves(start, stayed, members_then)
            minimal = None if minimal is None or phase_minimal is None else minimal + phase_minimal
        before = phases[0][0]
        newly = sum(1 for tp in after if tp not in before)
        subscribed = {t for m in self.members.values() for t in m.topics if t in self.partitions_per_topic}
        total_subscribed = sum(self.partitions_per_topic[t] for t in subscribed)
        counts = [len(m.owned) for m in self.members.values()] or [0]
        return StepResult(
            index=self._steps,
            event=_describe(event),
            rebalances=rebalances,
            members=len(self.members),
            moved_from_live=moved,
            reassigned_from_departed=departed,
            newly_assigned=newly,
            unassigned_subscribed=total_subscribed - sum(1 for tp in after if tp[0] in subscribed),
            count_min=min(counts),
            count_max=max(counts),
            minimal_moves=minimal,
            lag_spread=self._lag_spread(),
            assignment={m.name: sorted(m.owned) for m in self.members.values()},
        )

    def _minimal_moves(self, before: Mapping[TopicPartition, str], stayed: set[str], members: set[str]) -> int | None:
        """The fewest partitions live members had to give up for a count-balanced result among ``members``.
        sticky-stream-join balances partition *numbers* (a number moves with every topic's partition of it), so
        for it the balance is over numbers, then counted in topic partitions."""
        all_topics = set(self.partitions_per_topic)
        if not members or any(set(m.topics) != all_topics for m in self.members.values()):
            return None
        if self.assignor_name.startswith("sticky-stream-join"):  # its cooperative variant too
            numbers = min(self.partitions_per_topic.values())
            kept_numbers: dict[str, set[int]] = {name: set() for name in members}
            for (_, p), owner in before.items():
                if owner in stayed and owner in kept_numbers and p < numbers:
                    kept_numbers[owner].add(p)
            needed = minimal_moves_for_balance([len(n) for n in kept_numbers.values()], numbers)
            return needed * len(all_topics)
        kept_counts = {name: 0 for name in members}
        for tp, owner in before.items():
            if owner in stayed and owner in kept_counts and tp[1] < self.partitions_per_topic.get(tp[0], 0):
                kept_counts[owner] += 1
        return minimal_moves_for_balance(kept_counts.values(), sum(self.partitions_per_topic.values()))

    def _lag_spread(self) -> int | None:
        if self.lags is None:
            return None
        totals = []
        for m in self.members.values():
            totals.append(sum(self.lags[t][p] for t, p in m.owned if t in self.lags and p < len(self.lags[t])))
        return max(totals) - min(totals) if totals else 0


def minimal_moves_for_balance(current_counts: Iterable[int], total_partitions: int) -> int:
    """Fewest partitions that must leave their member so counts differ by at most one.

    The ceil(P/M) targets go to the members holding most now; each member then gives up its excess.
    """
    counts = sorted(current_counts, reverse=True)
    if not counts:
        return 0
    base, extra = divmod(total_partitions, len(counts))
    return sum(max(0, c - (base + (1 if i < extra else 0))) for i, c in enumerate(counts))


def _describe(event: _Event) -> str:
    if isinstance(event, (Join, Leave, Bounce)):
        return f"{event.kind} {event.member}"
    if isinstance(event, JoinAll):
        return "join-all " + ",".join(j.member for j in event.joins)
    return event.kind


def simulate(
    assignor: str, partitions_per_topic: Mapping[str, int], events: Iterable[ChurnEvent]
) -> SimulationResult:
    group = GroupSimulator(assignor, partitions_per_topic)
    return SimulationResult(assignor=assignor, steps=[group.apply(e) for e in events])
