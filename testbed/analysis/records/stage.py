"""The records stage of a consumer group: its processed batches against the producers' acks (lost, duplicated,
late, lagging records), the invariants over batches and commits, the availability gaps (before their causes are
known: ``group.pauses``), and the effects in the user's store.

The acks' one pass runs on a thread of its own while the member histories' queries go on, and the gap queries
run side by side (docs/analysis.md, "How the record figures are computed").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from ..intervals import OwnershipInterval, SharedSpan
from ..settings import AnalysisSettings
from ..spark.session import session_for
from ..spark.side_by_side import in_pool, side_by_side
from ..stage import Catalogue, Measured, Metric, Unknown, Value
from ..view.harness import undrained
from ..view.run_view import GroupView
from ..view.started import streams_block
from . import duplicate_causes, gaps, invariants
from .ack_state import AckState, ack_state
from .duplicate_causes import CAUSES, metric_name
from .duplicate_causes import MEANINGS as CAUSE_MEANINGS
from .effects import CATALOGUE as EFFECTS
from .effects import Effects, effect_measures
from .latency_timeseries import latency_timeseries
from .produce_failures import ProduceFailures, produce_failures
from .record_stats import (Duplicates, RecordFigures, RecordFrames, RecordStats, duplicates, first_waits,
                           processed_batches, record_figures, record_frames, record_stats, summarise_acks)

TP = tuple[str, int]
NO_LATENCY = "no processed record could be matched with a produce time"
NO_ACK_LOG = "no ack log: pauses start at the produce time of processed batches; records never processed are not seen"
PHASES = (("all", ""), ("steady", "_steady"), ("bounce", "_bounce"))
_OVER = {"all": "all records", "steady": "records whose wait (produce to first processing) met no bounce or rebalance",
         "bounce": "records whose wait (produce to first processing) overlapped a bounce or rebalance"}
_STATS = {"p50": "median", "p99": "99th percentile", "max": "maximum"}
TIMESERIES_SCHEMA = pa.schema(
    [("second", pa.int64()), ("processed", pa.int64()), ("processed_unique", pa.int64()), ("produced", pa.int64()),
     ("lag", pa.int64()), ("duplicates", pa.int64())])
LATENCY_SCHEMA = pa.schema(
    [("second", pa.int64()), ("width_s", pa.int64()), ("batches", pa.int64()), ("p50_ms", pa.float64()),
     ("p99_ms", pa.float64()), ("max_ms", pa.int64())])


@dataclass
class Records:
    """What the records stage found; ``partition_gaps`` and ``group_gaps`` are the availability gaps, their
    causes still to be attributed."""

    stats: RecordStats
    acks: AckState
    unlocated_acks: int | None  # acks without an offset (None without an ack log)
    invariants: invariants.Invariants
    latency: pd.DataFrame
    partition_gaps: pd.DataFrame
    group_gaps: pd.DataFrame
    effects: Effects
    undelivered: ProduceFailures  # the records the producers gave up on
    notes: list[str] = field(default_factory=list)
    undrained: str | None = None  # why a loss cannot be told: the run stopped before its final drain

    def records_undelivered(self) -> int | Unknown:
        found = self.undelivered
        return found.count if found.count is not None else Unknown(str(found.unknown_reason))

    def lost(self) -> Value | Unknown:
        return Unknown(self.undrained) if self.undrained is not None else self.needs_acks(self.stats.lost)

    def needs_acks(self, value: Value) -> Value | Unknown:
        """A figure of every acknowledged record: unknown when the ack logs are incomplete."""
        return Unknown(self.acks.unknown_reason) if self.acks.unknown_reason is not None else value

    def throughput_mean_rps(self) -> float | Unknown:
        first, last = self.stats.first_processed_ms, self.stats.last_processed_ms
        if first is not None and last and last > first:
            return round(self.stats.records_processed / ((last - first) / 1000), 3)
        return Unknown("fewer than two distinct processing times")

    def per_second_max(self, column: str) -> int | None:
        series = self.stats.timeseries
        return int(series[column].max()) if len(series) else None

    def lag_max(self) -> int | None | Unknown:
        """Lag needs every acknowledged record (without the acks the series has no lag)."""
        return self.needs_acks(None) if self.acks.unknown_reason is not None else self.per_second_max("lag")


def _latency(phase: str, suffix: str, stat: str) -> Metric[Records]:
    why = NO_LATENCY if phase == "all" else f"no records processed in {phase} phase"
    return Metric(f"e2e_latency{suffix}_{stat}_ms", "ms",
                  f"{_STATS[stat]} end-to-end latency over {_OVER[phase]}: per record (first processing): processing "
                  "time − produce time",
                  lambda r: getattr(r.stats.latency[phase], stat), none=why, better="lower")


CATALOGUE: Catalogue[Records] = Catalogue(
    Metric("records_processed", "records", "sum of `count` over `processed` events, duplicates included",
           lambda r: r.stats.records_processed),
    Metric("records_unique_processed", "records", "distinct (topic, partition, offset) processed by anyone",
           lambda r: r.stats.unique_processed),
    Metric("records_acked", "records", "distinct (topic, partition, offset) in the ack logs",
           lambda r: r.needs_acks(r.stats.acked), none=""),
    Metric("lost_records", "records", "acked records never processed by the end of the final drain (unknown when the "
           "run stopped before it)",
           lambda r: r.lost(), none="", better="lower"),
    Metric("records_undelivered", "records", "records the producers gave up on (a delivery that failed, a record "
           "purged when the load stopped): never acknowledged, so not in lost_records",
           lambda r: r.records_undelivered(), better="lower"),
    Metric("acks_without_offset", "records", "acks delivered without an offset (idempotent retry of a record already "
           "written): not matched, not in lost_records",
           lambda r: r.needs_acks(r.unlocated_acks), none=""),
    Metric("duplicates_total", "records", "processings of a record beyond its first (same or another member)",
           lambda r: r.stats.duplicates_total, better="lower"),
    Metric("duplicate_records", "records", "distinct records processed more than once",
           lambda r: r.stats.duplicate_records),
    Metric("duplicates_concurrent", "records", "duplicate processings inside a duplicate-ownership episode of that "
           "partition, or by a member that did not own the partition while another did (zombie)",
           lambda r: r.stats.duplicates_concurrent, better="lower"),
    Metric("duplicates_redelivered", "records", "the other duplicate processings: re-deliveries, each with its cause "
           "(the duplicates_<cause> figures)",
           lambda r: r.stats.duplicates_redelivered, better="lower"),
    # duplicates_concurrent above is the first cause; each other cause of duplicate processing has its figure
    *(Metric(metric_name(cause), "records", f"duplicate processings of cause {cause}: {CAUSE_MEANINGS[cause]}",
             lambda r, cause=cause: r.stats.duplicate_causes.count(cause))
      for cause in CAUSES if cause != "concurrent"),
    Metric("duplicates_commit_gap_max", "records", "the largest gap (record offset + 1 − committed offset) of a "
           "re-delivery below its previous processor's commit; 1: commits of the last processed offset, not the next",
           lambda r: r.stats.duplicate_causes.gap_max()),
    *(_latency(phase, suffix, stat) for phase, suffix in PHASES for stat in ("p50", "p99", "max")),
    Metric("throughput_mean_rps", "records/s", "records_processed / seconds between the first and last processed event",
           lambda r: r.throughput_mean_rps(), better="higher"),
    Metric("throughput_max_rps", "records/s", "busiest one-second bucket",
           lambda r: r.per_second_max("processed"), none="nothing processed"),
    Metric("lag_max_records", "records", "max over seconds of cumulative acked − cumulative uniquely processed",
           lambda r: r.lag_max(), none="nothing produced or processed", better="lower"),
)


def records(view: GroupView, settings: AnalysisSettings, intervals: Sequence[OwnershipInterval],
            shared: dict[TP, list[SharedSpan]], busy: Sequence[tuple[int, int]]) -> Records:
    """``intervals`` and ``shared``: the group's ownership (``group.control_plane``); ``busy``: the windows of its
    rebalances, the latency phase "bounce" with the bounces'."""
    with session_for(view.run.spark, view.run.sizes.acks) as ack_session:
        return _records(view, settings, intervals, shared, busy, ack_session)


def _records(view: GroupView, settings: AnalysisSettings, intervals: Sequence[OwnershipInterval],
             shared: dict[TP, list[SharedSpan]], busy: Sequence[tuple[int, int]],
             ack_session: SparkSession) -> Records:
    run, spark = view.run, view.run.spark
    cutoff = run.cutoff_ms
    batches = processed_batches(view.events)
    acks = view.ack_lines(ack_session)
    gap_settings = gaps.GapSettings(min_pause_ms=settings.min_pause_ms, cutoff_ms=cutoff)
    made: list[RecordFrames] = []  # released whatever fails, here or beside them

    def frames_and_what_needs_them() -> tuple[RecordFrames, Duplicates | None, AfterAcks]:
        # The acks' one pass keeps the cores busy parsing; the duplicates' queries run beside it, their tasks taking
        # turns with the pass's (fair scheduler pools, docs/analysis.md). What needs the acks' summary but not the
        # duplicates (the availability gaps, the latencies and per-second counts) follows the pass on its thread.
        frames = record_frames(spark, batches, None, cutoff, run.windows.bounces + list(busy))
        made.append(frames)
        dups, after = side_by_side(spark, lambda: duplicates(frames, shared, intervals, _cause_inputs(view)),
                                   lambda: _after_acks(ack_session, frames, acks, batches, gap_settings))
        return frames, dups, after

    try:
        # The latency series and the invariants need the batches and the events, not the frames: each on a thread of
        # its own from the start, beside the frames' making (a query's planning on one thread overlaps another's tasks).
        (frames, dups, (per_partition, group_wide, figures)), latency, inv = side_by_side(
            spark, frames_and_what_needs_them, lambda: latency_timeseries(batches),
            lambda: in_pool(spark, "invariants", lambda: invariants.check_invariants(spark, view.events, intervals)))
        totals = frames.ack_totals
        state = ack_state(spark, run.root, totals.acked if totals else None, view.actions)
        notes = [state.note] if state.note else []
        unlocated = totals.unlocated if totals else None
        if unlocated:
            notes.append(f"{unlocated} acks carry no offset (an idempotent producer's retry the broker had "
                         "already written): they cannot be matched with processing, and lost_records counts the others")
        stats = record_stats(frames, dups, figures)
        effects = effect_measures(ack_session, run.root, acks)
    finally:
        for each in made:
            each.release()
    if acks is None:
        notes.append(NO_ACK_LOG)
    notes += _cause_notes(stats.duplicate_causes)
    undelivered = produce_failures(spark, run.root, view.actions)
    if note := undelivered.note(run.windows.run_start_ms):
        notes.append(note)
    return Records(stats, state, unlocated, inv, latency, per_partition, group_wide, effects, undelivered, notes,
                   undrained(run.windows, stats.lost, "acknowledged records"))


def measured(found: Records) -> Measured:
    return Measured(
        {**CATALOGUE.measure(found), **invariants.CATALOGUE.measure(found.invariants), **EFFECTS.measure(found.effects)},
        {"timeseries": found.stats.timeseries, "latency_timeseries": found.latency,
         "invariant_violations": found.invariants.frame(), "duplicate_processings": found.stats.duplicate_causes.frame()},
        {"lost_records": found.stats.lost_examples, "duplicates": found.stats.duplicate_examples,
         "duplicate_causes": found.stats.duplicate_causes.examples,
         "effects_missing": found.effects.missing_examples, **found.invariants.examples},
        found.notes, latency_source=found.stats.latency_source)


def _cause_inputs(view: GroupView) -> duplicate_causes.CauseInputs:
    """What the causes of duplicate processing are judged from: the members' commits, deaths (a harness kill,
    a SIGKILL after the stop timeout, an exit by itself; not a history that merely ends), commit modes, and the
    Streams instances under exactly-once (they commit by transactions)."""
    died = {m: life.end_ms for m, life in view.lives.items() if life.died and life.reason != "vanished"}
    auto = {m: (s["commit_mode"] == "auto" if s.get("commit_mode") else None) for m, s in view.started.items()}
    transactional = frozenset(m for m, s in view.started.items()
                              if str(streams_block(s.get("streams")).get("processing_guarantee", "")).startswith("exactly_once"))
    return duplicate_causes.CauseInputs(duplicate_causes.commit_attempts(view.events), died, auto, transactional)


def _cause_notes(causes: duplicate_causes.DuplicateCauses) -> list[str]:
    notes = [causes.mismatch] if causes.mismatch else []
    if causes.left_out:
        notes.append(f"duplicate_processings lists at most {duplicate_causes.MAX_ROWS:,} rows per cause: "
                     f"{causes.left_out:,} left out (the duplicates_* figures count them all)")
    return notes


# The availability gaps per partition and group-wide, and the record figures: what ``_after_acks`` gives.
AfterAcks = tuple[pd.DataFrame, pd.DataFrame, RecordFigures]


def _after_acks(ack_session: SparkSession, frames: RecordFrames, acks: DataFrame | None, batches: DataFrame,
                gap_settings: gaps.GapSettings) -> AfterAcks:
    """The acks' summary (attached to ``frames`` at once, so that their release frees it whatever fails next),
    then the two kinds of availability gap and the record figures side by side (each query mostly one task
    long: side by side they share both cores)."""
    if acks is not None:
        frames.acks = in_pool(ack_session, "acks", lambda: summarise_acks(frames, acks))
    firsts = first_waits(frames)
    per_partition, group_wide, figures = side_by_side(
        frames.spark, lambda: gaps.availability_gaps(batches, firsts, gap_settings, per_partition=True),
        lambda: gaps.availability_gaps(batches, firsts, gap_settings, per_partition=False),
        lambda: record_figures(frames))
    return per_partition, group_wide, figures
