"""Acknowledgements a killed share member sent and never heard back about (KIP-932), and what the brokers did
with them.

A share member writes ``share_ack_sent`` when it hands acknowledgements to its client and ``share_acknowledged``
when the broker's answer arrives. A member SIGKILLed in between leaves the first without the second, while the
broker may have taken them: a record accepted that way is never delivered again, and no history says it was
accepted. The brokers' share-group start offset (harness ``share_group_offsets``, asked at the drain's end) tells:
every offset below it is in a terminal state. Definitions in docs/metrics.md ("Share groups").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...history.events import Action
from .context import KILLED
from .deliveries import RECORD, _lookup

COMPLETING = ("accept", "reject")  # a release sent and taken gives the record back: it comes again


@dataclass(frozen=True)
class StartOffsets:
    """The brokers' start offset per (topic, partition) of one share group at the drain's end, or why unknown."""

    offsets: dict[tuple[str, int], int | None]
    unknown: str | None = None

    def below(self, topic: str, partition: int, offset: int) -> bool:
        start = self.offsets.get((topic, partition))
        return start is not None and offset < start


def start_offsets(harness: list[dict[str, Any]], groups: list[str]) -> dict[str, StartOffsets]:
    """The last ``share_group_offsets`` action of each group; a group without one, or whose listing failed, gets
    its offsets unknown with the reason."""
    found: dict[str, StartOffsets] = {}
    for h in harness:
        detail = h.get("detail") or {}
        group = detail.get("group_id")
        if h["kind"] != Action.SHARE_GROUP_OFFSETS or not group:
            continue
        if detail.get("error"):
            found[group] = StartOffsets({}, f"the brokers' start offsets of {group} unknown: {detail['error'][:200]}")
            continue
        offsets = {}
        for key, value in (detail.get("offsets") or {}).items():
            topic, _, partition = str(key).rpartition("-")
            offsets[(topic, int(partition))] = int(value) if value is not None else None
        found[group] = StartOffsets(offsets)
    for g in groups:
        found.setdefault(g, StartOffsets({}, f"no share_group_offsets action for {g} (a run before it was recorded, "
                                             "or one without a drain)"))
    return found


def sent_acks(events: DataFrame, group_of: Mapping[str, str]) -> DataFrame:
    """One row per offset per ``share_ack_sent``: RECORD, ``member``, ``sent_ms``, ``sent_type``."""
    rows = events.filter(F.col("name") == "share_ack_sent").select(
        "member", F.col("ts_ms").alias("sent_ms"), F.col("type").alias("sent_type"), "topic", "partition",
        F.explode("acknowledged").alias("offset"))
    return rows.select(_lookup(group_of, F.col("member"), "string").alias("group_id"), "topic", "partition",
                       F.col("offset").cast("long").alias("offset"), "member", "sent_ms", "sent_type")


def unanswered(ds: DataFrame, sent: DataFrame, starts: Mapping[str, StartOffsets]) -> DataFrame:
    """Records whose last delivery got no answer at all, held by a member that was killed after it sent an accept
    or reject for it (``share_ack_sent`` at or after the acquisition, at or before its end): RECORD and
    ``completed`` (below the brokers' start offset of its group: the broker took it; null when the offsets are
    unknown)."""
    last = ds.filter(F.col("is_last") & (F.col("acks") == 0) & (F.col("end_kind") == KILLED)).select(
        *RECORD, "member", "acquired_ms", "end_ms")
    mine = sent.filter(F.col("sent_type").isin(*COMPLETING))
    hit = last.join(mine, [*RECORD, "member"]).filter(
        (F.col("sent_ms") >= F.col("acquired_ms")) & (F.col("sent_ms") <= F.col("end_ms"))).select(*RECORD).distinct()
    known = {f"{g}\u0000{t}\u0000{p}": o for g, s in starts.items() if s.unknown is None
             for (t, p), o in s.offsets.items() if o is not None}
    unknown = [g for g, s in starts.items() if s.unknown is not None]
    key = F.concat_ws("\u0000", "group_id", "topic", F.col("partition").cast("string"))
    start = _lookup(known, key, "long")
    fallback = (F.when(F.col("group_id").isin(*unknown), F.lit(None).cast("boolean")).otherwise(F.lit(False))
                if unknown else F.lit(False))
    completed = F.when(start.isNotNull(), F.col("offset") < start).otherwise(fallback)
    return hit.select(*RECORD, completed.alias("completed"))


__all__ = ["COMPLETING", "StartOffsets", "sent_acks", "start_offsets", "unanswered"]
