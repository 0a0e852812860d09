"""``analyse(run_dir)``: a saved run directory in, analysis/metrics.json and analysis/tables/ out."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from . import control, records
from .broker_logs import BrokerLine, classic_rebalances, parse_lines
from .config import run_config
from .control import MemberEvent
from .intervals import Span, intersection, percentile
from .metrics import TABLES, MetricValue, Metrics, Windows, known, unknown
from .outputs import broker_frame, intervals_frame, revocations_frame, shared_frame, write_outputs
from .sources import input_bytes, locate, read_acks, read_broker_lines, read_harness, read_member_events
from .spark import get_spark, sized_for

CONTROL_NAMES = ("started", "assigned", "revoked", "lost", "stopped")
DEFAULT_EPISODE_GAP_MS = 1500
BROKER_MATCH_SLACK_MS = 10_000


def analyse(run_dir: str | Path, *, spark: SparkSession | None = None, episode_gap_ms: int = DEFAULT_EPISODE_GAP_MS) -> Metrics:
    """Compute every measurement of docs/metrics.md for one run, write the outputs, return them."""
    if episode_gap_ms < 0:
        raise ValueError(f"episode_gap_ms must be >= 0, got {episode_gap_ms}")
    spark = spark or get_spark()
    root = str(run_dir).rstrip("/")
    files = locate(spark, root)
    size = input_bytes(spark, [p for p in (files.members, files.harness, files.acks, files.brokers) if p])
    with sized_for(spark, size):
        return _analyse(spark, root, files, episode_gap_ms)


def _analyse(spark: SparkSession, root: str, files, episode_gap_ms: int) -> Metrics:
    notes: list[str] = []

    events_df = read_member_events(spark, files.members).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        ctrl_rows = events_df.filter(F.col("name").isin(*CONTROL_NAMES)).collect()
        failures = events_df.filter(
            ((F.col("name") == "committed") & F.col("error").isNotNull()) | (F.col("name") == "error")
        ).groupBy("name").count().collect()
        failure_counts = {r["name"]: int(r["count"]) for r in failures}
        last_ts = {r["member"]: r["last"] for r in events_df.groupBy("member").agg(F.max("ts_ms").alias("last")).collect()}
        harness = _harness(spark, files.harness, notes)
        windows = _windows(harness)
        events, started = _member_events(ctrl_rows)
        by_member: dict[str, list[MemberEvent]] = defaultdict(list)
        for ev in events:
            by_member[ev.member].append(ev)
        kills = _first_by_target(harness, "member_kill")
        exited = {h["target"] for h in harness if h["kind"] == "member_exit"}
        lives = control.member_lives(by_member, last_ts, kills, exited, windows.run_end_ms)
        intervals = [iv for m, evs in by_member.items() for iv in control.ownership_intervals(evs, lives[m])]
        shared = control.duplicate_ownership(intervals)
        teardown_after = windows.drain_end_ms if windows.drain_end_ms is not None else windows.run_end_ms
        episodes = control.rebalance_episodes(
            events, lives, gap_ms=episode_gap_ms, teardown_after_ms=teardown_after, bounce_windows=windows.bounces
        )
        revs = control.revocations(by_member, lives, intervals, episodes)
        points = control.pause_points(intervals, episodes)

        batches = records.processed_batches(events_df)
        acks = read_acks(spark, files.acks) if files.acks else None
        if acks is None:
            notes.append("no ack log in history/acks/: lost records unknown, latency from batch produce_ts bounds")
        cutoff = windows.drain_end_ms or windows.run_end_ms
        busy = [(e.start_ms, e.end_ms) for e in episodes if not e.teardown]
        stats = records.record_stats(spark, batches, acks, shared, cutoff, windows.bounces + busy)
        resolved = records.resolve_pauses(spark, batches, points)
    finally:
        events_df.unpersist()

    broker_lines = parse_lines(read_broker_lines(spark, files.brokers)) if files.brokers else []
    pauses = _pause_rows(points, resolved)
    end_of_run = windows.run_end_ms or stats.last_processed_ms or max(last_ts.values())
    all_partitions = {(iv.topic, iv.partition) for iv in intervals}
    ep_frame = _episode_frame(episodes, revs, pauses, stats.active_partitions, all_partitions, broker_lines, end_of_run)

    frames = {
        "ownership_intervals": intervals_frame(intervals),
        "rebalance_episodes": ep_frame,
        "duplicate_ownership": shared_frame(shared),
        "partition_pauses": pauses,
        "timeseries": stats.timeseries,
        "revocations": revocations_frame(revs),
        "broker_rebalances": broker_frame(broker_lines),
    }
    values = _metric_values(
        frames, stats, started, windows, all_partitions, broker_lines, files.brokers is not None, last_ts
    )
    values["commit_failures"] = known("commit_failures", failure_counts.get("committed", 0))
    values["client_errors"] = known("client_errors", failure_counts.get("error", 0))
    if pauses["pause_ms"].isna().any():
        notes.append(f"{int(pauses['pause_ms'].isna().sum())} partition pause(s) never resumed: left out of pause sums")
    result = Metrics(
        run_dir=root,
        metrics=values,
        config=run_config(started, harness).model_copy(
            update={"commit_failures": failure_counts.get("committed", 0)}),
        windows=windows,
        latency_source=stats.latency_source,
        notes=notes,
        tables={name: f"analysis/tables/{name}.parquet" for name in TABLES},
        examples={"lost_records": stats.lost_examples, "duplicates": stats.duplicate_examples},
    )
    write_outputs(spark, root, result, frames)
    return result


def _harness(spark: SparkSession, path: str | None, notes: list[str]) -> list[dict[str, Any]]:
    if path is None:
        notes.append("no harness log: no kill times, bounce windows or drain end")
        return []
    rows = read_harness(spark, path).orderBy("ts_ms").collect()
    return [
        {"kind": r["kind"], "ts_ms": r["ts_ms"], "target": r["target"], "detail": json.loads(r["detail"]) if r["detail"] else {}}
        for r in rows
    ]


def _first_by_target(harness: list[dict[str, Any]], kind: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in harness:
        if h["kind"] == kind and h["target"]:
            out.setdefault(h["target"], h["ts_ms"])
    return out


def _windows(harness: list[dict[str, Any]]) -> Windows:
    def last(kind: str) -> int | None:
        ts = [h["ts_ms"] for h in harness if h["kind"] == kind]
        return ts[-1] if ts else None

    bounces: list[tuple[int, int]] = []
    open_start: int | None = None
    for h in harness:
        if h["kind"] == "bounce_start":
            open_start = h["ts_ms"] if open_start is None else open_start
        elif h["kind"] == "bounce_end" and open_start is not None:
            bounces.append((open_start, h["ts_ms"]))
            open_start = None
    starts = [h["ts_ms"] for h in harness if h["kind"] == "run_start"]
    end = last("run_end")
    if open_start is not None and end is not None:
        bounces.append((open_start, end))  # an interrupted bounce lasts to the end of the run
    return Windows(run_start_ms=starts[0] if starts else None, run_end_ms=end, drain_end_ms=last("drain_end"), bounces=bounces)


def _member_events(rows: list) -> tuple[list[MemberEvent], dict[str, dict[str, Any]]]:
    events: list[MemberEvent] = []
    started: dict[str, dict[str, Any]] = {}
    for r in rows:
        parts = tuple((p[0], int(p[1])) for p in (r["partitions"] or []))
        events.append(MemberEvent(r["ts_ms"], r["member"], r["name"], parts, r["seq"]))
        if r["name"] == "started":
            started[r["member"]] = {
                k: r[k]
                for k in ("client", "client_version", "group_id", "assignors", "group_protocol", "remote_assignor",
                          "group_instance_id", "commit_mode", "spec")
            }
    return events, started


def _pause_rows(points: list[control.PausePoint], resolved: dict) -> pd.DataFrame:
    rows = []
    for p in points:
        last, resumed, pmin = resolved.get(p, (None, None, None))
        waiting_since, pause = control.pause_span(p.end_ms, last, resumed, pmin)
        rows.append({"episode_id": p.episode_id, "topic": p.topic, "partition": p.partition, "member": p.member,
                     "end_reason": p.end_reason, "waiting_since_ms": waiting_since, "resumed_ms": resumed, "pause_ms": pause})
    cols = ["episode_id", "topic", "partition", "member", "end_reason", "waiting_since_ms", "resumed_ms", "pause_ms"]
    return pd.DataFrame(rows, columns=cols).astype({"resumed_ms": "Int64", "pause_ms": "Int64"})


def _stop_the_world(ep_pauses: pd.DataFrame, active: set, end_of_run: int) -> int:
    """Time all processed partitions were paused at once in one episode (0 if some kept going)."""
    paused = {(t, p) for t, p in zip(ep_pauses["topic"], ep_pauses["partition"])}
    if not active or not active <= paused:
        return 0
    spans = [
        Span(int(w), int(r) if pd.notna(r) else max(end_of_run, int(w)))
        for w, r in zip(ep_pauses["waiting_since_ms"], ep_pauses["resumed_ms"])
    ]
    common = intersection(spans)
    return common.length if common else 0


def _episode_frame(episodes, revs, pauses: pd.DataFrame, active, all_partitions, broker_lines: list[BrokerLine], end_of_run: int) -> pd.DataFrame:
    broker = classic_rebalances(broker_lines)
    rows = []
    for ep in episodes:
        ep_revs = [r for r in revs if r.episode_id == ep.episode_id]
        ep_p = pauses[pauses["episode_id"] == ep.episode_id]
        per_tp = dict.fromkeys(all_partitions, 0.0)
        for t, p, v in zip(ep_p["topic"], ep_p["partition"], ep_p["pause_ms"]):
            if pd.notna(v):
                per_tp[(t, p)] = float(v)
        vals = list(per_tp.values())
        match = _matching_broker_rebalance(ep.start_ms, ep.end_ms, broker)
        rows.append({
            "episode_id": ep.episode_id, "start_ms": ep.start_ms, "end_ms": ep.end_ms, "duration_ms": ep.end_ms - ep.start_ms,
            "trigger": ep.trigger, "teardown": ep.teardown, "during_bounce": ep.during_bounce,
            "members_assigned": len(ep.members_assigned),
            "revocations": sum(r.kind == "revoked" for r in ep_revs),
            "revocations_live": sum(r.category == "live" for r in ep_revs),
            "needless_revocations": sum(r.needless for r in ep_revs),
            "partitions_lost": sum(r.kind == "lost" for r in ep_revs),
            "partitions_paused": int((ep_p["pause_ms"].fillna(0) > 0).sum()),
            "pause_p50_ms": percentile(vals, 50), "pause_p99_ms": percentile(vals, 99), "pause_max_ms": max(vals) if vals else None,
            "stop_the_world_ms": 0 if ep.teardown else _stop_the_world(ep_p, active, end_of_run),
            "broker_prepare_ms": match.prepare_ms if match else None,
            "broker_stabilized_ms": match.stabilized_ms if match else None,
            "broker_duration_ms": match.stabilized_ms - match.prepare_ms if match else None,
            "broker_generation": match.generation if match else None,
        })
    return pd.DataFrame(rows, columns=[
        "episode_id", "start_ms", "end_ms", "duration_ms", "trigger", "teardown", "during_bounce", "members_assigned",
        "revocations", "revocations_live", "needless_revocations", "partitions_lost", "partitions_paused",
        "pause_p50_ms", "pause_p99_ms", "pause_max_ms", "stop_the_world_ms", "broker_prepare_ms",
        "broker_stabilized_ms", "broker_duration_ms", "broker_generation"])


def _matching_broker_rebalance(start: int, end: int, broker):
    """The broker rebalance overlapping the episode most (the broker sees the trigger before clients do)."""
    best, best_overlap = None, -1
    for b in broker:
        overlap = min(end, b.stabilized_ms) - max(start - BROKER_MATCH_SLACK_MS, b.prepare_ms)
        if overlap >= 0 and overlap > best_overlap:
            best, best_overlap = b, overlap
    return best


def _metric_values(frames, stats: records.RecordStats, started, windows: Windows, all_partitions, broker_lines,
                   have_broker_logs: bool, last_ts: dict[str, int]) -> dict[str, MetricValue]:
    eps = frames["rebalance_episodes"]
    live_eps = eps[~eps["teardown"].astype(bool)] if len(eps) else eps
    revs = frames["revocations"]
    shared = frames["duplicate_ownership"]
    pauses = frames["partition_pauses"]
    ts = frames["timeseries"]
    v: dict[str, MetricValue] = {}
    start = windows.run_start_ms if windows.run_start_ms is not None else min(last_ts.values(), default=None)
    end = windows.run_end_ms if windows.run_end_ms is not None else max(last_ts.values(), default=None)
    v["run_duration_ms"] = known("run_duration_ms", end - start if start is not None and end is not None else None)
    v["members"] = known("members", len(started))
    v["partitions"] = known("partitions", len(all_partitions))
    v["records_processed"] = known("records_processed", stats.records_processed)
    v["records_unique_processed"] = known("records_unique_processed", stats.unique_processed)
    no_acks = "no ack log in history/acks/"
    v["records_acked"] = known("records_acked", stats.acked, reason_if_none=no_acks)
    v["lost_records"] = known("lost_records", stats.lost, reason_if_none=no_acks)
    v["duplicates_total"] = known("duplicates_total", stats.duplicates_total)
    v["duplicate_records"] = known("duplicate_records", stats.duplicate_records)
    v["duplicates_concurrent"] = known("duplicates_concurrent", stats.duplicates_concurrent)
    v["duplicates_redelivered"] = known("duplicates_redelivered", stats.duplicates_redelivered)
    v["duplicate_ownership_ms"] = known("duplicate_ownership_ms", int(shared["duration_ms"].sum()))
    v["duplicate_ownership_episodes"] = known("duplicate_ownership_episodes", len(shared))
    v["duplicate_ownership_longest_ms"] = known("duplicate_ownership_longest_ms", int(shared["duration_ms"].max()) if len(shared) else 0)
    v["revocations_live"] = known("revocations_live", int((revs["category"] == "live").sum()))
    v["revocations_shutdown"] = known("revocations_shutdown", int((revs["category"] == "shutdown").sum()))
    v["needless_revocations"] = known("needless_revocations", int(revs["needless"].astype(bool).sum()))
    v["partitions_lost"] = known("partitions_lost", int((revs["kind"] == "lost").sum()))
    v["rebalance_episodes"] = known("rebalance_episodes", len(live_eps))
    v["rebalance_total_ms"] = known("rebalance_total_ms", int(live_eps["duration_ms"].sum()) if len(live_eps) else 0)
    v["rebalance_max_ms"] = known("rebalance_max_ms", int(live_eps["duration_ms"].max()) if len(live_eps) else 0)
    per_tp = dict.fromkeys(all_partitions, 0.0)
    for t, p, ms in zip(pauses["topic"], pauses["partition"], pauses["pause_ms"]):
        if pd.notna(ms):
            per_tp[(t, p)] = per_tp.get((t, p), 0.0) + float(ms)
    totals = list(per_tp.values())
    no_parts = "no partition was ever assigned"
    v["partition_pause_total_ms"] = known("partition_pause_total_ms", int(sum(totals)) if totals else None, reason_if_none=no_parts)
    v["p50_partition_pause_ms"] = known("p50_partition_pause_ms", percentile(totals, 50), reason_if_none=no_parts)
    v["p99_partition_pause_ms"] = known("p99_partition_pause_ms", percentile(totals, 99), reason_if_none=no_parts)
    v["max_partition_pause_ms"] = known("max_partition_pause_ms", max(totals) if totals else None, reason_if_none=no_parts)
    mp = revs.drop_duplicates(["ts_ms", "member"])["member_pause_ms"].dropna() if len(revs) else pd.Series(dtype=float)
    v["member_pause_total_ms"] = known("member_pause_total_ms", int(mp.sum()))
    v["max_member_pause_ms"] = known("max_member_pause_ms", int(mp.max()) if len(mp) else 0)
    v["stop_the_world_ms"] = known("stop_the_world_ms", int(live_eps["stop_the_world_ms"].sum()) if len(live_eps) else 0)
    no_latency = "no processed record could be matched with a produce time"
    for phase, suffix in (("all", ""), ("steady", "_steady"), ("bounce", "_bounce")):
        lat = stats.latency[phase]
        for stat in ("p50", "p99", "max"):
            name = f"e2e_latency{suffix}_{stat}_ms"
            v[name] = known(name, getattr(lat, stat), reason_if_none=no_latency if phase == "all" else f"no records processed in {phase} phase")
    if stats.first_processed_ms is not None and stats.last_processed_ms and stats.last_processed_ms > stats.first_processed_ms:
        span_s = (stats.last_processed_ms - stats.first_processed_ms) / 1000
        v["throughput_mean_rps"] = known("throughput_mean_rps", round(stats.records_processed / span_s, 3))
    else:
        v["throughput_mean_rps"] = unknown("throughput_mean_rps", "fewer than two distinct processing times")
    v["throughput_max_rps"] = known("throughput_max_rps", int(ts["processed"].max()) if len(ts) else None, reason_if_none="nothing processed")
    v["lag_max_records"] = (
        known("lag_max_records", int(ts["lag"].max()) if len(ts) else None, reason_if_none="nothing produced or processed")
        if stats.acked is not None else unknown("lag_max_records", no_acks)
    )
    if have_broker_logs:
        classic = classic_rebalances(broker_lines)
        v["broker_rebalances"] = known("broker_rebalances", len(classic))
        v["broker_rebalance_total_ms"] = known("broker_rebalance_total_ms", sum(b.stabilized_ms - b.prepare_ms for b in classic))
        v["broker_epoch_bumps"] = known("broker_epoch_bumps", sum(ln.event == "epoch_bump" for ln in broker_lines))
        v["members_fenced"] = known("members_fenced", sum(ln.event == "fenced" for ln in broker_lines))
    else:
        for name in ("broker_rebalances", "broker_rebalance_total_ms", "broker_epoch_bumps", "members_fenced"):
            v[name] = unknown(name, "no broker logs at brokers/broker-*.log")
    return v
