"""The scenario file format: typed models of cluster, topics, load, member specs, fleet and expectations, and
the file as a whole (its steps: ``testbed.scenario.step_model``).

These models check each field and each part on its own; what one part says against another is refused by
``testbed.scenario.cross_checks``, and ``testbed.scenario.model.Scenario`` is the file with both done.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..load.records import KeyDistribution
from ..members.spec import MemberSpec
from ..analysis.metric_names import metric_names
from ..analysis.settings import AnalysisSettings
from ..settings import DEFAULT_KAFKA_VERSION
from ..placement.model import Placement
from .base import NAME, MemberCount, ScenarioPart
from .refusals import did_you_mean
from .step_model import Step, kafka_release

class ClusterModel(ScenarioPart):
    """Brokers to start, or an existing cluster's bootstrap servers (broker steps are then refused)."""

    brokers: Literal[1, 3] = 1
    kafka_version: str = DEFAULT_KAFKA_VERSION
    broker_settings: dict[str, str] = Field(default_factory=dict)
    broker_log_levels: dict[str, Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"]] = Field(
        default_factory=dict, description="broker loggers' levels (log4j), e.g. {kafka.server.share.SharePartition: "
        "TRACE}: kept in the run's broker logs; only for brokers the testbed starts")
    bootstrap_servers: str | None = Field(default=None, description="use this cluster instead of starting one")

    @field_validator("kafka_version")
    @classmethod
    def _release(cls, version: str) -> str:
        return kafka_release(version)

    @field_validator("bootstrap_servers")
    @classmethod
    def _loopback(cls, value: str | None) -> str | None:
        if value is not None:
            hosts = [s.strip().rsplit(":", 1)[0] for s in value.split(",")]
            if not all(h.startswith("127.") for h in hosts):
                raise ValueError(f"bootstrap_servers must be 127.x addresses only, got {value!r}")
        return value

    @field_validator("broker_log_levels")
    @classmethod
    def _logger_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [name for name in value if not re.match(r"^[A-Za-z_$][A-Za-z0-9_$.]*$", name)]
        if bad:
            raise ValueError(f"not logger names: {', '.join(map(repr, bad))} (e.g. kafka.request.logger)")
        return value

    @model_validator(mode="after")
    def _levels_need_own_brokers(self) -> "ClusterModel":
        if self.broker_log_levels and self.bootstrap_servers is not None:
            raise ValueError("broker_log_levels: only for brokers the testbed starts, not with bootstrap_servers")
        return self

    @property
    def external(self) -> bool:
        return self.bootstrap_servers is not None


class TopicModel(ScenarioPart):
    name: str = Field(pattern=NAME)
    partitions: int = Field(ge=1, le=10_000)
    replication_factor: int | None = Field(default=None, ge=1, le=3)
    consumed: bool = Field(
        default=True, description="whether the group reads it; false for a topic only written, such as a program's "
        "output topic (created with the others; members do not subscribe to it, and the waits and the drain leave it "
        "out)")


class LoadModel(ScenarioPart):
    topic: str
    rate: float = Field(gt=0, description="records/s over all users")
    users: int = Field(default=4, ge=1)
    workers: int = Field(default=0, ge=0)
    duration_s: float = Field(default=600, gt=0, description="upper bound; the final drain stops the load earlier")
    keys: int = Field(default=1000, ge=1)
    key_distribution: KeyDistribution = "uniform"
    payload_bytes: int = Field(default=200, ge=1)
    placement: Placement | None = Field(None, description=(
        "where the Locust workers run when the run has a Ray cluster (docs/placement.md): spread, {node: ...} or "
        "{labels: {...}}, each worker a process on a node; none (the default): the whole load on this machine"))

    @model_validator(mode="after")
    def _placed_workers(self) -> "LoadModel":
        if self.placement is not None and self.workers < 1:
            raise ValueError("placement: the load's workers are what is placed; give workers: 1 or more")
        return self


class GroupTimeouts(ScenarioPart):
    """A group's own session and heartbeat (share.* or streams.* group configs): the heartbeat below the session,
    whose default is the brokers' 45 s."""

    session_timeout_ms: int | None
    heartbeat_interval_ms: int | None

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> "GroupTimeouts":
        if self.heartbeat_interval_ms is not None and self.heartbeat_interval_ms >= (self.session_timeout_ms or 45_000):
            raise ValueError(f"heartbeat_interval_ms: {self.heartbeat_interval_ms} must be below the session timeout "
                             f"({self.session_timeout_ms or 45_000} ms)")
        return self


class StreamsGroupModel(GroupTimeouts):
    """A Kafka Streams group's own settings under the streams protocol (KIP-1071: group configs streams.*, set on the
    group before its first instance starts; docs/streams.md). The standby replicas are the member spec's
    ``streams.num_standby_replicas``. None: the brokers' value. The brokers' floors are lowered by the testbed's
    broker defaults (session 6 s, heartbeat 1 s), so short scenarios can use short sessions."""

    session_timeout_ms: int | None = Field(default=None, ge=6_000, le=60_000,
                                           description="streams.session.timeout.ms; None: the brokers' (45 s)")
    heartbeat_interval_ms: int | None = Field(default=None, ge=1_000, le=15_000,
                                              description="streams.heartbeat.interval.ms; None: the brokers' (5 s)")
    initial_rebalance_delay_ms: int | None = Field(
        default=None, ge=0, description="streams.initial.rebalance.delay.ms: how long an empty group waits for more "
        "instances before its first assignment; None: the brokers' (3 s)")

    def group_configs(self) -> dict[str, str]:
        """The group's configs as the brokers name them (only those set)."""
        names = {"session_timeout_ms": "streams.session.timeout.ms",
                 "heartbeat_interval_ms": "streams.heartbeat.interval.ms",
                 "initial_rebalance_delay_ms": "streams.initial.rebalance.delay.ms"}
        return {names[k]: str(v) for k, v in self.model_dump().items() if v is not None}


AnalysisModel = AnalysisSettings  # the scenario's ``analysis:`` part is the analysis's own settings model


class ShareGroupModel(GroupTimeouts):
    """A share group's own settings (KIP-932), set on the group before its first member starts (group configs
    share.*; docs/share-groups.md). The brokers' floors are lowered by the testbed's broker defaults (lock 1 s,
    session 6 s, heartbeat 1 s), so short scenarios can use short locks."""

    record_lock_duration_ms: int = Field(default=30_000, ge=1_000, le=3_600_000,
                                         description="how long a member holds a record it acquired")
    delivery_count_limit: int = Field(default=5, ge=2, le=10,
                                      description="deliveries after which a record that comes back is archived")
    auto_offset_reset: Literal["earliest", "latest"] = Field(
        default="earliest", description="where the group starts reading a partition: 'earliest' (the testbed's "
        "default, so that records produced before a member joins are delivered) or 'latest' (Kafka's default)")
    session_timeout_ms: int | None = Field(default=None, ge=6_000, le=60_000,
                                           description="share.session.timeout.ms; None: the brokers' (45 s)")
    heartbeat_interval_ms: int | None = Field(default=None, ge=1_000, le=15_000,
                                              description="share.heartbeat.interval.ms; None: the brokers' (5 s)")

    def group_configs(self) -> dict[str, str]:
        """The group's configs as the brokers name them."""
        configs = {"share.record.lock.duration.ms": str(self.record_lock_duration_ms),
                   "share.delivery.count.limit": str(self.delivery_count_limit),
                   "share.auto.offset.reset": self.auto_offset_reset}
        if self.session_timeout_ms is not None:
            configs["share.session.timeout.ms"] = str(self.session_timeout_ms)
        if self.heartbeat_interval_ms is not None:
            configs["share.heartbeat.interval.ms"] = str(self.heartbeat_interval_ms)
        return configs


class FleetModel(MemberCount):
    """A fleet entry: members started before the first step."""


# ---- expectations ----------------------------------------------------------------------------

_EXPECTATION = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*(==|!=|<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")


class Expectation(ScenarioPart):
    """Written as text, ``<metric> <op> <number>``; read into its parts."""

    text: str
    metric: str
    op: Literal["==", "!=", "<=", ">=", "<", ">"]
    bound: float

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        m = _EXPECTATION.match(value)
        if not m:
            raise ValueError(f"expectation {value!r} must read '<metric> <op> <number>' with op one of "
                             "==, !=, <=, >=, <, >")
        return {"text": value.strip(), "metric": m[1], "op": m[2], "bound": float(m[3])}

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, metric: str) -> str:
        known = metric_names()
        if metric not in known:
            raise ValueError(f"unknown metric {metric!r}{did_you_mean(metric, list(known))}; "
                             f"known metrics: {', '.join(known)}")
        return metric

    @classmethod
    def parse(cls, text: str) -> "Expectation":
        return cls.model_validate(text)

    def holds(self, value: float) -> bool:
        return {"==": value == self.bound, "!=": value != self.bound, "<=": value <= self.bound,
                ">=": value >= self.bound, "<": value < self.bound, ">": value > self.bound}[self.op]


class EffectsModel(ScenarioPart):
    """What the user's program left in its store, read after the run: the records whose effects are there."""

    command: list[str] = Field(min_length=1, description=(
        "prints one JSON object a line, {topic, partition, offset}, for each record whose effect the store holds "
        "(a record written twice: two lines); arguments may use {run_dir}, {bootstrap_servers}, {group_id}, "
        "{topic:<name>}; run after the members stopped, from the directory testbed runs in"))
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict, description="environment variables; the same placeholders")
    timeout_s: float = Field(default=120.0, gt=0)


class ScenarioFile(ScenarioPart):
    """A scenario file as written, each part checked on its own."""

    name: str = Field(pattern=NAME)
    description: str = ""
    tags: list[Literal["smoke", "soak", "slow", "long"]] = Field(
        default_factory=list, description="smoke: the few-minute subset; long: left out of CI, whose time budget it "
        "would break while shorter tests cover its mechanism (pytest -m full_matrix runs it)")
    cluster: ClusterModel = Field(default_factory=ClusterModel)
    topics: list[TopicModel] = Field(min_length=1)
    group_id: str | None = Field(default=None, pattern=NAME)
    load: LoadModel | None = None
    members: dict[str, MemberSpec] = Field(min_length=1, description="named member specs")
    fleet: list[FleetModel] = Field(min_length=1, description="the members started first")
    steps: list[Step] = Field(default_factory=list)
    expect: list[Expectation] = Field(default_factory=list)
    allow_crashes: bool = Field(
        default=False, description="the user's programs may crash in this scenario (a poison record it is meant to "
        "show, say): the member_crashes checker finds crashes valid instead of invalid; they are counted either way")
    analysis: AnalysisModel = Field(default_factory=AnalysisModel)
    effects: EffectsModel | None = Field(
        default=None, description="a command that lists what the user's store holds after the run: each acknowledged "
        "record whose effect is missing (effects_missing) or there twice (effects_duplicated) is counted")
    share: ShareGroupModel | None = Field(
        default=None, description="the share group's settings, when the members are share members (default: "
        "ShareGroupModel's values)")
    streams_group: StreamsGroupModel | None = Field(
        default=None, description="the Kafka Streams group's settings under the streams protocol (KIP-1071), when "
        "the members are Streams instances with group_protocol 'streams'")
    matrix: dict[str, list[Any]] | list[dict[str, Any]] = Field(
        default_factory=dict, description="dotted path -> values (a product), or a list of points")

    @field_validator("steps", mode="before")
    @classmethod
    def _single_key_steps(cls, steps: Any) -> Any:
        """Steps read as ``- rolling_bounce: {to: coop}``; a bare ``- drain`` is a step without options.
        Anything else is left as written, for the error to show it."""
        if not isinstance(steps, list):
            return steps
        out = []
        for step in steps:
            if isinstance(step, str):
                step = {step: {}}
            if isinstance(step, dict) and "kind" not in step and len(step) == 1:
                (kind, options), = step.items()
                if options is None or isinstance(options, dict):
                    step = {"kind": kind, **(options or {})}
            out.append(step)
        return out

    @field_validator("members", mode="before")
    @classmethod
    def _name_specs(cls, members: Any) -> Any:
        if isinstance(members, dict):
            return {k: {"name": k, **v} if isinstance(v, dict) else v for k, v in members.items()}
        return members

    @property
    def is_share(self) -> bool:
        """Whether the run's group is a share group (every member spec in use is a share member)."""
        return any(spec.is_share for spec in self.members.values()) and any(
            self.members[f.spec].is_share for f in self.fleet if f.spec in self.members)

    @property
    def has_streams(self) -> bool:
        """Whether the run's group is a Kafka Streams application (its fleet starts Streams instances)."""
        return any(self.members[f.spec].is_streams for f in self.fleet if f.spec in self.members)

    @property
    def streams_protocol_standbys(self) -> int | None:
        """The standby replicas of a Kafka Streams group on the streams protocol (a group config there, set before
        the first instance starts); None when no member spec in use is such an instance."""
        used = [self.members[f.spec] for f in self.fleet if f.spec in self.members]
        on_protocol = [s.streams for s in used if s.streams is not None and s.group_protocol == "streams"]
        return on_protocol[0].num_standby_replicas if on_protocol else None

    @property
    def share_group(self) -> ShareGroupModel:
        """The share group's settings in force: the file's, else the defaults."""
        return self.share or ShareGroupModel()

