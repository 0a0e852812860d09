"""The metric catalogue (names, units) and the typed result of an analysis.

docs/metrics.md documents every name here; a unit test keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

CATALOG: dict[str, str] = {
    "run_duration_ms": "ms",
    "members": "count",
    "partitions": "count",
    "records_processed": "records",
    "records_unique_processed": "records",
    "records_acked": "records",
    "lost_records": "records",
    "acks_without_offset": "records",
    "duplicates_total": "records",
    "duplicate_records": "records",
    "duplicates_concurrent": "records",
    "duplicates_redelivered": "records",
    "duplicate_ownership_ms": "ms",
    "duplicate_ownership_episodes": "count",
    "duplicate_ownership_longest_ms": "ms",
    "revocations_live": "partitions",
    "revocations_shutdown": "partitions",
    "needless_revocations": "partitions",
    "partitions_lost": "partitions",
    "rebalance_episodes": "count",
    "rebalance_total_ms": "ms",
    "rebalance_max_ms": "ms",
    "partitions_moved": "partitions",
    "partitions_moved_min": "partitions",
    "assignment_spread_max": "partitions",
    # availability gaps (testbed/analysis/gaps.py): pauses of at least the analysis's min_pause_ms
    "partition_pauses": "count",
    "partition_pauses_open": "count",
    "partition_pause_total_ms": "ms",
    "p50_partition_pause_ms": "ms",
    "p99_partition_pause_ms": "ms",
    "max_partition_pause_ms": "ms",
    "max_partition_pause_total_ms": "ms",
    "p50_rebalance_pause_ms": "ms",
    "max_rebalance_pause_ms": "ms",
    "max_freeze_pause_ms": "ms",
    "max_member_partition_pause_ms": "ms",
    "hung_members": "count",
    "max_hang_ms": "ms",
    "max_death_pause_ms": "ms",
    "max_broker_fault_pause_ms": "ms",
    "max_unexplained_pause_ms": "ms",
    "startup_wait_max_ms": "ms",
    "stop_the_world_ms": "ms",
    "max_stop_the_world_ms": "ms",
    "member_pause_total_ms": "ms",
    "max_member_pause_ms": "ms",
    **{f"e2e_latency{phase}_{stat}_ms": "ms" for phase in ("", "_steady", "_bounce") for stat in ("p50", "p99", "max")},
    "throughput_mean_rps": "records/s",
    "throughput_max_rps": "records/s",
    "lag_max_records": "records",
    "broker_rebalances": "count",
    "broker_rebalance_total_ms": "ms",
    "broker_rebalance_max_ms": "ms",
    "broker_epoch_bumps": "count",
    "members_fenced": "count",
    "broker_assignment_max_ms": "ms",
    "commit_failures": "count",
    "client_errors": "count",
    "handler_errors": "count",
    "effects_stored": "records",
    "effects_missing": "records",
    "effects_duplicated": "records",
    "handler_error_records": "records",
    # kafkatest-style invariants, rebalance-aware (testbed/analysis/invariants.py)
    "batches_outside_ownership": "count",
    "records_outside_ownership": "records",
    "records_outside_ownership_while_owned": "records",
    "offset_skips": "count",
    "offset_skipped_records": "records",
    "offset_steps_back": "count",
    "offset_repeated_records": "records",
    "commits_ahead_of_processing": "count",
    "records_redelivered_below_commit": "records",
    # closes the harness asked for (testbed/analysis/closes.py)
    "member_closes": "count",
    "close_p50_ms": "ms",
    "close_max_ms": "ms",
    "close_hangs": "count",
    "closes_during_rebalance": "count",
}

# Share groups (KIP-932, testbed/analysis/share_*.py): unknown in a run without share members, and every other
# figure but run_duration_ms and members is unknown in a run with only share members.
SHARE_CATALOG: dict[str, str] = {
    "share_members": "count",
    "share_members_acquiring": "count",
    "share_acquisitions": "count",
    "share_records_acquired": "records",
    "share_redeliveries": "count",
    "share_redeliveries_released": "count",
    "share_redeliveries_lock_expired": "count",
    "share_redeliveries_member_frozen": "count",
    "share_redeliveries_member_left": "count",
    "share_redeliveries_member_killed": "count",
    "share_redeliveries_unjudged": "count",
    "share_redelivery_latency_p50_ms": "ms",
    "share_redelivery_latency_max_ms": "ms",
    "share_redelivery_after_fault_max_ms": "ms",
    "share_delivery_count_max": "count",
    "share_concurrent_acquisitions": "count",
    "share_redelivered_after_completion": "count",
    "share_late_acks_accepted": "records",
    "share_late_acks_noop": "records",
    "share_late_acks_rejected": "records",
    "share_ack_failures": "records",
    "share_acks_without_acquisition": "records",
    "share_records_accepted": "records",
    "share_records_archived": "records",
    "share_records_acked": "records",
    "share_records_lost": "records",
    "share_throughput_rps": "records/s",
    "share_client_errors": "count",
}
SHARE_METRICS = tuple(SHARE_CATALOG)
CATALOG.update(SHARE_CATALOG)

TABLES = (
    "ownership_intervals",
    "rebalance_episodes",
    "duplicate_ownership",
    "partition_pauses",
    "stop_the_world",
    "timeseries",
    "latency_timeseries",
    "harness_actions",
    "revocations",
    "broker_rebalances",
    "invariant_violations",
    "member_closes",
    "handler_errors",
    "share_deliveries",
    "share_delivery_counts",
    "share_timeline",
)


class MetricValue(BaseModel):
    """A measurement, or ``value=None`` with the reason it could not be made (never a silent 0)."""

    model_config = ConfigDict(frozen=True)
    value: float | int | None
    unit: str
    unknown: str | None = None

    @property
    def known(self) -> bool:
        return self.unknown is None


def known(name: str, value: float | int | None, *, reason_if_none: str = "no data to measure") -> MetricValue:
    unit = CATALOG[name]
    if value is None:
        return MetricValue(value=None, unit=unit, unknown=reason_if_none)
    return MetricValue(value=value, unit=unit)


def unknown(name: str, reason: str) -> MetricValue:
    return MetricValue(value=None, unit=CATALOG[name], unknown=reason)


class RunConfig(BaseModel):
    """What the group ran with, read from the members' ``started`` events and the harness actions."""

    model_config = ConfigDict(frozen=True)
    protocol: Literal["eager", "cooperative", "consumer", "mixed", "unknown", "share"]  # share: only share members
    commit_modes: list[str] = Field(default_factory=list)
    static_membership: bool = False
    clients: list[str] = Field(default_factory=list)
    assignors: list[str] = Field(default_factory=list)
    faults: list[str] = Field(default_factory=list, description="harness action kinds that are faults")
    cut_off_past_session_timeout: bool | None = Field(
        default=None, description="some member was cut off from its group (paused, or partitioned from the "
                                  "brokers) for longer than its session timeout (None: cannot tell)")
    members_cut_off_past_timeout: list[str] = Field(
        default_factory=list, description="members cut off longer than their effective session timeout")
    members_cut_off_timeout_unknown: list[str] = Field(
        default_factory=list, description="members cut off for a time that cannot be compared with a session timeout")
    commit_failures: int = Field(default=0, description="offset commits the clients reported as failed")
    members: dict[str, dict[str, Any]] = Field(default_factory=dict)


class Windows(BaseModel):
    run_start_ms: int | None
    run_end_ms: int | None
    drain_end_ms: int | None
    bounces: list[tuple[int, int]]


class Metrics(BaseModel):
    """Everything ``analyse`` found; serialised as analysis/metrics.json."""

    schema_version: int = 2
    run_dir: str
    metrics: dict[str, MetricValue]
    config: RunConfig
    windows: Windows
    latency_source: str
    notes: list[str] = Field(default_factory=list)
    tables: dict[str, str] = Field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict, description="analysis parameters the figures depend on")

    def __getitem__(self, name: str) -> MetricValue:
        if name not in self.metrics:
            raise KeyError(f"unknown metric {name!r}; known: {', '.join(sorted(self.metrics))}")
        return self.metrics[name]
