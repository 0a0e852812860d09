"""Share-group measures (KIP-932): metrics, tables and examples from the deliveries of ``share_deliveries``.

Definitions in docs/metrics.md ("Share groups"). Counts are made in Spark; only aggregates, the delivery
table (at most ``MAX_DELIVERY_ROWS`` rows) and bounded examples reach the driver. A run without share
members gets every share metric unknown; a run with only share members gets every consumer-group metric
unknown (``complete``), never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..history.events import FAULTS
from ..run.metrics import SHARE_METRICS, MetricValue, Metrics, known, unknown
from .ack_state import ack_state
from .share_context import LEFT, cut_offs, member_ends, share_group_configs
from .share_deliveries import (FAULT_REASONS, RECORD, acknowledgements, acquisitions, deliveries, judge_late,
                               matched_acks)
from .share_split import ShareSplit
from .sources import read_acks

EXAMPLES = 10
MAX_DELIVERY_ROWS = 1_000_000  # rows kept in the share_deliveries table (later deliveries first); metrics count all
NO_SHARE = "no share-group member in this run"
NOT_CONSUMER = "no consumer-group member in this run (a share-group run: see the share_* figures)"
# Consumer-group metrics that still hold in a share-only run.
RUN_WIDE = ("run_duration_ms", "members")
# Notes of the consumer-group analysis that speak of a consumer group: dropped in a share-only run.
CONSUMER_NOTES = ("no ack log", "no member named its group")

DELIVERY_SCHEMA = pa.schema(
    [("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
     ("member", pa.string()), ("acquired_ms", pa.int64()), ("delivery", pa.int64()), ("delivery_count", pa.int32()),
     ("lock_expires_ms", pa.int64()), ("ack_type", pa.string()), ("ack_mode", pa.string()),
     ("ack_sent_ms", pa.int64()), ("ack_ms", pa.int64()), ("ack_error", pa.string()), ("acks", pa.int64()),
     ("late_ack", pa.bool_()), ("reason", pa.string()), ("previous_member", pa.string()),
     ("previous_acquired_ms", pa.int64()), ("since_previous_ms", pa.int64()), ("fault_ms", pa.int64()),
     ("lock_left_ms", pa.int64()), ("acquired_by_ms", pa.int64())])
COUNTS_SCHEMA = pa.schema([("delivery_count", pa.int64()), ("records", pa.int64()), ("acquisitions", pa.int64()),
                           ("records_by_deliveries", pa.int64())])
TIMELINE_SCHEMA = pa.schema([("second", pa.int64()), ("member", pa.string()), ("reason", pa.string()),
                             ("acquisitions", pa.int64())])
SCHEMAS = {"share_deliveries": DELIVERY_SCHEMA, "share_delivery_counts": COUNTS_SCHEMA,
           "share_timeline": TIMELINE_SCHEMA}


@dataclass
class ShareResult:
    """What the share analysis adds to a run's analysis."""

    split: ShareSplit
    values: dict[str, MetricValue]
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    share_errors: int = 0
    faults: list[str] = field(default_factory=list)  # fault kinds of the whole run, share members' included

    def complete(self, result: Metrics) -> Metrics:
        """The consumer-group result with the share figures added: share members in the configuration, every
        consumer-group figure unknown in a share-only run (its ack notes dropped: they speak of a consumer
        group there is not)."""
        metrics = dict(result.metrics)
        notes = list(result.notes)
        if self.split.share_only:
            metrics.update({n: unknown(n, NOT_CONSUMER) for n in metrics if n not in SHARE_METRICS and n not in RUN_WIDE})
            notes = [n for n in notes if not n.startswith(CONSUMER_NOTES)]
        metrics.update(self.values)
        config = result.config
        if self.split.has_share:
            members = {**config.members, **self.split.started}
            metrics["members"] = known("members", len(members))
            config = config.model_copy(update={
                "members": dict(sorted(members.items())),
                "clients": sorted(set(config.clients) | {s["client"] for s in self.split.started.values() if s.get("client")}),
                "protocol": "share" if self.split.share_only else config.protocol,
                "faults": sorted(set(config.faults) | set(self.faults))})
        return result.model_copy(update={"metrics": metrics, "notes": notes + self.notes, "config": config,
                                         "examples": {**result.examples, **self.examples}})


def no_share_values(reason: str = NO_SHARE) -> dict[str, MetricValue]:
    return {name: unknown(name, reason) for name in SHARE_METRICS}


def empty_frames() -> dict[str, pd.DataFrame]:
    return {name: pd.DataFrame(columns=schema.names) for name, schema in SCHEMAS.items()}


def analyse_share(spark: SparkSession, split: ShareSplit, events: DataFrame, harness: list[dict[str, Any]],
                  cutoff_ms: int | None, run_end_ms: int | None, root: str, acks_path: str | None) -> ShareResult:
    if not split.has_share:
        return ShareResult(split, no_share_values(), empty_frames())
    share_events = events.filter(F.col("member").isin(*sorted(split.share_members)))
    configs = share_group_configs(harness)
    ends_and_errors = share_events.filter(F.col("name").isin("stopped", "error")).groupBy("member", "name").agg(
        F.min("ts_ms").alias("ts"), F.count(F.lit(1)).alias("n")).collect()
    stopped = {r["member"]: int(r["ts"]) for r in ends_and_errors if r["name"] == "stopped"}
    errors = sum(int(r["n"]) for r in ends_and_errors if r["name"] == "error")
    acqs = acquisitions(share_events, split.group_of)
    acks = matched_acks(acqs, acknowledgements(share_events, split.group_of))
    ds = deliveries(acqs, acks, configs, member_ends(harness, stopped), cut_offs(harness, run_end_ms))
    ds = ds.persist(StorageLevel.MEMORY_AND_DISK)
    acks = judge_late(acks.join(ds.select(*RECORD, "member", "acquired_ms", "acq_seq", "delivery", "lock_expires_ms"),
                                [*RECORD, "member", "acquired_ms", "acq_seq"], "left"))
    acks = acks.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        groups = sorted(set(split.group_of.values()))
        notes: list[str] = []
        if len(split.group_of) < len(split.share_members):
            notes.append("share members without a group id in their `started` event: their records are left out")
        values, examples = _measures(ds, acks, configs, groups, cutoff_ms)
        values["share_members"] = known("share_members", len(split.share_members))
        values["share_client_errors"] = known("share_client_errors", errors)
        lost, lost_note, lost_examples = _lost(spark, ds, acks, split, configs, groups, cutoff_ms, root, acks_path, harness)
        values.update(lost)
        notes += [lost_note] if lost_note else []
        examples["share_lost_records"] = lost_examples
        frames, truncated = _frames(ds, int(values["share_acquisitions"].value))
        if truncated:
            notes.append(f"share_deliveries keeps {MAX_DELIVERY_ROWS} of {truncated} deliveries (later ones first); "
                         "the share metrics count them all")
    finally:
        acks.unpersist()
        ds.unpersist()
    faults = sorted({str(h["kind"]) for h in harness if h["kind"] in FAULTS})
    return ShareResult(split, values, frames, notes, examples, errors, faults)


def _lock_unknown(configs, groups: list[str]) -> str | None:
    missing = [g for g in groups if g not in configs or configs[g].record_lock_duration_ms is None]
    if not groups:
        return "no share member named its group"
    return f"record_lock_duration_ms of share group(s) {', '.join(missing)} unknown (no share_group_config action)" if missing else None


def _measures(ds: DataFrame, acks: DataFrame, configs, groups: list[str], cutoff_ms: int | None):
    reason = F.col("reason")
    fault = reason.isin(*FAULT_REASONS)
    row = ds.agg(
        F.count(F.lit(1)).alias("acquisitions"),
        F.count(F.when(F.col("delivery") == 1, 1)).alias("records"),
        *[F.count(F.when(reason == r, 1)).alias(r) for r in
          ("released", "lock_expired", "member_frozen", "member_left", "member_killed", "concurrent",
           "after_completion", "unjudged")],
        F.max("delivery_count").alias("dc_max"),
        F.percentile(F.when(fault, F.col("since_previous_ms")), 0.5).alias("lat_p50"),
        F.max(F.when(fault, F.col("since_previous_ms"))).alias("lat_max"),
        F.max(F.when(fault, F.col("acquired_ms") - F.col("fault_ms"))).alias("after_fault_max"),
        F.countDistinct("member").alias("acquiring"),
        F.min("acquired_ms").alias("first_ms"),
    ).first()
    late = F.col("late")
    # What the broker took, a late no-op aside (judge_late): the record's outcome is its completing delivery's.
    taken = F.col("error").isNull() & ~F.col("late_noop")
    arow = acks.agg(
        F.count(F.when(late & taken, 1)).alias("late_ok"),
        F.count(F.when(F.col("late_noop"), 1)).alias("late_noop"),
        F.count(F.when(late & F.col("error").isNotNull(), 1)).alias("late_refused"),
        F.count(F.when(F.col("error").isNotNull(), 1)).alias("failures"),
        F.count(F.when(F.col("acquired_ms").isNull(), 1)).alias("orphans"),
        F.countDistinct(F.when((F.col("type") == "accept") & taken, F.struct(*RECORD))).alias("accepted"),
        F.max(F.when((F.col("type") == "accept") & taken, F.col("ack_ms"))).alias("last_accept_ms"),
    ).first()
    v: dict[str, MetricValue] = {}
    n = int(row["acquisitions"])
    redeliveries = n - int(row["records"])
    v["share_acquisitions"] = known("share_acquisitions", n)
    v["share_records_acquired"] = known("share_records_acquired", int(row["records"]))
    v["share_members_acquiring"] = known("share_members_acquiring", int(row["acquiring"]))
    v["share_redeliveries"] = known("share_redeliveries", redeliveries)
    lock_why = _lock_unknown(configs, groups)
    for r in ("released", "member_left", "member_killed", "unjudged"):
        v[f"share_redeliveries_{r}"] = known(f"share_redeliveries_{r}", int(row[r]))
    for name, col in (("share_redeliveries_lock_expired", "lock_expired"), ("share_redeliveries_member_frozen", "member_frozen"),
                      ("share_concurrent_acquisitions", "concurrent")):
        v[name] = unknown(name, lock_why) if lock_why else known(name, int(row[col]))
    v["share_redelivered_after_completion"] = known("share_redelivered_after_completion", int(row["after_completion"]))
    no_fault = "no redelivery after its holder was killed or frozen" + (f" ({lock_why})" if lock_why else "")
    v["share_redelivery_latency_p50_ms"] = known("share_redelivery_latency_p50_ms",
                                                 float(row["lat_p50"]) if row["lat_p50"] is not None else None,
                                                 reason_if_none=no_fault)
    v["share_redelivery_latency_max_ms"] = known("share_redelivery_latency_max_ms", row["lat_max"], reason_if_none=no_fault)
    v["share_redelivery_after_fault_max_ms"] = known("share_redelivery_after_fault_max_ms", row["after_fault_max"],
                                                     reason_if_none=no_fault)
    v["share_delivery_count_max"] = known(
        "share_delivery_count_max", row["dc_max"],
        reason_if_none="nothing acquired" if n == 0 else "the clients gave no delivery count")
    if lock_why:
        v["share_late_acks_accepted"] = unknown("share_late_acks_accepted", lock_why)
        v["share_late_acks_noop"] = unknown("share_late_acks_noop", lock_why)
        v["share_late_acks_rejected"] = unknown("share_late_acks_rejected", lock_why)
    else:
        v["share_late_acks_accepted"] = known("share_late_acks_accepted", int(arow["late_ok"]))
        v["share_late_acks_noop"] = known("share_late_acks_noop", int(arow["late_noop"]))
        v["share_late_acks_rejected"] = known("share_late_acks_rejected", int(arow["late_refused"]))
    v["share_ack_failures"] = known("share_ack_failures", int(arow["failures"]))
    v["share_acks_without_acquisition"] = known("share_acks_without_acquisition", int(arow["orphans"]))
    v["share_records_accepted"] = known("share_records_accepted", int(arow["accepted"]))
    first, last = row["first_ms"], arow["last_accept_ms"]
    if first is not None and last is not None and last > first:
        v["share_throughput_rps"] = known("share_throughput_rps", round(int(arow["accepted"]) / ((last - first) / 1000), 3))
    else:
        v["share_throughput_rps"] = unknown("share_throughput_rps", "no record accepted after the first acquisition")
    cols = [*RECORD, "member", "acquired_ms", "delivery", "delivery_count", "reason", "previous_member",
            "previous_acquired_ms", "lock_left_ms"]
    # Queried only when there is something to show: most runs have no anomaly.
    examples = {
        "share_concurrent_acquisitions": _rows(ds.filter(reason == "concurrent").orderBy(F.desc("lock_left_ms")), cols)
        if row["concurrent"] else [],
        "share_redelivered_after_completion": _rows(ds.filter(reason == "after_completion").orderBy("acquired_ms"), cols)
        if row["after_completion"] else [],
        "share_late_acks_accepted": _rows(acks.filter(late & taken).orderBy("sent_ms", *RECORD),
                                          [*RECORD, "member", "acquired_ms", "lock_expires_ms", "sent_ms", "ack_ms", "type"])
        if not lock_why and arow["late_ok"] else [],
    }
    return v, examples


def _rows(frame: DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.select(*cols).limit(EXAMPLES).collect()]


def _lost(spark: SparkSession, ds: DataFrame, acks: DataFrame, split: ShareSplit, configs, groups: list[str],
          cutoff_ms: int | None, root: str, acks_path: str | None, harness):
    """Records the brokers acknowledged to a producer on a share group's topics, neither accepted nor archived
    by the cutoff. Accepted: an accept the broker took (answer at or before the cutoff), not a late no-op
    (``judge_late``: the record is then its completing delivery's). Archived: a reject it took, not a late
    no-op, or a last delivery at the delivery-count limit (the broker's count, else the history's) that
    ended by a release it took or by its lock's expiry, at or before the cutoff; a holder that left before
    its lock expired gave the record back with its count lowered, so that ends nothing."""
    names = ("share_records_acked", "share_records_archived", "share_records_lost")
    missing = [g for g in groups if g not in configs or configs[g].delivery_count_limit is None
               or configs[g].record_lock_duration_ms is None]
    if not groups or missing:
        why = (f"delivery_count_limit or record_lock_duration_ms of share group(s) {', '.join(missing)} unknown "
               "(no share_group_config action)") if groups else "no share member named its group"
        return {n: unknown(n, why) for n in names}, None, []
    cutoff = F.lit(cutoff_ms if cutoff_ms is not None else 1 << 62)
    limit = F.create_map(*[F.lit(x) for g in groups for x in (g, configs[g].delivery_count_limit)])[F.col("group_id")]
    ok = F.col("error").isNull() & ~F.col("late_noop") & (F.col("ack_ms") <= cutoff)
    taken = acks.groupBy(*RECORD).agg(
        F.max(ok & (F.col("type") == "accept")).alias("accepted"),
        F.max(ok & (F.col("type") == "reject")).alias("rejected"))
    last = ds.filter("is_last")
    at_limit = F.coalesce("delivery_count", "delivery") >= limit
    gave_back = ((F.col("end_kind") == LEFT) & (F.col("end_ms") < F.col("lock_expires_ms")))
    released = (F.col("ok_type") == "release") & (F.col("ok_at_ms") <= cutoff)
    expired = F.col("ok_type").isNull() & ~F.coalesce(gave_back, F.lit(False)) & (F.col("lock_expires_ms") <= cutoff)
    by_limit = last.select(*RECORD, (at_limit & (released | expired)).alias("by_limit"))
    state = by_limit.join(taken, RECORD, "full_outer").select(
        *RECORD, F.coalesce("accepted", F.lit(False)).alias("accepted"),
        (~F.coalesce("accepted", F.lit(False)) & (F.coalesce("rejected", F.lit(False))
                                                  | F.coalesce("by_limit", F.lit(False)))).alias("archived"))
    archived = state.filter("archived").count()
    values = {"share_records_archived": known("share_records_archived", archived)}
    produced = read_acks(spark, acks_path) if acks_path else None
    acks_ok = ack_state(spark, root, produced.limit(1).count() if produced is not None else None, harness)
    if acks_ok.unknown_reason is not None:
        why = acks_ok.unknown_reason
        return {**values, "share_records_acked": unknown("share_records_acked", why),
                "share_records_lost": unknown("share_records_lost", why)}, None, []
    resets = {g: configs[g].auto_offset_reset for g in groups}
    topics = spark.createDataFrame([(g, t) for g in groups for t in sorted(split.topics_by_group.get(g, ()))],
                                   "group_id string, topic string")
    expected = produced.join(F.broadcast(topics), "topic").select(*RECORD, "produce_ts_ms").groupBy(*RECORD).agg(
        F.min("produce_ts_ms").alias("produce_ts_ms"))
    note = None
    latest = [g for g, r in resets.items() if r != "earliest"]
    if latest:
        # A group that starts at the log's end never sees what was written before it first fetched: only
        # records at or above the first offset it acquired from the partition are expected of it.
        first = ds.filter(F.col("group_id").isin(*latest)).groupBy("group_id", "topic", "partition").agg(
            F.min("offset").alias("first_offset"))
        expected = expected.join(first, ["group_id", "topic", "partition"], "left").filter(
            ~F.col("group_id").isin(*latest) | F.col("first_offset").isNull()
            | (F.col("offset") >= F.col("first_offset"))).drop("first_offset")
        note = (f"share group(s) {', '.join(latest)} start at auto_offset_reset "
                f"{', '.join(sorted({str(resets[g]) for g in latest}))}: records below the first offset each "
                "acquired from a partition are not expected of them")
    resolved = state.filter(F.col("accepted") | F.col("archived")).select(*RECORD)
    flagged = expected.join(resolved.withColumn("resolved", F.lit(True)), RECORD, "left")
    lost = flagged.filter(F.col("resolved").isNull()).drop("resolved")
    counts = flagged.agg(F.count(F.lit(1)).alias("expected"), F.count(F.when(F.col("resolved").isNull(), 1)).alias("lost")).first()
    examples = []
    if counts["lost"]:
        acquired = ds.select(*RECORD).distinct().withColumn("acquired", F.lit(True))
        examples = [r.asDict() for r in lost.join(acquired, RECORD, "left").orderBy(*RECORD).limit(EXAMPLES).collect()]
    for e in examples:
        e["acquired"] = bool(e.get("acquired"))
    values["share_records_acked"] = known("share_records_acked", int(counts["expected"]))
    values["share_records_lost"] = known("share_records_lost", int(counts["lost"]))
    return values, note, examples


def _frames(ds: DataFrame, total: int) -> tuple[dict[str, pd.DataFrame], int]:
    # An ack is late when handed over after its delivery's lock expired; a delivery's is its chosen ack's.
    late = (F.col("ack_sent_ms").isNotNull() & F.col("lock_expires_ms").isNotNull()
            & (F.col("ack_sent_ms") > F.col("lock_expires_ms")))
    table = ds.withColumn("late_ack", F.when(F.col("acks") > 0, late)).orderBy(
        F.desc("delivery"), "acquired_ms").limit(MAX_DELIVERY_ROWS).select(*DELIVERY_SCHEMA.names).toPandas()
    # Three histograms in one job: (kind, value) -> how many.
    per_record = ds.groupBy(*RECORD).agg(F.max("delivery_count").alias("dc"), F.max("delivery").alias("n"))
    keyed = (per_record.select(F.lit("records").alias("kind"), F.col("dc").cast("long").alias("value"))
             .unionByName(ds.select(F.lit("acquisitions").alias("kind"), F.col("delivery_count").cast("long").alias("value")))
             .unionByName(per_record.select(F.lit("records_by_deliveries").alias("kind"), F.col("n").cast("long").alias("value"))))
    hist = keyed.filter(F.col("value").isNotNull()).groupBy("kind", "value").count().toPandas()
    counts = (hist.pivot(index="value", columns="kind", values="count") if len(hist) else pd.DataFrame())
    counts = counts.reindex(columns=COUNTS_SCHEMA.names[1:]).fillna(0).astype("int64").sort_index()
    counts = counts.rename_axis("delivery_count").reset_index()
    timeline = ds.groupBy((F.col("acquired_ms") / 1000).cast("long").alias("second"), "member", "reason").agg(
        F.count(F.lit(1)).alias("acquisitions")).orderBy("second", "member", "reason").toPandas()
    return ({"share_deliveries": table, "share_delivery_counts": counts, "share_timeline": timeline},
            total if total > MAX_DELIVERY_ROWS else 0)

