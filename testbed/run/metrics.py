"""The typed result of an analysis, as analysis/metrics.json holds it.

The metric names and units are declared by the analysis's stages where each figure is computed
(``testbed.analysis.catalog``); docs/metrics.md documents every one, and a unit test keeps the two in step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class MetricValue(BaseModel):
    """A measurement, or ``value=None`` with the reason it could not be made (never a silent 0)."""

    model_config = ConfigDict(frozen=True)
    value: float | int | None
    unit: str
    unknown: str | None = None

    @property
    def known(self) -> bool:
        return self.unknown is None


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
    members_crashed: list[str] = Field(
        default_factory=list, description="members whose program crashed (the harness's member_crash actions)")
    crashes_allowed: bool = Field(
        default=False, description="the scenario allows its programs to crash (allow_crashes: true in its file)")
    group_kinds: list[str] = Field(
        default_factory=list, description="the kinds of group the run's members formed (consumer, share; streams "
                                          "beside consumer for Kafka Streams instances), decided once by the "
                                          "analysis (testbed.analysis.kinds); empty in older files")
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
