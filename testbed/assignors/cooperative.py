"""KIP-429's incremental cooperative rule, for any eager core: a pure function of the target and the owners.

An eager core answers "who should own what". Under the cooperative protocol members keep their partitions
across a rebalance, so handing a partition to its target owner while another member still holds it would
give it two owners. The rule: in this round, assign a partition only to a member that owns it already or
when nobody owns it; a partition that must move is left out of everyone's assignment, its owner sees it
gone and revokes it, and the follow-up round (which that revocation triggers) finds it unowned and assigns
it to its target owner.

Current owners come from the owned partitions members report in their subscriptions (KIP-429 subscription
v1+), judged by the generation they report (v2+: the generation of the member's last JoinGroup, as Java's
ConsumerCoordinator reports it), as Kafka's AbstractStickyAssignor does: only claims from members of the
newest generation reported count (a member that was dropped from the group and rejoins reports its old
generation and partitions it has already lost), and a partition claimed by two members of that generation
is disputed: it goes to nobody this round, so both give it up before anyone gets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from testbed.assignors.model import GroupAssignment, MemberSubscription, TopicPartition, group_by_topic


@dataclass(frozen=True, slots=True)
class Owners:
    """Who holds each partition going into a rebalance, by the members' own claims."""

    by_partition: Mapping[TopicPartition, str]
    disputed: frozenset[TopicPartition]


def current_owners(subscriptions: Sequence[MemberSubscription]) -> Owners:
    """Claims of the newest reported generation; a partition two of them claim is disputed."""
    newest = max((s.generation for s in subscriptions), default=-1)
    by_partition: dict[TopicPartition, str] = {}
    disputed: set[TopicPartition] = set()
    for sub in subscriptions:
        # -1 is "unknown" (subscription v1 has no generation): then every claim counts, as for v1 members in Kafka.
        if sub.generation != newest:
            continue
        for tp in sub.owned_partitions:
            if tp in by_partition and by_partition[tp] != sub.member_id:
                disputed.add(tp)
            by_partition.setdefault(tp, sub.member_id)
    for tp in disputed:
        del by_partition[tp]
    return Owners(by_partition, frozenset(disputed))


@dataclass(frozen=True, slots=True)
class CooperativeRound:
    """This round's assignment and the partitions held back until the follow-up round."""

    assignment: GroupAssignment
    withheld: frozenset[TopicPartition]


def cooperative_round(target: GroupAssignment, subscriptions: Sequence[MemberSubscription]) -> CooperativeRound:
    """The target minus every partition whose current owner is someone else (or disputed).

    User data passes through unchanged: it is the core's message to each member about the target.
    """
    owners = current_owners(subscriptions)
    partitions: dict[str, dict[str, list[int]]] = {}
    withheld: set[TopicPartition] = set()
    for member_id in target.partitions:
        kept = []
        for tp in sorted(target.topic_partitions(member_id)):
            owner = owners.by_partition.get(tp)
            if tp in owners.disputed or (owner is not None and owner != member_id):
                withheld.add(tp)
            else:
                kept.append(tp)
        partitions[member_id] = group_by_topic(kept)
    return CooperativeRound(GroupAssignment(partitions, dict(target.user_data)), frozenset(withheld))


def membership_key(
    partitions_per_topic: Mapping[str, int], subscriptions: Sequence[MemberSubscription]
) -> tuple:
    """What a follow-up round must share with the round that started a move: the same members with the
    same topics, over the same partition counts (owned partitions and user data change between them)."""
    return (
        tuple(sorted(partitions_per_topic.items())),
        tuple(sorted((s.member_id, tuple(sorted(s.topics))) for s in subscriptions)),
    )
