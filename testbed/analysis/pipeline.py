"""``analyse(run_dir)``: a saved run directory in, analysis/metrics.json and analysis/tables/ out."""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..errors import TestbedError
from ..history.events import Action
from ..run.layout import LAYOUT
from ..run.metrics import TABLES, MetricValue, Metrics, Windows, known, unknown
from . import causes, control, gaps, invariants, records, stalls
from .ack_state import ack_state
from .ack_summary import AckSummary
from .broker_logs import broker_reactions, classic_rebalances, for_group, parse_lines
from .config import run_config
from .episode_table import episode_frame
from .episodes import rebalance_episodes
from .closes import close_measures, member_closes
from .latency_timeseries import latency_timeseries
from .effects import effect_measures
from .movement import episode_movements
from .lives import MemberEvent, MemberExit, member_lives
from .outputs import (SCHEMAS, broker_frame, harness_frame, intervals_frame, revocations_frame, shared_frame,
                      write_outputs)
from .pause_measures import DEFAULT_HANG_MS, pause_measures
from .share_measures import analyse_share
from .share_split import split_members
from .sources import (input_bytes, is_remote, locate, read_ack_lines, read_broker_lines, read_harness,
                      read_member_events)
from .spark import check_executors_see, get_spark, scheduler_pool, session_for, sized_for

CONTROL_NAMES = ("started", "assigned", "revoked", "lost", "stopped")
DEFAULT_EPISODE_GAP_MS = 1500
CLOCK_STEP_MS = 1_000
# Fields of a member's ``started`` event kept in the run configuration (metrics.json ``config.members``).
STARTED_FIELDS = ("client", "client_version", "group_id", "assignors", "group_protocol", "remote_assignor",
                  "rebalance_protocol",
                  "group_instance_id", "commit_mode", "spec", "session_timeout_ms", "max_poll_interval_ms",
                  "heartbeat_interval_ms", "settings")


def analyse(run_dir: str | Path, *, spark: SparkSession | None = None, episode_gap_ms: int = DEFAULT_EPISODE_GAP_MS,
            min_pause_ms: int = gaps.DEFAULT_MIN_PAUSE_MS, hang_ms: int = DEFAULT_HANG_MS) -> Metrics:
    """Compute every measurement of docs/metrics.md for one run, write the outputs, return them."""
    if episode_gap_ms < 0:
        raise ValueError(f"episode_gap_ms must be >= 0, got {episode_gap_ms}")
    if min_pause_ms < 1:
        raise ValueError(f"min_pause_ms must be >= 1, got {min_pause_ms}")
    if hang_ms < 1:
        raise ValueError(f"hang_ms must be >= 1, got {hang_ms}")
    spark = spark or get_spark()
    root = str(run_dir).rstrip("/")
    # Spark qualifies a relative path against the driver's working directory; the executors' check needs it whole
    check_executors_see(spark, root if is_remote(root) else str(Path(root.removeprefix("file://")).resolve()))
    files = locate(spark, root)
    # The acks (one line per record) are by far the largest input; the queries over them run in a session of
    # their own sized by them (_analyse), the rest are sized by the other histories.
    sizes = _InputSizes(input_bytes(spark, [p for p in (files.members, files.harness, files.brokers) if p]),
                        input_bytes(spark, [files.acks]) if files.acks else 0)
    with sized_for(spark, sizes.histories):
        return _analyse(spark, root, files, sizes, episode_gap_ms, min_pause_ms, hang_ms)


@dataclass(frozen=True)
class _InputSizes:
    histories: int  # member, harness and broker logs
    acks: int


def _analyse(spark: SparkSession, root: str, files, sizes: _InputSizes, episode_gap_ms: int, min_pause_ms: int,
             hang_ms: int) -> Metrics:
    notes: list[str] = []

    all_events = read_member_events(spark, files.members).persist(StorageLevel.MEMORY_AND_DISK)
    # Share-group members (KIP-932) are measured apart (share_measures); the consumer-group analysis never sees them.
    split = split_members(all_events, STARTED_FIELDS)
    split.started.update({member: _started_fields(fields) for member, fields in split.started.items()})
    events_df = split.consumer_events(all_events)
    record_frames = None
    try:
        ctrl_rows = events_df.filter(F.col("name").isin(*CONTROL_NAMES)).collect()
        failures = events_df.filter(
            ((F.col("name") == "committed") & F.col("error").isNotNull()) | (F.col("name") == "error")
        ).groupBy("name").count().collect()
        failure_counts = {r["name"]: int(r["count"]) for r in failures}
        handler_errors = handler_error_frame(events_df)
        last_ts = {r["member"]: r["last"] for r in events_df.groupBy("member").agg(F.max("ts_ms").alias("last")).collect()}
        # Where a run without harness windows ends: its consumer members' last event, else (share members only)
        # any member's.
        last_event_ms = max(last_ts.values(), default=None) or _last_event_ms(all_events, root)
        notes += _clock_steps(events_df)
        all_harness = _harness(spark, files.harness, notes)
        harness = split.consumer_actions(all_harness)
        windows = _windows(harness)
        events, started = _member_events(ctrl_rows)
        by_member: dict[str, list[MemberEvent]] = defaultdict(list)
        for ev in events:
            by_member[ev.member].append(ev)
        kills = _first_by_target(harness, Action.MEMBER_KILL)
        lives = member_lives(by_member, last_ts, kills, _exits(harness), windows.run_end_ms)
        intervals = [iv for m, evs in by_member.items() for iv in control.ownership_intervals(evs, lives[m])]
        stall_end = windows.run_end_ms or last_event_ms
        intervals = stalls.end_at_give_ups(intervals, stalls.client_give_ups(harness, stall_end))
        shared = control.duplicate_ownership(intervals)
        teardown_after = windows.drain_end_ms if windows.drain_end_ms is not None else windows.run_end_ms
        formed = next((h["ts_ms"] for h in harness if h["kind"] == Action.STEP_END and h["target"] == "wait_stable"), None)
        episodes = rebalance_episodes(events, lives, gap_ms=episode_gap_ms, teardown_after_ms=teardown_after,
                                      bounce_windows=windows.bounces, formed_at_ms=formed)
        revs = control.revocations(by_member, lives, intervals, episodes)

        batches = records.processed_batches(events_df)
        ack_session = session_for(spark, sizes.acks)
        acks = split.consumer_acks(read_ack_lines(ack_session, files.acks) if files.acks else None)
        cutoff = windows.drain_end_ms or windows.run_end_ms or last_event_ms
        busy = [(e.start_ms, e.end_ms) for e in episodes if not e.teardown]
        record_frames = records.record_frames(spark, batches, None, cutoff, windows.bounces + busy)
        # The acks' one pass keeps the cores busy parsing; the member histories' queries run meanwhile on this
        # thread, their tasks taking turns with the pass's (fair scheduler pools, docs/analysis.md).
        with ThreadPoolExecutor(1, thread_name_prefix="acks") as pool:
            summary = pool.submit(_summarise_acks, ack_session, record_frames, acks) if acks is not None else None
            try:
                inv = invariants.check_invariants(spark, events_df, intervals)
                latency_series = latency_timeseries(batches)
                dups = records.duplicates(record_frames, shared, intervals)
            finally:  # attached also when the queries above failed, so that it is released below
                if summary is not None:
                    record_frames.acks = summary.result()
        ack_totals = record_frames.ack_totals
        acks_state = ack_state(spark, root, ack_totals.acked if ack_totals else None, harness)
        if acks_state.note:
            notes.append(acks_state.note)
        unlocated_acks = ack_totals.unlocated if ack_totals else None
        if unlocated_acks:
            notes.append(f"{unlocated_acks} acks carry no offset (an idempotent producer's retry the broker had "
                         "already written): they cannot be matched with processing, and lost_records counts the others")
        firsts = records.first_waits(record_frames)
        gap_settings = gaps.GapSettings(min_pause_ms=min_pause_ms, cutoff_ms=cutoff)
        # Three independent queries, each mostly one task long: side by side they share both cores.
        with ThreadPoolExecutor(2, thread_name_prefix="gaps") as pool:
            partition_gaps = pool.submit(gaps.availability_gaps, batches, firsts, gap_settings, per_partition=True)
            group_gaps = pool.submit(gaps.availability_gaps, batches, firsts, gap_settings, per_partition=False)
            stats = records.record_stats(record_frames, dups)
            partition_gaps, group_gaps = partition_gaps.result(), group_gaps.result()
        effects = effect_measures(ack_session, root, acks)
        with sized_for(spark, sizes.histories + sizes.acks):  # the share analysis reads the acks too
            share = analyse_share(spark, split, all_events, all_harness, cutoff, windows.run_end_ms, root, files.acks)
    finally:
        all_events.unpersist()
        if record_frames is not None:
            record_frames.release()
    if acks is None:
        notes.append("no ack log: pauses start at the produce time of processed batches; records never processed are not seen")

    end_of_run = windows.run_end_ms or stats.last_processed_ms or last_event_ms
    faults = causes.fault_context(harness, lives, episodes, end_of_run)
    pauses = causes.attribute(partition_gaps, faults)
    stop_the_world = causes.attribute(group_gaps, faults, group_level=True)

    group_ids = {s["group_id"] for s in started.values() if s.get("group_id")}
    all_lines = parse_lines(read_broker_lines(spark, files.brokers)) if files.brokers else []
    broker_lines = for_group(all_lines, group_ids, windows.run_start_ms, windows.run_end_ms)
    if all_lines and not group_ids:
        notes.append("no member named its group: broker log lines cannot be scoped and are left out")
    joined = {m: min(e.ts for e in evs if e.name == "assigned") for m, evs in by_member.items()
              if any(e.name == "assigned" for e in evs)}
    moves = episode_movements(episodes, intervals, lives, joined)
    ep_frame = episode_frame(episodes, revs, pauses, stop_the_world, broker_reactions(broker_lines), harness, moves)
    all_partitions = {(iv.topic, iv.partition) for iv in intervals}
    closes = member_closes(harness, by_member, episodes)

    frames = {
        "ownership_intervals": intervals_frame(intervals),
        "rebalance_episodes": ep_frame,
        "duplicate_ownership": shared_frame(shared),
        "partition_pauses": pauses,
        "stop_the_world": stop_the_world,
        "timeseries": stats.timeseries,
        "latency_timeseries": latency_series,
        "harness_actions": harness_frame(all_harness),
        "revocations": revocations_frame(revs),
        "broker_rebalances": broker_frame(broker_lines),
        "invariant_violations": inv.frame(),
        "member_closes": closes,
        "handler_errors": handler_errors,
        **share.frames,
    }
    values = _metric_values(frames, stats, started, windows, all_partitions, broker_lines, files.brokers is not None,
                            last_ts, acks_state)
    values["acks_without_offset"] = known(
        "acks_without_offset", unlocated_acks if acks_state.unknown_reason is None else None,
        reason_if_none=acks_state.unknown_reason or "")
    values.update(pause_measures(pauses, stop_the_world, min_pause_ms, hang_ms))
    values.update(inv.metrics())
    values.update({name: known(name, value, reason_if_none=why) for name, (value, why) in close_measures(closes).items()})
    values["commit_failures"] = known("commit_failures", failure_counts.get("committed", 0))
    values["client_errors"] = known("client_errors", failure_counts.get("error", 0))
    values.update(effects.values)
    values["handler_errors"] = known("handler_errors", len(handler_errors))
    values["handler_error_records"] = known("handler_error_records", int(handler_errors["records"].sum()))
    open_pauses = int(pauses["open"].astype(bool).sum()) if len(pauses) else 0
    if open_pauses:
        notes.append(f"{open_pauses} partition pause(s) still open when the drain ended: counted with their length so far")
    result = Metrics(
        run_dir=root,
        metrics=values,
        config=run_config(started, harness).model_copy(
            update={"commit_failures": failure_counts.get("committed", 0)}),
        windows=windows,
        latency_source=stats.latency_source,
        notes=notes,
        tables={name: LAYOUT.table(name).as_posix() for name in TABLES},
        examples={"lost_records": stats.lost_examples, "duplicates": stats.duplicate_examples,
                  "effects_missing": effects.missing_examples, **inv.examples},
        settings={"min_pause_ms": min_pause_ms, "episode_gap_ms": episode_gap_ms, "hang_ms": hang_ms, "cutoff_ms": cutoff,
                  "group_ids": sorted(group_ids)},
    )
    result = share.complete(result)
    write_outputs(spark, root, result, frames)
    return result


def handler_error_frame(events_df) -> pd.DataFrame:
    """Every ``handler_error`` of the members' histories: the user's handler raised on a batch."""
    columns = SCHEMAS["handler_errors"].names
    rows = events_df.filter(F.col("name") == "handler_error").select(
        "member", "ts_ms", "error_type", "message", "records", F.to_json("ranges").alias("ranges"), "action"
    ).orderBy("ts_ms").collect()
    return pd.DataFrame([r.asDict() for r in rows], columns=columns).astype({"records": "int64"})


def _summarise_acks(session: SparkSession, frames: records.RecordFrames, acks: DataFrame) -> AckSummary:
    with scheduler_pool(session, "acks"):
        return records.summarise_acks(frames, acks)


def _movement_values(live_eps: pd.DataFrame) -> dict[str, MetricValue]:
    """Sums over the running group's episodes; unknown when one of them never settled (nothing to compare)."""
    unsettled = live_eps[live_eps["partitions_moved"].isna()] if len(live_eps) else live_eps
    if len(unsettled):
        why = f"rebalance episode {int(unsettled['episode_id'].iloc[0])} never settled"
        return {name: unknown(name, why) for name in ("partitions_moved", "partitions_moved_min", "assignment_spread_max")}
    spreads = live_eps["assignment_spread"].dropna() if len(live_eps) else pd.Series(dtype=float)
    return {"partitions_moved": known("partitions_moved", int(live_eps["partitions_moved"].sum()) if len(live_eps) else 0),
            "partitions_moved_min": known("partitions_moved_min",
                                          int(live_eps["partitions_moved_min"].sum()) if len(live_eps) else 0),
            "assignment_spread_max": known("assignment_spread_max", int(spreads.max()) if len(spreads) else None,
                                           reason_if_none="no rebalance of the running group left a live member")}


def _clock_steps(events_df) -> list[str]:
    """A wall clock that stepped during the run shows as a change in (wall - monotonic) within one file."""
    if "mono_ms" not in events_df.columns:
        return []
    offset = F.col("ts_ms") - F.col("mono_ms")
    rows = (events_df.filter(F.col("mono_ms").isNotNull()).groupBy("member")
            .agg((F.max(offset) - F.min(offset)).alias("drift")).filter(F.col("drift") > CLOCK_STEP_MS).collect())
    return [f"member {r['member']}: wall clock moved {int(r['drift'])} ms against the monotonic clock during the run; "
            f"its timings may be off by that much" for r in rows]


def _last_event_ms(events, root: str) -> int:
    last = events.agg(F.max("ts_ms")).first()[0]
    if last is None:
        raise TestbedError(f"{root}: the member histories (history/members/*.jsonl) hold no event with a name and a "
                           "timestamp: nothing to analyse")
    return int(last)


def _exits(harness: list[dict[str, Any]]) -> dict[str, MemberExit]:
    out: dict[str, MemberExit] = {}
    for h in harness:
        if h["kind"] == Action.MEMBER_EXIT and h["target"]:
            out[h["target"]] = MemberExit(h["ts_ms"], str(h["detail"].get("cause") or "exited"))
    return out


def _harness(spark: SparkSession, path: str | None, notes: list[str]) -> list[dict[str, Any]]:
    if path is None:
        notes.append("no harness log: no kill times, bounce windows or drain end")
        return []
    rows = read_harness(spark, path).orderBy("ts_ms").collect()
    return [
        {"kind": r["kind"], "ts_ms": r["ts_ms"], "target": r["target"], "detail": json.loads(r["detail"]) if r["detail"] else {}}
        for r in rows
    ]


def _first_by_target(harness: list[dict[str, Any]], kind: Action) -> dict[str, int]:
    out: dict[str, int] = {}
    for h in harness:
        if h["kind"] == kind and h["target"]:
            out.setdefault(h["target"], h["ts_ms"])
    return out


def _windows(harness: list[dict[str, Any]]) -> Windows:
    def last(kind: Action) -> int | None:
        ts = [h["ts_ms"] for h in harness if h["kind"] == kind]
        return ts[-1] if ts else None

    bounces: list[tuple[int, int]] = []
    open_start: int | None = None
    for h in harness:
        if h["kind"] == Action.BOUNCE_START:
            open_start = h["ts_ms"] if open_start is None else open_start
        elif h["kind"] == Action.BOUNCE_END and open_start is not None:
            bounces.append((open_start, h["ts_ms"]))
            open_start = None
    starts = [h["ts_ms"] for h in harness if h["kind"] == Action.RUN_START]
    end = last(Action.RUN_END)
    if open_start is not None and end is not None:
        bounces.append((open_start, end))  # an interrupted bounce lasts to the end of the run
    return Windows(run_start_ms=starts[0] if starts else None, run_end_ms=end, drain_end_ms=last(Action.DRAIN_END), bounces=bounces)


def _member_events(rows: list) -> tuple[list[MemberEvent], dict[str, dict[str, Any]]]:
    events: list[MemberEvent] = []
    started: dict[str, dict[str, Any]] = {}
    for r in rows:
        parts = tuple((p[0], int(p[1])) for p in (r["partitions"] or []))
        events.append(MemberEvent(r["ts_ms"], r["member"], r["name"], parts, r["seq"]))
        if r["name"] == "started":
            started[r["member"]] = _started_fields(r.asDict())
    return events, started


def _started_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A started row's STARTED_FIELDS; its settings (a free-form object) arrive as their JSON text."""
    kept = {k: fields.get(k) for k in STARTED_FIELDS}
    if isinstance(kept["settings"], str):
        kept["settings"] = json.loads(kept["settings"])
    return kept


def _metric_values(frames, stats: records.RecordStats, started, windows: Windows, all_partitions, broker_lines,
                   have_broker_logs: bool, last_ts: dict[str, int], acks_state) -> dict[str, MetricValue]:
    eps = frames["rebalance_episodes"]
    # Changes to a running group: neither its formation nor its teardown.
    live_eps = eps[~(eps["teardown"].astype(bool) | eps["formation"].astype(bool))] if len(eps) else eps
    revs = frames["revocations"]
    shared = frames["duplicate_ownership"]
    ts = frames["timeseries"]
    v: dict[str, MetricValue] = {}
    start = windows.run_start_ms if windows.run_start_ms is not None else min(last_ts.values(), default=None)
    end = windows.run_end_ms if windows.run_end_ms is not None else max(last_ts.values(), default=None)
    v["run_duration_ms"] = known("run_duration_ms", end - start if start is not None and end is not None else None)
    v["members"] = known("members", len(started))
    v["partitions"] = known("partitions", len(all_partitions))
    v["records_processed"] = known("records_processed", stats.records_processed)
    v["records_unique_processed"] = known("records_unique_processed", stats.unique_processed)
    no_acks = acks_state.unknown_reason
    v["records_acked"] = known("records_acked", stats.acked if no_acks is None else None, reason_if_none=no_acks or "")
    v["lost_records"] = known("lost_records", stats.lost if no_acks is None else None, reason_if_none=no_acks or "")
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
    v.update(_movement_values(live_eps))
    mp = revs.drop_duplicates(["ts_ms", "member"])["member_pause_ms"].dropna() if len(revs) else pd.Series(dtype=float)
    v["member_pause_total_ms"] = known("member_pause_total_ms", int(mp.sum()))
    v["max_member_pause_ms"] = known("max_member_pause_ms", int(mp.max()) if len(mp) else 0)
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
        if no_acks is None else unknown("lag_max_records", no_acks)
    )
    if have_broker_logs:
        classic = classic_rebalances(broker_lines)
        v["broker_rebalances"] = known("broker_rebalances", len(classic))
        v["broker_rebalance_total_ms"] = known("broker_rebalance_total_ms", sum(b.stabilized_ms - b.prepare_ms for b in classic))
        v["broker_rebalance_max_ms"] = known("broker_rebalance_max_ms", max((b.stabilized_ms - b.prepare_ms for b in classic), default=0))
        v["broker_epoch_bumps"] = known("broker_epoch_bumps", sum(ln.event == "epoch_bump" for ln in broker_lines))
        v["members_fenced"] = known("members_fenced", sum(ln.event == "fenced" for ln in broker_lines))
        computed = [ln.compute_ms for ln in broker_lines if ln.event == "target_assignment" and ln.compute_ms is not None]
        v["broker_assignment_max_ms"] = known("broker_assignment_max_ms", max(computed, default=None),
                                              reason_if_none="the coordinator logged no target assignment (classic group)")
    else:
        for name in ("broker_rebalances", "broker_rebalance_total_ms", "broker_rebalance_max_ms", "broker_epoch_bumps",
                     "members_fenced", "broker_assignment_max_ms"):
            v[name] = unknown(name, "no broker logs at brokers/broker-*.log")
    return v
