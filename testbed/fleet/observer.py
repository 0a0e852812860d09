"""What the brokers say about a group, through the admin API; feeds waits, never verdicts."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, TopicPartition  # noqa: F401 - re-exported for callers
from confluent_kafka.admin import AdminClient


@dataclass(frozen=True)
class MemberView:
    member_id: str  # the broker's member id
    client_id: str  # testbed sets client.id to its own member id
    instance_id: str | None
    partitions: frozenset[tuple[str, int]]


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str  # e.g. STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD, ASSIGNING, RECONCILING
    assignor: str | None  # classic: the chosen strategy; consumer protocol: the server assignor
    group_type: str | None  # CLASSIC or CONSUMER where the broker reports it
    members: tuple[MemberView, ...] = field(default_factory=tuple)

    def owners(self) -> dict[tuple[str, int], list[str]]:
        out: dict[tuple[str, int], list[str]] = {}
        for m in self.members:
            for tp in m.partitions:
                out.setdefault(tp, []).append(m.client_id)
        return out

    def summary(self) -> str:
        lines = [f"group {self.group_id}: state={self.state} type={self.group_type} assignor={self.assignor} "
                 f"members={len(self.members)}"]
        for m in sorted(self.members, key=lambda m: m.client_id):
            parts = ",".join(f"{t}-{p}" for t, p in sorted(m.partitions))
            lines.append(f"  {m.client_id} ({m.instance_id or 'dynamic'}): {parts or '-'}")
        return "\n".join(lines)


class GroupObserver:
    def __init__(self, bootstrap_servers: str, group_id: str) -> None:
        self.group_id = group_id
        self._admin = AdminClient({"bootstrap.servers": bootstrap_servers,
                                   "logger": logging.getLogger("testbed.fleet.admin")})

    def describe(self, timeout_s: float = 10.0) -> GroupView:
        desc = self._admin.describe_consumer_groups([self.group_id], request_timeout=timeout_s)[
            self.group_id].result(timeout=timeout_s)
        members = tuple(
            MemberView(
                member_id=m.member_id,
                client_id=m.client_id,
                instance_id=m.group_instance_id,
                partitions=frozenset((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions
                                                                         if m.assignment else [])),
            )
            for m in desc.members
        )
        state = desc.state.name if isinstance(desc.state, ConsumerGroupState) else str(desc.state)
        group_type = getattr(desc, "type", None)
        return GroupView(
            group_id=self.group_id,
            state=state,
            assignor=desc.partition_assignor or None,
            group_type=getattr(group_type, "name", None) if group_type is not None else None,
            members=members,
        )

    def partitions_of(self, topics: list[str], timeout_s: float = 10.0) -> set[tuple[str, int]]:
        md = self._admin.list_topics(timeout=timeout_s)
        return {(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions}


def stable_with(view: GroupView, members: int, partitions: set[tuple[str, int]]) -> bool:
    """Stable, exactly ``members`` members, and every partition owned by exactly one of them."""
    if view.state != "STABLE" or len(view.members) != members:
        return False
    owners = view.owners()
    return set(owners) == partitions and all(len(o) == 1 for o in owners.values())
