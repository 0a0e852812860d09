"""The consumer group as a group kind (``KIND``): its stages in order, what it sets of the run's configuration,
and the metrics, tables and examples it writes.

Stages: failures (what the members reported), the control plane (lives, ownership, episodes, revocations), the
records (against the acks; availability gaps), the coordinator's logs, the pauses (the gaps with their causes),
the episodes table, the closes, the programs' crashes. A Kafka Streams application's instances are members too;
what only they tell (their tasks, stores and output) is the Streams kind's (``streams.streams_application``), which
reads this kind's control plane (``control_plane_of``).
"""

from __future__ import annotations

import pyarrow as pa

from ...run.metrics import RunConfig
from ..records import duplicate_causes, effects, invariants
from ..records import stage as record_stage
from ..group_kind import GroupKind
from ..settings import AnalysisSettings
from ..stage import Measured
from ..view.clocks import mark_within_uncertainty
from ..view.run_view import GroupView
from . import closes, control_plane, coordinator, crashes, episode_table, failures, pauses
from .broker_logs import broker_reactions
from .config import run_config
from .movement import episode_movements

ABSENT = "no consumer-group member in this run (a share-group run: see the share_* figures)"
CATALOGUES = (control_plane.CATALOGUE, record_stage.CATALOGUE, episode_table.CATALOGUE, pauses.CATALOGUE,
              coordinator.CATALOGUE, failures.CATALOGUE, effects.CATALOGUE, invariants.CATALOGUE, closes.CATALOGUE,
              crashes.CATALOGUE)
SCHEMAS: dict[str, pa.Schema] = {
    **control_plane.SCHEMAS,
    "rebalance_episodes": episode_table.SCHEMA,
    **pauses.SCHEMAS,
    "timeseries": record_stage.TIMESERIES_SCHEMA,
    "latency_timeseries": record_stage.LATENCY_SCHEMA,
    "broker_rebalances": coordinator.SCHEMA,
    "invariant_violations": invariants.SCHEMA,
    "duplicate_processings": duplicate_causes.SCHEMA,
    "member_closes": closes.SCHEMA,
    "handler_errors": failures.SCHEMA,
    **crashes.SCHEMAS,
}
EXAMPLES = ("lost_records", "duplicates", "duplicate_causes", "effects_missing", *invariants.KINDS)


def measure(view: GroupView, settings: AnalysisSettings) -> Measured:
    run = view.run
    clock = view.clock_steps()
    failed = failures.failures(view)
    plane = control_plane_of(view, settings)
    busy = [(e.start_ms, e.end_ms) for e in plane.episodes if not e.teardown]
    records = record_stage.records(view, settings, plane.intervals, plane.shared, busy)
    end_of_run = run.windows.run_end_ms or records.stats.last_processed_ms or run.last_event_ms
    paused = pauses.pauses(records.partition_gaps, records.group_gaps, view.actions, plane.lives, plane.episodes,
                           end_of_run, settings, run.host, plane.intervals)
    logged, coordinator_notes = coordinator.coordinator(view)
    moves = episode_movements(plane.episodes, plane.intervals, plane.lives, plane.joined)
    episodes = episode_table.Episodes(episode_table.episode_frame(
        plane.episodes, plane.revocations, paused.partition, paused.group, broker_reactions(logged.lines),
        view.actions, moves))
    measured = Measured.of(
        Measured(notes=clock), failures.measured(failed), control_plane.measured(plane), record_stage.measured(records),
        coordinator.measured(logged, coordinator_notes), episode_table.measured(episodes), pauses.measured(paused),
        closes.measured(closes.member_closes(view.actions, view.control, plane.episodes)),
        crashes.measured(crashes.member_crashes(run.spark, view.events, view.actions, plane.intervals,
                                                plane.revocations, paused.partition)),
        Measured(settings={"group_ids": sorted(view.group_ids)}))
    if note := mark_within_uncertainty(measured.tables, view.actions):  # members on other machines' clocks
        measured.notes.append(note)
    return measured


def control_plane_of(view: GroupView, settings: AnalysisSettings) -> control_plane.ControlPlane:
    """The group's lives, ownership, episodes and revocations, computed once for every kind that reads them."""
    return view.once("control_plane", lambda: control_plane.control_plane(view, settings))


def configure(config: RunConfig | None, view: GroupView, measured: Measured | None, present: list[str]) -> RunConfig:
    """The run's configuration as the consumer group's members and the harness tell it (the base every other
    kind completes; made also in a run without consumer-group members)."""
    commit_failures = int(measured.metrics["commit_failures"].value or 0) if measured is not None else 0
    return run_config(view.started, view.actions).model_copy(update={"commit_failures": commit_failures})


KIND = GroupKind("consumer", None, CATALOGUES, SCHEMAS, EXAMPLES, ABSENT, measure, configure)
