"""Share-group measures (KIP-932): metrics, tables and examples from the deliveries of ``share.deliveries``.

Definitions in docs/metrics.md ("Share groups"). Counts are made in Spark; only aggregates, the delivery
table (at most ``MAX_DELIVERY_ROWS`` rows) and bounded examples reach the driver. A run without share
members gets every share metric unknown (the stage does not run: ``analysis.kinds``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ..records.ack_state import ack_state
from ..spark.local_rows import local_frame
from ..spark.sources import read_acks
from ..stage import Catalogue, Measured, Metric, Unknown, Value
from ..view.harness import undrained
from ..view.run_view import GroupView
from .context import LEFT, ShareGroupConfig, cut_offs, member_ends, share_group_configs
from .deliveries import (FAULT_REASONS, RECORD, acknowledgements, acquisitions, deliveries, judge_late,
                         matched_acks)
from .split import groups_of, topics_by_group
from .unanswered import StartOffsets, sent_acks, start_offsets, unanswered

EXAMPLES = 10
MAX_DELIVERY_ROWS = 1_000_000  # rows kept in the share_deliveries table (later deliveries first); metrics count all
NO_SHARE = "no share-group member in this run"

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
class ShareFound:
    """What the share stage counted (Spark aggregates over the deliveries and acknowledgements), the figures'
    source."""

    members: int
    errors: int
    deliveries: Row  # counts per reason, delivery counts, latencies after faults, first acquisition
    acks: Row  # late, failed, orphaned and accepted acknowledgements
    lock_unknown: str | None  # why the lock duration of some group is unknown
    lost: LostRecords
    undrained: str | None = None  # why a loss cannot be told: the run stopped before its final drain

    @property
    def no_fault(self) -> str:
        return "no redelivery after its holder was killed or frozen" + (f" ({self.lock_unknown})" if self.lock_unknown else "")

    def needs_lock(self, value: int) -> int | Unknown:
        """A count that depends on when locks expired: unknown when some group's lock duration is."""
        return Unknown(self.lock_unknown) if self.lock_unknown else value

    def throughput_rps(self) -> float | Unknown:
        first, last, accepted = self.deliveries["first_ms"], self.acks["last_accept_ms"], int(self.acks["accepted"])
        if first is not None and last is not None and last > first:
            return round(accepted / ((last - first) / 1000), 3)
        return Unknown("no record accepted after the first acquisition")

    def delivery_count_max(self) -> Value | Unknown:
        if self.deliveries["dc_max"] is not None:
            return self.deliveries["dc_max"]
        return Unknown("nothing acquired" if int(self.deliveries["acquisitions"]) == 0 else
                       "the clients gave no delivery count")

    def after_fault(self, column: str) -> Value | Unknown:
        value = self.deliveries[column]
        return Unknown(self.no_fault) if value is None else value


@dataclass(frozen=True)
class Unanswered:
    """What ``_lost`` needs to tell a record a killed member's unanswered acknowledgement completed: the sent
    acknowledgements (``share_ack_sent``) and the brokers' start offsets per group at the drain's end."""

    sent: DataFrame
    starts: dict[str, StartOffsets]


@dataclass
class LostRecords:
    """Records acknowledged to a producer on a share group's topics, and what became of them (``_lost``)."""

    archived: int | Unknown
    acked: int | Unknown
    lost: int | Unknown
    note: str | None = None
    examples: list[dict[str, Any]] = field(default_factory=list)
    unanswered: int | Unknown = 0  # accepts/rejects a killed member sent, never answered, never delivered again
    completed_unanswered: int | Unknown = 0  # of those, below the brokers' start offset: the broker took them


def _reason(name: str, meaning: str) -> Metric[ShareFound]:
    """Redeliveries of one reason (``share.deliveries.REASONS``)."""
    return Metric(f"share_redeliveries_{name}", "count", meaning, lambda f: int(f.deliveries[name]))


def _needs_lock(metric: str, meaning: str, column: str, unit: str, row: str = "deliveries") -> Metric[ShareFound]:
    return Metric(metric, unit, meaning, lambda f: f.needs_lock(int(getattr(f, row)[column])))


CATALOGUE: Catalogue[ShareFound] = Catalogue(
    Metric("share_members", "count", "share-group members (group_protocol share)", lambda f: f.members),
    Metric("share_members_acquiring", "count", "share members that acquired at least one record",
           lambda f: int(f.deliveries["acquiring"])),
    Metric("share_acquisitions", "count", "deliveries: records acquired, one per record per poll, redeliveries "
           "included",
           lambda f: int(f.deliveries["acquisitions"])),
    Metric("share_records_acquired", "records", "distinct records delivered at least once",
           lambda f: int(f.deliveries["records"])),
    Metric("share_redeliveries", "count", "deliveries after a record's first",
           lambda f: int(f.deliveries["acquisitions"]) - int(f.deliveries["records"])),
    _reason("released", "redeliveries after the previous holder released the record"),
    _needs_lock("share_redeliveries_lock_expired", "redeliveries after the previous holder, alive and not cut off, "
                "let its lock run out",
                "lock_expired", "count"),
    _needs_lock("share_redeliveries_member_frozen", "redeliveries after the previous holder was cut off (SIGSTOP, "
                "stall, partition) while its lock ran",
                "member_frozen", "count"),
    _reason("member_left", "redeliveries after the previous holder closed while holding the record"),
    _reason("member_killed", "redeliveries after the previous holder died while holding the record"),
    _reason("unjudged", "redeliveries whose cause cannot be judged (lock duration unknown)"),
    Metric("share_redelivery_latency_p50_ms", "ms", "median, over redeliveries after a holder was killed or frozen, "
           "of the time from its acquisition to the next",
           lambda f: f.after_fault("lat_p50") if f.deliveries["lat_p50"] is None
           else float(f.deliveries["lat_p50"])),
    Metric("share_redelivery_latency_max_ms", "ms", "longest such time from a killed or frozen holder's acquisition "
           "to the next (about the lock duration)",
           lambda f: f.after_fault("lat_max")),
    Metric("share_redelivery_after_fault_max_ms", "ms", "longest time from the holder's kill or freeze to the "
           "record's next acquisition",
           lambda f: f.after_fault("after_fault_max")),
    Metric("share_delivery_count_max", "count", "highest delivery count the broker gave",
           lambda f: f.delivery_count_max()),
    _needs_lock("share_concurrent_acquisitions", "records acquired while the previous delivery's lock was still valid "
                "(anomaly)",
                "concurrent", "count"),
    Metric("share_redelivered_after_completion", "count", "records acquired again after the broker took their accept "
           "or reject (anomaly)",
           lambda f: int(f.deliveries["after_completion"])),
    _needs_lock("share_late_acks_accepted", "acknowledgements sent after their lock expired that the broker took "
                "while no later delivery had completed the record (anomaly: it still tracked the record and must "
                "refuse)",
                "late_ok", "records", "acks"),
    _needs_lock("share_late_acks_noop", "acknowledgements sent after their lock expired that the broker took after a "
                "later delivery's accept or reject had completed the record (Kafka answers success and changes "
                "nothing)",
                "late_noop", "records", "acks"),
    _needs_lock("share_late_acks_rejected", "acknowledgements sent after their lock expired that the broker refused",
                "late_refused", "records", "acks"),
    Metric("share_ack_failures", "records", "acknowledgements the broker refused", lambda f: int(f.acks["failures"])),
    Metric("share_acks_without_acquisition", "records", "acknowledgements of a record their member had not acquired "
           "before",
           lambda f: int(f.acks["orphans"])),
    Metric("share_records_accepted", "records", "distinct records with an accept the broker took",
           lambda f: int(f.acks["accepted"])),
    Metric("share_records_archived", "records", "distinct records rejected, or at the delivery-count limit when "
           "released or expired, not accepted",
           lambda f: f.lost.archived),
    Metric("share_records_acked", "records", "records the brokers acknowledged to a producer on a share group's topics",
           lambda f: f.lost.acked),
    Metric("share_records_lost", "records", "of those, neither accepted nor archived by the end of the final drain, "
           "nor completed by an acknowledgement its killed member never heard back about (unknown when the run "
           "stopped before its drain)",
           lambda f: Unknown(f.undrained) if f.undrained is not None else f.lost.lost),
    Metric("share_records_unanswered", "records", "records whose accept or reject a member sent just before it was "
           "killed, with no answer, never delivered again",
           lambda f: f.lost.unanswered),
    Metric("share_records_completed_unanswered", "records", "of those, the ones below the share group's start offset "
           "at the drain's end: the broker took the acknowledgement (not lost)",
           lambda f: f.lost.completed_unanswered),
    Metric("share_throughput_rps", "records/s", "share_records_accepted / seconds from the first acquisition to the "
           "last accept",
           lambda f: f.throughput_rps()),
    Metric("share_client_errors", "count", "error events of share members", lambda f: f.errors),
)


def measure_share_group(view: GroupView, cutoff_ms: int | None) -> Measured:
    """Every share figure, table and example of the share members of ``view``."""
    spark, actions = view.run.spark, view.actions
    members = view.members or frozenset()
    group_of = groups_of(view.run.started_rows, members)
    share_events = view.events
    configs = share_group_configs(actions)
    ends_and_errors = share_events.filter(F.col("name").isin("stopped", "error")).groupBy("member", "name").agg(
        F.min("ts_ms").alias("ts"), F.count(F.lit(1)).alias("n")).collect()
    stopped = {r["member"]: int(r["ts"]) for r in ends_and_errors if r["name"] == "stopped"}
    errors = sum(int(r["n"]) for r in ends_and_errors if r["name"] == "error")
    acqs = acquisitions(share_events, group_of)
    acks = matched_acks(acqs, acknowledgements(share_events, group_of))
    ds = deliveries(acqs, acks, configs, member_ends(actions, stopped), cut_offs(actions, view.run.windows.run_end_ms))
    ds = ds.persist(StorageLevel.MEMORY_AND_DISK)
    acks = judge_late(acks.join(ds.select(*RECORD, "member", "acquired_ms", "acq_seq", "delivery", "lock_expires_ms"),
                                [*RECORD, "member", "acquired_ms", "acq_seq"], "left"))
    acks = acks.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        groups = sorted(set(group_of.values()))
        notes: list[str] = []
        if len(group_of) < len(members):
            notes.append("share members without a group id in their `started` event: their records are left out")
        lock_unknown = _lock_unknown(configs, groups)
        row, arow, examples = _counts(ds, acks, lock_unknown)
        sent = Unanswered(sent_acks(share_events, group_of), start_offsets(actions, groups))
        lost = _lost(spark, ds, acks, topics_by_group(view.run.started_rows, group_of), configs, groups, cutoff_ms,
                     view.run.root, view.run.files.acks, actions, sent)
        found = ShareFound(len(members), errors, row, arow, lock_unknown, lost,
                           undrained(view.run.windows, lost.lost if isinstance(lost.lost, int) else None,
                                     "acknowledged records of share groups"))
        notes += [lost.note] if lost.note else []
        examples["share_lost_records"] = lost.examples
        frames, truncated = _frames(ds, int(row["acquisitions"]))
        if truncated:
            notes.append(f"share_deliveries keeps {MAX_DELIVERY_ROWS} of {truncated} deliveries (later ones first); "
                         "the share metrics count them all")
    finally:
        acks.unpersist()
        ds.unpersist()
    return Measured(CATALOGUE.measure(found), frames, examples, notes)


def _lock_unknown(configs: dict[str, ShareGroupConfig], groups: list[str]) -> str | None:
    missing = [g for g in groups if g not in configs or configs[g].record_lock_duration_ms is None]
    if not groups:
        return "no share member named its group"
    return f"record_lock_duration_ms of share group(s) {', '.join(missing)} unknown (no share_group_config action)" if missing else None


def _counts(ds: DataFrame, acks: DataFrame, lock_unknown: str | None) -> tuple[Row, Row, dict[str, list[dict[str, Any]]]]:
    """The deliveries' and the acknowledgements' aggregates (one query each), and the anomalies' examples."""
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
        if not lock_unknown and arow["late_ok"] else [],
    }
    return row, arow, examples


def _rows(frame: DataFrame, cols: list[str]) -> list[dict[str, Any]]:
    return [r.asDict() for r in frame.select(*cols).limit(EXAMPLES).collect()]


def _lost(spark: SparkSession, ds: DataFrame, acks: DataFrame, topics_of: dict[str, frozenset[str]],
          configs: dict[str, ShareGroupConfig], groups: list[str], cutoff_ms: int | None, root: str,
          acks_path: str | None, harness: list[dict[str, Any]], sent: Unanswered) -> LostRecords:
    """Records the brokers acknowledged to a producer on a share group's topics, neither accepted nor archived
    by the cutoff. Accepted: an accept the broker took (answer at or before the cutoff), not a late no-op
    (``judge_late``: the record is then its completing delivery's). Archived: a reject it took, not a late
    no-op, or a last delivery at the delivery-count limit (the broker's count, else the history's) that
    ended by a release it took or by its lock's expiry, at or before the cutoff; a holder that left before
    its lock expired gave the record back with its count lowered, so that ends nothing. Completed unanswered
    (``unanswered``): a record whose last delivery's member was killed after sending an accept or reject for it
    and before any answer, below the brokers' start offset at the drain's end; with the offsets unknown such a
    record makes the lost count unknown."""
    missing = [g for g in groups if g not in configs or configs[g].delivery_count_limit is None
               or configs[g].record_lock_duration_ms is None]
    if not groups or missing:
        why = Unknown((f"delivery_count_limit or record_lock_duration_ms of share group(s) {', '.join(missing)} "
                       "unknown (no share_group_config action)") if groups else "no share member named its group")
        return LostRecords(why, why, why)
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
    doubt = unanswered(ds, sent.sent, sent.starts).join(
        state.filter(F.col("accepted") | F.col("archived")).select(*RECORD), RECORD, "left_anti")
    drow = doubt.agg(F.count(F.lit(1)).alias("n"), F.count(F.when(F.col("completed"), 1)).alias("completed"),
                     F.count(F.when(F.col("completed").isNull(), 1)).alias("unknown")).first()
    n_unanswered, n_completed, n_unknown = int(drow["n"]), int(drow["completed"]), int(drow["unknown"])
    why_unknown = "; ".join(s.unknown for s in sent.starts.values() if s.unknown) or "unknown"
    completed_unanswered: int | Unknown = n_completed if not n_unknown else Unknown(why_unknown)
    produced = read_acks(spark, acks_path) if acks_path else None
    acks_ok = ack_state(spark, root, produced.limit(1).count() if produced is not None else None, harness)
    if acks_ok.unknown_reason is not None:
        return LostRecords(archived, Unknown(acks_ok.unknown_reason), Unknown(acks_ok.unknown_reason),
                           unanswered=n_unanswered, completed_unanswered=completed_unanswered)
    resets = {g: configs[g].auto_offset_reset for g in groups}
    topics = local_frame(spark, [(g, t) for g in groups for t in sorted(topics_of.get(g, ()))],
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
    resolved = state.filter(F.col("accepted") | F.col("archived")).select(*RECORD).unionByName(
        doubt.filter(F.col("completed")).select(*RECORD))
    flagged = expected.join(resolved.withColumn("resolved", F.lit(True)), RECORD, "left")
    lost = flagged.filter(F.col("resolved").isNull()).drop("resolved")
    counts = flagged.agg(F.count(F.lit(1)).alias("expected"), F.count(F.when(F.col("resolved").isNull(), 1)).alias("lost")).first()
    examples = []
    if counts["lost"]:
        acquired = ds.select(*RECORD).distinct().withColumn("acquired", F.lit(True))
        examples = [r.asDict() for r in lost.join(acquired, RECORD, "left").orderBy(*RECORD).limit(EXAMPLES).collect()]
    for e in examples:
        e["acquired"] = bool(e.get("acquired"))
    lost: int | Unknown = int(counts["lost"])
    if n_unknown and lost:
        lost = Unknown(f"{n_unknown} record(s) whose accept or reject a killed member sent without an answer: "
                       f"taken by the broker or lost, the brokers' start offsets would tell ({why_unknown})")
    return LostRecords(archived, int(counts["expected"]), lost, note, examples, n_unanswered, completed_unanswered)




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

