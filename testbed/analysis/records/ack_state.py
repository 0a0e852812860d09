"""Whether the producers' acknowledgements are complete enough to count lost records.

Lost records and lag need every acknowledged record: a producer whose ack log is missing, or ack logs
that hold nothing at all, leave them unknown (never 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from ...history.events import Action
from ...run.layout import LAYOUT
from ..spark.sources import join, matches


@dataclass(frozen=True)
class AckState:
    unknown_reason: str | None  # why acked/lost/lag cannot be known; None when they can
    note: str | None = None


def ack_state(spark: SparkSession, root: str, acked: int | None, harness: list[dict[str, Any]]) -> AckState:
    """``acked``: how many records the ack logs name (any positive number will do), None without ack logs."""
    starts = [h for h in harness if h["kind"] == Action.LOAD_START]
    producers = sorted({p for h in starts for p in (h["detail"].get("producers") or [])})
    if acked is None:
        reason = "no ack log in history/acks/" + (" although the load started" if starts else "")
        return AckState(reason, f"{reason}: lost records unknown, latency from batch produce_ts bounds")
    missing = [p for p in producers if not matches(spark, join(root, LAYOUT.ack_log(p).as_posix()))]
    if missing:
        reason = f"ack log of {', '.join(missing)} missing (history/acks/<producer>.jsonl): its acknowledgements are unknown"
        return AckState(reason, reason)
    if acked == 0:
        reason = "the ack logs hold no complete acknowledgement"
        return AckState(reason, reason)
    return AckState(None)
