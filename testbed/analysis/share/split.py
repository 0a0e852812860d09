"""Which members of a run are share-group members (KIP-932), so that the consumer-group analysis never reads
them: a share member has no assignment, so its ``started`` would open a rebalance episode that never closes,
its death would look like a group member's, and the records of its topics would all look lost."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

SHARE_EVENTS = ("share_acquired", "share_acknowledged")


@dataclass(frozen=True)
class ShareSplit:
    """Share members (``started.group_protocol == "share"``, or any member that wrote a share event) and
    the rest; the topics each side reads."""

    share_members: frozenset[str]
    consumer_members: frozenset[str]
    started: dict[str, dict[str, Any]] = field(default_factory=dict)  # share members' started fields
    group_of: dict[str, str] = field(default_factory=dict)  # share member -> its group id
    topics_by_group: dict[str, frozenset[str]] = field(default_factory=dict)  # share group -> topics
    consumer_topics: frozenset[str] = frozenset()

    @property
    def has_share(self) -> bool:
        return bool(self.share_members)

    @property
    def share_only(self) -> bool:
        return self.has_share and not self.consumer_members

    def consumer_events(self, events: DataFrame) -> DataFrame:
        """The member events the consumer-group analysis reads (all of them in a run without share members)."""
        if not self.share_members:
            return events
        return events.filter(~F.col("member").isin(*sorted(self.share_members)))

    def consumer_acks(self, acks: DataFrame | None) -> DataFrame | None:
        """The producer acks of the consumer groups' topics: None in a share-only run (no consumer group
        could have lost them), all of them in a run without share members."""
        if acks is None or not self.share_members:
            return acks
        if not self.consumer_members:
            return None
        return acks.filter(F.col("topic").isin(*sorted(self.consumer_topics)))

    def consumer_actions(self, harness: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The harness actions the consumer-group analysis reads: none aimed at a share member (its kill is
        no consumer-group member's death, its stop no consumer-group close)."""
        if not self.share_members:
            return harness
        return [h for h in harness if h.get("target") not in self.share_members]


def split_members(events: DataFrame, started_fields: Sequence[str]) -> ShareSplit:
    """Two small queries over the (persisted) member events: every ``started`` row, and the members that
    wrote share events."""
    started_rows = events.filter(F.col("name") == "started").collect()
    with_share_events = {r["member"] for r in events.filter(F.col("name").isin(*SHARE_EVENTS))
                         .select("member").distinct().collect()}
    share: set[str] = set(with_share_events)
    consumers: set[str] = set()
    started: dict[str, dict[str, Any]] = {}
    topics: dict[str, set[str]] = {}
    consumer_topics: set[str] = set()
    group_of: dict[str, str] = {}
    for r in started_rows:
        fields = r.asDict()
        if fields.get("group_protocol") == "share" or r["member"] in with_share_events:
            share.add(r["member"])
            started[r["member"]] = {k: fields.get(k) for k in started_fields}
            if fields.get("group_id"):
                group_of[r["member"]] = fields["group_id"]
                topics.setdefault(fields["group_id"], set()).update(fields.get("topics") or [])
        else:
            consumers.add(r["member"])
            consumer_topics.update(fields.get("topics") or [])
    return ShareSplit(frozenset(share), frozenset(consumers - share), started, group_of,
                      {g: frozenset(t) for g, t in topics.items()}, frozenset(consumer_topics))
