"""Share-group deliveries in Spark: every acquisition of every record, the acknowledgement that answered it,
and why the record was delivered again (definitions in docs/metrics.md, "Share groups").

A record is (group, topic, partition, offset): two share groups reading one topic each deliver every record.
A *delivery* is one record in one ``share_acquired`` event: acquired by that member under the broker's
acquisition lock. An acknowledgement (one offset of a ``share_acknowledged`` event) belongs to its member's
latest delivery of the record at or before the time it was handed to the client (``sent_ms``, else the
answer's ``ts_ms``). Everything here stays in Spark; the callers aggregate or collect bounded pieces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from .context import KILLED, LEFT, CutOff, MemberEnd, ShareGroupConfig

RECORD = ["group_id", "topic", "partition", "offset"]
DELIVERY = [*RECORD, "member", "acquired_ms", "acq_seq"]
# A poll returns records some time after the broker acquired them (the fetch's round trip, the client's
# buffer), so the member's clock puts a lock's start, and its expiry, late. A next acquisition is judged
# concurrent only when it came more than this before the previous lock's expiry as the member saw it.
CONCURRENT_SLACK_MS = 1000
# Why a delivery happened: the first, or what ended the record's previous delivery.
REASONS = ("first", "released", "lock_expired", "member_frozen", "member_left", "member_killed", "concurrent",
           "after_completion", "unjudged")
FAULT_REASONS = ("member_killed", "member_frozen")


def _lookup(mapping: Mapping[str, object], key: Column, cast: str) -> Column:
    """A small driver-side dict as a literal map column, looked up per row (null when absent)."""
    if not mapping:
        return F.lit(None).cast(cast)
    pairs = [F.lit(x) for k, v in sorted(mapping.items()) for x in (k, v)]
    return F.create_map(*pairs)[key].cast(cast)


def acquisitions(events: DataFrame, group_of: Mapping[str, str]) -> DataFrame:
    """One row per record per ``share_acquired`` event: DELIVERY columns and the broker's ``delivery_count``."""
    rows = events.filter(F.col("name") == "share_acquired").select(
        "member", F.col("ts_ms").alias("acquired_ms"), F.col("seq").alias("acq_seq"), "topic", "partition",
        F.explode("acquired").alias("pair"))
    return rows.select(
        _lookup(group_of, F.col("member"), "string").alias("group_id"), "topic", "partition",
        F.col("pair")[0].try_cast("long").alias("offset"), "member", "acquired_ms", "acq_seq",
        F.col("pair")[1].try_cast("int").alias("delivery_count"),
    ).filter(F.col("offset").isNotNull())


def acknowledgements(events: DataFrame, group_of: Mapping[str, str]) -> DataFrame:
    """One row per offset per ``share_acknowledged`` event, ``at_ms`` the time it was handed over."""
    rows = events.filter(F.col("name") == "share_acknowledged").select(
        "member", F.col("ts_ms").alias("ack_ms"), "sent_ms", "type", "mode", "error", "topic", "partition",
        F.col("seq").alias("ack_seq"), F.explode("acknowledged").alias("offset"))
    return rows.select(
        _lookup(group_of, F.col("member"), "string").alias("group_id"), "topic", "partition", "offset", "member",
        "ack_ms", "sent_ms", F.coalesce("sent_ms", "ack_ms").alias("at_ms"), "type", "mode", "error", "ack_seq")


def matched_acks(acqs: DataFrame, acks: DataFrame) -> DataFrame:
    """Each acknowledgement with its delivery (``acquired_ms``, ``acq_seq``; null when its member never
    acquired the record before it): the member's latest acquisition at or before ``at_ms``."""
    stream = acqs.select(*RECORD, "member", F.col("acquired_ms").alias("t"), F.lit(0).alias("kind"),
                         F.col("acq_seq").alias("s")).unionByName(
        acks.select(*RECORD, "member", F.col("at_ms").alias("t"), F.lit(1).alias("kind"), F.col("ack_seq").alias("s")),
    )
    w = (Window.partitionBy(*RECORD, "member").orderBy("t", "kind", "s")
         .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    is_acq = F.col("kind") == 0
    keyed = stream.select(*RECORD, "member", "kind", F.col("s").alias("ack_seq"),
                          F.last(F.when(is_acq, F.col("t")), ignorenulls=True).over(w).alias("acquired_ms"),
                          F.last(F.when(is_acq, F.col("s")), ignorenulls=True).over(w).alias("acq_seq"))
    links = keyed.filter(F.col("kind") == 1).drop("kind")
    return acks.join(links, [*RECORD, "member", "ack_seq"], "left")


def deliveries(acqs: DataFrame, acks: DataFrame, configs: Mapping[str, ShareGroupConfig],
               ends: Mapping[str, MemberEnd], spans: Sequence[CutOff]) -> DataFrame:
    """Every delivery with its acknowledgement and, for a record's later deliveries, why it came again.

    The acknowledgement of a delivery is its first one the broker took (``error`` null), else its first.
    ``reason`` (REASONS) judges the record's previous delivery d, acquired at a by member m, with lock
    expiry e = a + record_lock_duration_ms, against this one's acquisition at t, in this order:
    ``after_completion`` (d's accept or reject was taken and handed over at or before t),
    ``released`` (d's release was taken, handed over at or before t), ``member_left`` / ``member_killed``
    (m's end, no earlier than a, came at or before t and before e), ``unjudged`` (e unknown),
    ``concurrent`` (t < e − CONCURRENT_SLACK_MS: d's lock still held), ``member_frozen`` (m was cut off
    during [a, e)), else ``lock_expired``."""
    chosen = acks.filter(F.col("acquired_ms").isNotNull()).groupBy(*DELIVERY).agg(
        F.min_by(F.struct("type", "mode", "sent_ms", "ack_ms", "error", "at_ms"),
                 F.struct(F.col("error").isNotNull(), "at_ms", "ack_seq")).alias("ack"),
        F.count(F.lit(1)).alias("acks"))
    lock = {g: c.record_lock_duration_ms for g, c in configs.items() if c.record_lock_duration_ms is not None}
    end_ms = _lookup({m: e.ms for m, e in ends.items()}, F.col("member"), "long")
    end_kind = _lookup({m: e.kind for m, e in ends.items()}, F.col("member"), "string")
    d = acqs.join(chosen, DELIVERY, "left").select(
        *DELIVERY, "delivery_count",
        (F.col("acquired_ms") + _lookup(lock, F.col("group_id"), "long")).alias("lock_expires_ms"),
        F.col("ack.type").alias("ack_type"), F.col("ack.mode").alias("ack_mode"),
        F.col("ack.sent_ms").alias("ack_sent_ms"), F.col("ack.ack_ms").alias("ack_ms"),
        F.col("ack.error").alias("ack_error"), F.coalesce("acks", F.lit(0)).alias("acks"),
        F.when(F.col("ack.error").isNull(), F.col("ack.type")).alias("ok_type"),
        F.when(F.col("ack.error").isNull(), F.col("ack.at_ms")).alias("ok_at_ms"),
        # A member that acquires after its stop began is closing: its end is then its acquisition.
        F.when(end_ms.isNotNull(), F.greatest(end_ms, F.col("acquired_ms"))).alias("end_ms"), end_kind.alias("end_kind"),
    )
    d = _handed_over_late(d, _lookup(lock, F.col("group_id"), "long"))
    # A record's deliveries in the broker's order: a late hand-over just before the delivery that showed it.
    rw = Window.partitionBy(*RECORD).orderBy("order_ms", F.col("acquired_by_ms").isNull(), "acquired_ms", "acq_seq")
    d = d.withColumn("delivery", F.row_number().over(rw))
    d = d.withColumn("is_last", F.lead("acquired_ms").over(rw).isNull())
    prev = {c: F.lag(c).over(rw) for c in ("member", "lock_expires_ms", "ok_type", "ok_at_ms", "end_ms", "end_kind")}
    prev["acquired_ms"] = F.lag("held_from_ms").over(rw)
    d = d.select("*", *[col.alias(f"prev_{c}") for c, col in prev.items()])
    d = d.withColumn("frozen_ms", _cut_off_start(spans))
    t = F.col("acquired_ms")
    ended = (F.col("prev_end_ms") <= t) & (F.col("prev_lock_expires_ms").isNull()
                                             | (F.col("prev_end_ms") < F.col("prev_lock_expires_ms")))
    reason = (F.when(F.col("delivery") == 1, "first")
              .when(F.col("prev_ok_type").isin("accept", "reject") & (F.col("prev_ok_at_ms") <= t), "after_completion")
              .when((F.col("prev_ok_type") == "release") & (F.col("prev_ok_at_ms") <= t), "released")
              .when(ended, F.when(F.col("prev_end_kind") == LEFT, "member_left").otherwise("member_killed"))
              .when(F.col("prev_lock_expires_ms").isNull(), "unjudged")
              .when(t < F.col("prev_lock_expires_ms") - CONCURRENT_SLACK_MS, "concurrent")
              .when(F.col("frozen_ms").isNotNull(), "member_frozen")
              .otherwise("lock_expired"))
    d = d.withColumn("reason", reason)
    fault = (F.when(F.col("reason").isin("member_killed", "member_left"), F.col("prev_end_ms"))
             .when(F.col("reason") == "member_frozen", F.col("frozen_ms")))
    return d.select(
        *DELIVERY, "delivery", "delivery_count", "lock_expires_ms", "ack_type", "ack_mode", "ack_sent_ms", "ack_ms",
        "ack_error", "acks", "ok_type", "ok_at_ms", "end_ms", "end_kind", "is_last", "reason", "acquired_by_ms",
        F.col("prev_member").alias("previous_member"), F.col("prev_acquired_ms").alias("previous_acquired_ms"),
        (t - F.col("prev_acquired_ms")).alias("since_previous_ms"), fault.alias("fault_ms"),
        (F.col("prev_lock_expires_ms") - t).alias("lock_left_ms"),
    )


def _handed_over_late(d: DataFrame, lock_ms: Column) -> DataFrame:
    """Mark deliveries a client handed over after a later acquisition of the record: a broker delivery count
    lower than that of a delivery recorded before it. Seen with the Java share consumer frozen (SIGSTOP) after
    it had fetched records and before poll() returned them: resumed, poll() hands out records (count 1) whose
    lock expired meanwhile and that another member had acquired (count 2) and accepted. The broker's count of a
    record never goes down, so the lower count was acquired first: by ``acquired_by_ms``, the earliest recorded
    acquisition with a higher count, its lock had expired (``lock_expires_ms`` is that bound, so an
    acknowledgement sent after it is late), and it was acquired at the latest one lock duration before
    (``held_from_ms``, the start the next delivery's reason and latency are judged from). Null for the rest."""
    earlier = F.collect_list(F.struct(F.col("delivery_count").alias("c"), F.col("acquired_ms").alias("t"))).over(
        Window.partitionBy(*RECORD).orderBy("acquired_ms", "acq_seq").rowsBetween(Window.unboundedPreceding, -1))
    higher = F.filter(earlier, lambda e: e["c"] > F.col("delivery_count"))
    by = F.array_min(F.transform(higher, lambda e: e["t"]))
    d = d.withColumn("acquired_by_ms", F.when(F.col("delivery_count").isNotNull(), by))
    late = F.col("acquired_by_ms").isNotNull()
    return d.select(
        *[c for c in d.columns if c != "lock_expires_ms"],
        F.when(late, F.col("acquired_by_ms")).otherwise(F.col("lock_expires_ms")).alias("lock_expires_ms"),
        F.when(late, F.col("acquired_by_ms") - lock_ms).otherwise(F.col("acquired_ms")).alias("held_from_ms"),
        F.coalesce("acquired_by_ms", "acquired_ms").alias("order_ms"))


def judge_late(acks: DataFrame) -> DataFrame:
    """``acks`` (with their delivery's ``delivery`` number and ``lock_expires_ms``) with ``late`` (handed over after the lock expired;
    null ``sent_ms`` or lock: never late) and ``late_noop``: a late acknowledgement the broker took (``error``
    null) after a later delivery of the record had completed it, i.e. an accept or reject of that delivery the
    broker took, answered (``ack_ms``) no later than this one. Kafka's SharePartition answers such an
    acknowledgement with success and changes nothing (the record's outcome is the completing delivery's); a
    late acknowledgement the broker took otherwise is the anomaly ``share_late_acks_accepted``."""
    late = (F.col("sent_ms").isNotNull() & F.col("lock_expires_ms").isNotNull()
            & (F.col("sent_ms") > F.col("lock_expires_ms")))
    acks = acks.withColumn("late", late)
    taken_late = acks.filter(F.col("late") & F.col("error").isNull()).select(
        *RECORD, "member", "ack_seq", F.col("delivery").alias("delivery_key"), F.col("ack_ms").alias("late_ack_ms"))
    completions = acks.filter(F.col("type").isin("accept", "reject") & F.col("error").isNull()
                              & F.col("delivery").isNotNull()).select(
        *RECORD, F.col("delivery").alias("completed_key"), F.col("ack_ms").alias("completed_ms"))
    noops = taken_late.join(completions, RECORD).filter(
        (F.col("completed_key") > F.col("delivery_key")) & (F.col("completed_ms") <= F.col("late_ack_ms"))
    ).select(*RECORD, "member", "ack_seq").distinct().withColumn("noop", F.lit(True))
    return acks.join(noops, [*RECORD, "member", "ack_seq"], "left").withColumn(
        "late_noop", F.coalesce("noop", F.lit(False))).drop("noop")


def _cut_off_start(spans: Sequence[CutOff]) -> Column:
    """The start of the previous holder's first cut-off overlapping [its acquisition, its lock's expiry)."""
    by_member: dict[str, list[CutOff]] = {}
    for s in spans:
        by_member.setdefault(s.member, []).append(s)
    if not by_member:
        return F.lit(None).cast("long")
    pairs = []
    for member, ss in sorted(by_member.items()):
        pairs += [F.lit(member), F.array(*[F.struct(F.lit(s.start_ms).cast("long").alias("start"),
                                                    F.lit(s.end_ms).cast("long").alias("end")) for s in ss])]
    mine = F.create_map(*pairs)[F.col("prev_member")]
    overlapping = F.filter(mine, lambda s: (s["start"] < F.col("prev_lock_expires_ms"))
                           & (s["end"] > F.col("prev_acquired_ms")))
    return F.array_min(F.transform(overlapping, lambda s: s["start"]))


__all__ = ["CONCURRENT_SLACK_MS", "DELIVERY", "FAULT_REASONS", "KILLED", "LEFT", "REASONS", "RECORD",
           "acknowledgements", "acquisitions", "deliveries", "judge_late", "matched_acks"]
