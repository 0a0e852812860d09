"""The Parquet tables (schemas in docs/metrics.md) and metrics.json, written for local paths or URIs."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from ..run.layout import LAYOUT
from ..run.metrics import Metrics
from .broker_logs import BrokerLine
from .control import OwnershipInterval, Revocation
from .intervals import SharedSpan
from .closes import SCHEMA as CLOSES_SCHEMA
from .invariants import SCHEMA as INVARIANT_SCHEMA
from .share_measures import SCHEMAS as SHARE_SCHEMAS
from .sources import join, write_bytes

TP = tuple[str, int]

SCHEMAS: dict[str, pa.Schema] = {
    "ownership_intervals": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("member", pa.string()), ("start_ms", pa.int64()),
         ("end_ms", pa.int64()), ("duration_ms", pa.int64()), ("end_reason", pa.string())]
    ),
    "revocations": pa.schema(
        [("ts_ms", pa.int64()), ("member", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
         ("kind", pa.string()), ("category", pa.string()), ("needless", pa.bool_()), ("episode_id", pa.int64()),
         ("member_pause_ms", pa.int64())]
    ),
    "rebalance_episodes": pa.schema(
        [("episode_id", pa.int64()), ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("duration_ms", pa.int64()),
         ("trigger", pa.string()), ("trigger_ms", pa.int64()), ("teardown", pa.bool_()), ("during_bounce", pa.bool_()),
         ("settled", pa.bool_()), ("formation", pa.bool_()), ("members_assigned", pa.int64()), ("revocations", pa.int64()),
         ("revocations_live", pa.int64()), ("needless_revocations", pa.int64()), ("partitions_lost", pa.int64()),
         ("partitions_paused", pa.int64()), ("pause_p50_ms", pa.float64()), ("pause_p99_ms", pa.float64()),
         ("pause_max_ms", pa.float64()), ("stop_the_world_ms", pa.int64()), ("broker_protocol", pa.string()),
         ("broker_prepare_ms", pa.int64()), ("broker_stabilized_ms", pa.int64()), ("broker_duration_ms", pa.int64()),
         ("broker_generation", pa.int64()), ("broker_reactions", pa.int64()), ("duration_difference_ms", pa.int64()),
         ("detection_ms", pa.int64()), ("coordination_ms", pa.int64()), ("delivery_ms", pa.int64()),
         ("first_record_ms", pa.int64())]
    ),
    "duplicate_ownership": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("start_ms", pa.int64()), ("end_ms", pa.int64()),
         ("duration_ms", pa.int64()), ("members", pa.string())]
    ),
    "partition_pauses": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("kind", pa.string()), ("start_ms", pa.int64()),
         ("end_ms", pa.int64()), ("pause_ms", pa.int64()), ("open", pa.bool_()), ("cause", pa.string()),
         ("cause_target", pa.string()), ("episode_id", pa.int64()), ("last_member", pa.string()),
         ("resumed_member", pa.string())]
    ),
    "stop_the_world": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("kind", pa.string()), ("start_ms", pa.int64()),
         ("end_ms", pa.int64()), ("pause_ms", pa.int64()), ("open", pa.bool_()), ("cause", pa.string()),
         ("cause_target", pa.string()), ("episode_id", pa.int64()), ("last_member", pa.string()),
         ("resumed_member", pa.string())]
    ),
    "timeseries": pa.schema(
        [("second", pa.int64()), ("processed", pa.int64()), ("processed_unique", pa.int64()), ("produced", pa.int64()),
         ("lag", pa.int64()), ("duplicates", pa.int64())]
    ),
    "latency_timeseries": pa.schema(
        [("second", pa.int64()), ("width_s", pa.int64()), ("batches", pa.int64()), ("p50_ms", pa.float64()),
         ("p99_ms", pa.float64()), ("max_ms", pa.int64())]
    ),
    "harness_actions": pa.schema(
        [("ts_ms", pa.int64()), ("kind", pa.string()), ("target", pa.string()), ("detail", pa.string())]
    ),
    "invariant_violations": INVARIANT_SCHEMA,
    "member_closes": CLOSES_SCHEMA,
    "handler_errors": pa.schema(
        [("member", pa.string()), ("ts_ms", pa.int64()), ("error_type", pa.string()), ("message", pa.string()),
         ("records", pa.int64()), ("ranges", pa.string()), ("action", pa.string())]
    ),
    "broker_rebalances": pa.schema(
        [("broker", pa.string()), ("ts_ms", pa.int64()), ("group_id", pa.string()), ("event", pa.string()),
         ("generation", pa.int64()), ("members", pa.int64()), ("state", pa.string()), ("reason", pa.string()),
         ("assignor", pa.string()), ("compute_ms", pa.int64()), ("member", pa.string())]
    ),
    **SHARE_SCHEMAS,
}


def intervals_frame(intervals: Sequence[OwnershipInterval]) -> pd.DataFrame:
    return pd.DataFrame(
        [{**asdict(iv), "duration_ms": iv.duration_ms} for iv in intervals], columns=SCHEMAS["ownership_intervals"].names
    )


def revocations_frame(revs: Sequence[Revocation]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in revs], columns=SCHEMAS["revocations"].names)


def shared_frame(shared: dict[TP, list[SharedSpan]]) -> pd.DataFrame:
    rows = [
        {"topic": tp[0], "partition": tp[1], "start_ms": s.start, "end_ms": s.end, "duration_ms": s.length,
         "members": ",".join(sorted(s.members))}
        for tp, spans in sorted(shared.items()) for s in spans
    ]
    return pd.DataFrame(rows, columns=SCHEMAS["duplicate_ownership"].names)


def broker_frame(lines: Sequence[BrokerLine]) -> pd.DataFrame:
    return pd.DataFrame([asdict(ln) for ln in lines], columns=SCHEMAS["broker_rebalances"].names)


def harness_frame(harness: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The harness's actions in time order, ``detail`` as its JSON text."""
    rows = [{"ts_ms": h["ts_ms"], "kind": h["kind"], "target": h["target"],
             "detail": json.dumps(h["detail"], separators=(",", ":"))} for h in harness]
    return pd.DataFrame(rows, columns=SCHEMAS["harness_actions"].names)


def to_table(name: str, frame: pd.DataFrame) -> pa.Table:
    """Cast to the documented schema so every run's tables read alike (empty ones included)."""
    schema = SCHEMAS[name]
    frame = frame.reindex(columns=schema.names)
    arrays = [pa.array(frame[f.name].astype(object).where(frame[f.name].notna(), None).tolist(), type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def write_outputs(spark: SparkSession, run_dir: str, metrics: Metrics, frames: dict[str, pd.DataFrame]) -> None:
    for name, frame in frames.items():
        buf = io.BytesIO()
        pq.write_table(to_table(name, frame), buf)
        write_bytes(spark, join(run_dir, LAYOUT.table(name).as_posix()), buf.getvalue())
    write_bytes(spark, join(run_dir, LAYOUT.metrics.as_posix()), metrics.model_dump_json(indent=2).encode())
