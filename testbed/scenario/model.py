"""The scenario file format: typed models of cluster, topics, load, member specs, steps and expectations.

A scenario is validated completely, member specs included, before anything starts; see
``testbed.scenario.loader`` for how files, ``--set`` overrides and matrices become models.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..run.metrics import CATALOG
from ..load.records import KeyDistribution
from ..members.spec import ENV_PLACEHOLDERS, ENV_TOPIC_PLACEHOLDER, MemberSpec, env_placeholders
from ..settings import DEFAULT_KAFKA_VERSION
from .refusals import did_you_mean
from .roster import roster_refusals

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClusterModel(_Model):
    """Brokers to start, or an existing cluster's bootstrap servers (broker steps are then refused)."""

    brokers: Literal[1, 3] = 1
    kafka_version: str = DEFAULT_KAFKA_VERSION
    broker_settings: dict[str, str] = Field(default_factory=dict)
    bootstrap_servers: str | None = Field(default=None, description="use this cluster instead of starting one")

    @field_validator("bootstrap_servers")
    @classmethod
    def _loopback(cls, value: str | None) -> str | None:
        if value is not None:
            hosts = [s.strip().rsplit(":", 1)[0] for s in value.split(",")]
            if not all(h.startswith("127.") for h in hosts):
                raise ValueError(f"bootstrap_servers must be 127.x addresses only, got {value!r}")
        return value

    @property
    def external(self) -> bool:
        return self.bootstrap_servers is not None


class TopicModel(_Model):
    name: str = Field(pattern=NAME)
    partitions: int = Field(ge=1, le=10_000)
    replication_factor: int | None = Field(default=None, ge=1, le=3)


class LoadModel(_Model):
    topic: str
    rate: float = Field(gt=0, description="records/s over all users")
    users: int = Field(default=4, ge=1)
    workers: int = Field(default=0, ge=0)
    duration_s: float = Field(default=600, gt=0, description="upper bound; the final drain stops the load earlier")
    keys: int = Field(default=1000, ge=1)
    key_distribution: KeyDistribution = "uniform"
    payload_bytes: int = Field(default=200, ge=1)


class AnalysisModel(_Model):
    """Parameters of the analysis that the figures depend on (docs/metrics.md)."""

    min_pause_ms: int = Field(default=1000, ge=1, description="shorter availability gaps are ordinary polling")
    episode_gap_ms: int = Field(default=1500, ge=0, description="quiet time that closes a settled rebalance episode")
    hang_ms: int = Field(default=10_000, ge=1, description="an unexplained pause this long is a hang of its member")


class ShareGroupModel(_Model):
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

    @model_validator(mode="after")
    def _heartbeat_below_session(self) -> "ShareGroupModel":
        if self.heartbeat_interval_ms is not None and self.heartbeat_interval_ms >= (self.session_timeout_ms or 45_000):
            raise ValueError(f"heartbeat_interval_ms: {self.heartbeat_interval_ms} must be below the session timeout "
                             f"({self.session_timeout_ms or 45_000} ms)")
        return self


MAX_MEMBER_PROCESSES = 200  # member processes one fleet entry may start (~44 MB and an interpreter each)
HostedCount = Annotated[int, Field(ge=1, le=10_000)]
PerProcess = Annotated[int, Field(ge=1, le=1_000, description=(
    "members run in one process, each in a thread with its own client, identity and history (confluent-kafka "
    "and kafka-python); stop and stall act on one member, kill, pause and network cuts on the whole process"))]


class _Members(_Model):
    """How many members of which spec, and how many share a process."""

    spec: str = Field(description="name of a member spec")
    count: HostedCount
    members_per_process: PerProcess = 1

    @model_validator(mode="after")
    def _process_count(self) -> "_Members":
        processes = -(-self.count // self.members_per_process)
        if processes > MAX_MEMBER_PROCESSES:
            raise ValueError(f"count: {self.count} members at members_per_process {self.members_per_process} are "
                             f"{processes} processes; at most {MAX_MEMBER_PROCESSES}: raise members_per_process "
                             f"to at least {-(-self.count // MAX_MEMBER_PROCESSES)}")
        return self


class FleetModel(_Members):
    pass


# ---- steps -----------------------------------------------------------------------------------

StopMode = Literal["clean", "hard"]


class WaitStable(_Model):
    kind: Literal["wait_stable"] = "wait_stable"
    members: int | None = Field(default=None, ge=0, description="default: every live member")
    timeout_s: float = Field(default=120, gt=0)


class Wait(_Model):
    kind: Literal["wait"] = "wait"
    seconds: float = Field(gt=0)


class RollingBounce(_Model):
    kind: Literal["rolling_bounce"] = "rolling_bounce"
    to: str | None = Field(default=None, description="member spec to bounce into; default: the same spec")
    interval_s: float = Field(default=0, ge=0)
    mode: StopMode = "clean"
    wait_stable: bool = True
    stable_timeout_s: float = Field(default=120, gt=0)
    count: int | None = Field(default=None, ge=1, description="bounce only the first count live members; default: all")


class MemberStep(_Model):
    member: str = Field(description="member id, e.g. m0")


def _whole_process() -> Any:
    return Field(default=False, description=(
        "required when the member shares its process (members_per_process > 1): it hits every member there"))


class Kill(MemberStep):
    kind: Literal["kill"] = "kill"
    whole_process: bool = _whole_process()


class StopMember(MemberStep):
    kind: Literal["stop"] = "stop"


class Pause(MemberStep):
    kind: Literal["pause"] = "pause"
    seconds: float | None = Field(default=None, gt=0, description="resume after this long; None: stay paused")
    whole_process: bool = _whole_process()


class Resume(MemberStep):
    kind: Literal["resume"] = "resume"


class Stall(MemberStep):
    """Stop the member's poll loop from polling while its client's threads (heartbeats) run on: a slow
    handler, which max.poll.interval.ms is there to catch (confluent-kafka and kafka-python members)."""

    kind: Literal["stall"] = "stall"
    seconds: float | None = Field(default=None, gt=0, description="end the stall after this long; None: until unstall")


class Unstall(MemberStep):
    kind: Literal["unstall"] = "unstall"


class ScaleOut(_Members):
    kind: Literal["scale_out"] = "scale_out"


class ScaleIn(_Model):
    kind: Literal["scale_in"] = "scale_in"
    count: int = Field(ge=1)
    mode: StopMode = "clean"


COORDINATOR = "coordinator"
BrokerId = Annotated[int, Field(ge=1, le=3)]


class BrokerStep(_Model):
    broker: BrokerId | Literal["coordinator"] = Field(
        description="node id 1..3, or 'coordinator': the broker coordinating the run's group when the step "
                    "starts (for broker_start and broker_unpause: the one an earlier step took down as such)")


class BrokerKill(BrokerStep):
    kind: Literal["broker_kill"] = "broker_kill"


class BrokerStop(BrokerStep):
    kind: Literal["broker_stop"] = "broker_stop"


class BrokerStart(BrokerStep):
    kind: Literal["broker_start"] = "broker_start"


class BrokerPause(BrokerStep):
    """Freeze the broker's processes (docker pause): its connections stay open but nothing answers."""

    kind: Literal["broker_pause"] = "broker_pause"
    seconds: float | None = Field(default=None, gt=0, description="unpause after this long; None: stay paused")


class BrokerUnpause(BrokerStep):
    kind: Literal["broker_unpause"] = "broker_unpause"


class BrokerRestart(BrokerStep):
    kind: Literal["broker_restart"] = "broker_restart"
    mode: StopMode = "clean"


class BrokerRollingRestart(_Model):
    kind: Literal["broker_rolling_restart"] = "broker_rolling_restart"
    mode: StopMode = "clean"


KAFKA_RELEASE = r"^\d+\.\d+\.\d+$"


class BrokerUpgrade(_Model):
    """Replace brokers, one at a time, by Kafka ``to`` on the same data (KRaft metadata and logs), waiting
    until the cluster is ready after each (brokers of both versions serve meanwhile); then, with
    ``finalize``, raise the cluster's feature levels (metadata.version, group.version, ...) to the
    defaults of ``to``'s release, as ``kafka-features.sh upgrade --release-version`` does."""

    kind: Literal["broker_upgrade"] = "broker_upgrade"
    to: str = Field(description="the Kafka version to run, e.g. 4.3.1")
    brokers: list[BrokerId] | None = Field(default=None, min_length=1,
                                            description="node ids to upgrade, in this order; default: all")
    interval_s: float = Field(default=0, ge=0, description="time under load between one broker ready and the next")
    finalize: bool = Field(default=True, description="raise the feature levels once every broker runs `to`")

    @field_validator("to")
    @classmethod
    def _release(cls, to: str) -> str:
        if not re.match(KAFKA_RELEASE, to):
            raise ValueError(f"must be a Kafka release number like 4.3.1 (`testbed kafka-versions` lists them), "
                             f"got {to!r}")
        return to


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


# KRaft clusters of 3.3 and later can take 4.x brokers (Kafka's upgrade notes; 4.0 dropped ZooKeeper and
# metadata.version below 3.3-IV3).
FIRST_UPGRADABLE_TO_4 = (3, 3)


def _upgrade_refusals(steps: list[Any], kafka_version: str, brokers: int) -> list[str]:
    """Versions only rise; a finalize needs every broker on the new version (mixed clusters run unfinalized)."""
    if not re.match(KAFKA_RELEASE, kafka_version):
        return []  # refused on its own before the run starts, with the way to list versions
    running = {node: kafka_version for node in range(1, brokers + 1)}
    problems = []
    for i, step in enumerate(steps):
        if not isinstance(step, BrokerUpgrade):
            continue
        where = f"steps.{i}.broker_upgrade"
        targets = step.brokers or list(running)
        for node in targets:
            if node not in running:
                problems.append(f"{where}.brokers: must be node ids 1..{brokers}, got {node}")
            elif _version(step.to) <= _version(running[node]):
                problems.append(f"{where}.to: broker {node} runs {running[node]} at this step; an upgrade needs a "
                                f"newer version than that, got {step.to}")
            elif _version(step.to)[0] >= 4 > _version(running[node])[0] and \
                    _version(running[node])[:2] < FIRST_UPGRADABLE_TO_4:
                problems.append(f"{where}.to: Kafka {step.to} takes over clusters of 3.3 or newer only; broker "
                                f"{node} runs {running[node]}")
            else:
                running[node] = step.to
        if step.finalize and set(running.values()) != {step.to}:
            problems.append(f"{where}.finalize: raises the feature levels, which needs every broker on {step.to}; "
                            f"after this step they run {dict(sorted(running.items()))}. Set finalize: false, or "
                            "upgrade the rest first")
    return problems


# The consumer protocol (KIP-848) is generally available from Kafka 4.0, where it needs group.version 1: a
# fresh 4.x cluster has it, one upgraded from 3.x only once its feature levels are raised. Before 4.0 it is
# a preview that this broker setting turns on.
CONSUMER_PROTOCOL_SINCE = (4, 0)
PREVIEW_SETTING = "group.coordinator.rebalance.protocols"


def _single_topic_refusals(scenario: "Scenario") -> list[str]:
    """A Java member in a process of its own is a VerifiableConsumer, which consumes exactly one topic (``--topic``);
    members subscribe to every topic of the scenario. Hosted Java members (members_per_process > 1) take several."""
    if len(scenario.topics) < 2:
        return []
    topics = ", ".join(t.name for t in scenario.topics)
    problems = []

    def need(where: str, spec: str | None, per_process: int) -> None:
        if spec in scenario.members and scenario.members[spec].client == "java" and per_process == 1:
            problems.append(f"{where}: member spec {spec!r} runs a Java member in a process of its own "
                            f"(VerifiableConsumer), which consumes exactly one topic; this scenario has "
                            f"{len(scenario.topics)} ({topics}): keep one topic, or host the members "
                            "(members_per_process > 1)")

    for i, f in enumerate(scenario.fleet):
        need(f"fleet.{i}.spec", f.spec, f.members_per_process)
    for i, step in enumerate(scenario.steps):
        if isinstance(step, RollingBounce):
            need(f"steps.{i}.rolling_bounce.to", step.to, 1)  # a replacement outside a host runs on its own
        elif isinstance(step, ScaleOut):
            need(f"steps.{i}.scale_out.spec", step.spec, step.members_per_process)
    return problems


def _program_refusals(scenario: "Scenario") -> list[str]:
    """Command members (the user's own program): one program a process, and env placeholders that name topics the
    scenario has."""
    topics = sorted(t.name for t in scenario.topics)
    problems = []
    templates = [(f"members.{name}.env.{key}", value) for name, spec in scenario.members.items()
                 for key, value in spec.env.items()]
    if scenario.effects is not None:
        templates += [(f"effects.command.{i}", arg) for i, arg in enumerate(scenario.effects.command)]
        templates += [(f"effects.env.{key}", value) for key, value in scenario.effects.env.items()]
    for where, value in templates:
        for placeholder in env_placeholders(value):
            topic = placeholder.removeprefix(ENV_TOPIC_PLACEHOLDER)
            if placeholder.startswith(ENV_TOPIC_PLACEHOLDER):
                if topic not in topics:
                    problems.append(f"{where}: {{{placeholder}}} names no topic of this scenario; "
                                    f"topics: {', '.join(topics)}")
            elif placeholder not in ENV_PLACEHOLDERS:
                problems.append(f"{where}: unknown placeholder {{{placeholder}}}; allowed: "
                                + ", ".join(f"{{{p}}}" for p in (*ENV_PLACEHOLDERS, "topic:<name>")))
    entries = [(f"fleet.{i}", f) for i, f in enumerate(scenario.fleet)]
    entries += [(f"steps.{i}.scale_out", s) for i, s in enumerate(scenario.steps) if isinstance(s, ScaleOut)]
    for where, entry in entries:
        spec = scenario.members.get(entry.spec)
        if spec is not None and spec.is_command and entry.members_per_process > 1:
            problems.append(f"{where}.members_per_process: member spec {entry.spec!r} runs the user's program "
                            "(command), one member a process: 1")
    return problems


def _protocol_refusals(scenario: "Scenario") -> list[str]:
    """Members of the consumer protocol only where the brokers serve it at that step."""
    cluster = scenario.cluster
    if cluster.external or not re.match(KAFKA_RELEASE, cluster.kafka_version):
        return []
    preview = "consumer" in cluster.broker_settings.get(PREVIEW_SETTING, "")
    served = preview or _version(cluster.kafka_version)[:2] >= CONSUMER_PROTOCOL_SINCE
    why = (f"the brokers run Kafka {cluster.kafka_version}, which serves it from 4.0 (or as a preview with "
           f"broker_settings {PREVIEW_SETTING}: classic,consumer)")
    problems = []

    def need(where: str, spec: str | None) -> None:
        if spec in scenario.members and scenario.members[spec].group_protocol == "consumer" and not served:
            problems.append(f"{where}: member spec {spec!r} uses group_protocol 'consumer', but {why}")

    for i, f in enumerate(scenario.fleet):
        need(f"fleet.{i}.spec", f.spec)
    for i, step in enumerate(scenario.steps):
        if isinstance(step, RollingBounce):
            need(f"steps.{i}.rolling_bounce.to", step.to)
        elif isinstance(step, ScaleOut):
            need(f"steps.{i}.scale_out.spec", step.spec)
        elif isinstance(step, BrokerUpgrade) and step.finalize:
            served = preview or _version(step.to)[:2] >= CONSUMER_PROTOCOL_SINCE
            why = (f"after steps.{i}.broker_upgrade the brokers run Kafka {step.to}, which serves it from 4.0")
        elif isinstance(step, BrokerUpgrade) and not served:
            why = (f"steps.{i}.broker_upgrade raises no feature level (finalize: false), so group.version stays 0 "
                   "and the consumer protocol stays off")
    return problems


# Share groups (KIP-932) are generally available from Kafka 4.2, on by default (share.version 1). 4.1 served them as
# a preview behind the share.version feature; the testbed does not turn that on: it refuses those brokers.
SHARE_GROUPS_SINCE = (4, 2)


def _share_refusals(scenario: "Scenario") -> list[str]:
    """One group is a share group or a consumer group, never both; share members need brokers that serve
    share groups; a Java share member runs in a process of its own."""
    uses: list[tuple[str, str, int]] = [(f"fleet.{i}.spec", f.spec, f.members_per_process)
                                        for i, f in enumerate(scenario.fleet)]
    for i, step in enumerate(scenario.steps):
        if isinstance(step, RollingBounce) and step.to:
            uses.append((f"steps.{i}.rolling_bounce.to", step.to, 1))
        elif isinstance(step, ScaleOut):
            uses.append((f"steps.{i}.scale_out.spec", step.spec, step.members_per_process))
    share = [(w, s, n) for w, s, n in uses if s in scenario.members and scenario.members[s].is_share]
    problems = []
    if share and len(share) != len([u for u in uses if u[1] in scenario.members]):
        other = next(w for w, s, _ in uses if s in scenario.members and not scenario.members[s].is_share)
        problems.append(f"{other}: this scenario's group is a share group ({share[0][0]} uses spec {share[0][1]!r}, "
                        "group_protocol 'share'); a group is a share group or a consumer group, never both: make "
                        "every member spec group_protocol 'share', or none")
    if scenario.share is not None and not share:
        problems.append("share: share-group settings, but no member spec of the fleet or its steps uses "
                        "group_protocol 'share'")
    cluster = scenario.cluster
    if share and not cluster.external and re.match(KAFKA_RELEASE, cluster.kafka_version) and \
            _version(cluster.kafka_version)[:2] < SHARE_GROUPS_SINCE:
        problems.append(f"{share[0][0]}: member spec {share[0][1]!r} uses group_protocol 'share', but the brokers run "
                        f"Kafka {cluster.kafka_version}; share groups are served from 4.2 (4.1's preview is not "
                        "supported): set cluster.kafka_version to 4.2.0 or later")
    for where, spec, per_process in share:
        if scenario.members[spec].client == "java" and per_process > 1:
            problems.append(f"{where}: member spec {spec!r} is a Java share member, which runs in a process of its "
                            "own: members_per_process must be 1")
    return problems


def _network_target(member: str | None, broker: int | str | None) -> str | None:
    """How a network step names what it cuts or heals (None: nothing named, i.e. every cut)."""
    if member is not None:
        return f"member {member}"
    return f"broker {broker}" if broker is not None else None


class Partition(_Model):
    """Cut a member or a broker off the network for a while (iptables on loopback; docs/faults.md).

    A member loses the brokers (all, or only its group's coordinator): its packets to them drop. A
    broker loses everyone: every packet to and from its client and controller ports drops, while its
    own connections out to the other brokers stay up. With ``loss`` each packet drops at random with
    that probability instead."""

    kind: Literal["partition"] = "partition"
    member: str | None = Field(default=None, description="member id whose packets to the brokers drop")
    broker: BrokerId | Literal["coordinator"] | None = Field(
        default=None, description="node id 1..3, or 'coordinator' (the run's group coordinator when the step starts)")
    brokers: Literal["all", "coordinator"] | None = Field(
        default=None, description="with member: the brokers it loses, all (default) or only the group's coordinator")
    loss: float | None = Field(default=None, gt=0, lt=1, description="drop each packet with this probability")
    seconds: float | None = Field(default=None, gt=0, description="heal after this long; None: until a heal step")
    whole_process: bool = _whole_process()

    @model_validator(mode="after")
    def _one_target(self) -> "Partition":
        if (self.member is None) == (self.broker is None):
            raise ValueError("partition: name exactly one of member (a member id) or broker (1..3 or 'coordinator')")
        if self.broker is not None and self.brokers is not None:
            raise ValueError("partition.brokers: only with member (which brokers the member loses)")
        return self

    @property
    def target(self) -> str:
        return _network_target(self.member, self.broker) or ""


class Latency(_Model):
    """Delay every response of a broker to its clients by ``ms`` (+- ``jitter_ms``): a Toxiproxy in front of
    each broker's client listener, which the brokers advertise (docs/faults.md). Replication and the
    controller quorum are not delayed."""

    kind: Literal["latency"] = "latency"
    broker: BrokerId | Literal["coordinator"] = Field(
        description="node id 1..3, or 'coordinator' (the run's group coordinator when the step starts)")
    ms: int = Field(gt=0, le=120_000, description="added to every response")
    jitter_ms: int = Field(default=0, ge=0, description="each response's delay varies by up to this much")
    seconds: float | None = Field(default=None, gt=0, description="end after this long; None: until a heal step")

    @property
    def target(self) -> str:
        return _network_target(None, self.broker) or ""


class Heal(_Model):
    """End a partition or latency made without ``seconds``: of that member or broker, or every one in place."""

    kind: Literal["heal"] = "heal"
    member: str | None = None
    broker: BrokerId | Literal["coordinator"] | None = None

    @model_validator(mode="after")
    def _at_most_one_target(self) -> "Heal":
        if self.member is not None and self.broker is not None:
            raise ValueError("heal: name a member, or a broker, or neither (every partition in place)")
        return self

    @property
    def target(self) -> str | None:
        return _network_target(self.member, self.broker)


NETWORK_STEPS = ("partition", "latency", "heal")


class AddPartitions(_Model):
    kind: Literal["add_partitions"] = "add_partitions"
    topic: str
    total: int = Field(ge=2, description="the topic's new partition count")


class Drain(_Model):
    kind: Literal["drain"] = "drain"
    timeout_s: float = Field(default=120, gt=0)


Step = Annotated[
    Union[WaitStable, Wait, RollingBounce, Kill, StopMember, Pause, Resume, Stall, Unstall, ScaleOut, ScaleIn, BrokerKill,
          BrokerStop, BrokerStart, BrokerPause, BrokerUnpause, BrokerRestart, BrokerRollingRestart, BrokerUpgrade,
          Partition, Latency, Heal, AddPartitions, Drain],
    Field(discriminator="kind"),
]
BROKER_STEPS = ("broker_kill", "broker_stop", "broker_start", "broker_pause", "broker_unpause", "broker_restart",
                "broker_rolling_restart", "broker_upgrade")


def _coordinator_refusals(steps: list[Any]) -> list[str]:
    """Bringing back 'coordinator' needs an earlier step that took the coordinator down: it has moved since."""
    took_down, problems = False, []
    for i, step in enumerate(steps):
        if isinstance(step, BrokerStep) and step.broker == COORDINATOR:
            if isinstance(step, (BrokerStart, BrokerUnpause)) and not took_down:
                problems.append(f"steps.{i}.{step.kind}.broker: 'coordinator' here means the broker an earlier "
                                "broker_kill, broker_stop or broker_pause took down as coordinator, and none did; "
                                "name the node id (1..3)")
            took_down = took_down or isinstance(step, (BrokerKill, BrokerStop, BrokerPause))
    return problems


def _network_refusals(steps: list[Any], brokers: int) -> list[str]:
    """A heal must end a partition or latency in place; neither may be put on what already has it."""
    in_place: set[tuple[str, str]] = set()  # (step kind, target)
    problems = []
    for i, step in enumerate(steps):
        if isinstance(step, (Partition, Latency, Heal)) and isinstance(step.broker, int) and step.broker > brokers:
            problems.append(f"steps.{i}.{step.kind}.broker: must be 1..{brokers} or {COORDINATOR!r}")
        if isinstance(step, (Partition, Latency)):
            if (step.kind, step.target) in in_place:
                problems.append(f"steps.{i}.{step.kind}: {step.target} already has one from an earlier {step.kind} "
                                "step; heal it first")
            elif step.seconds is None:
                in_place.add((step.kind, step.target))
        elif isinstance(step, Heal):
            ended = {(kind, target) for kind, target in in_place if step.target in (None, target)}
            if step.target is not None and not ended:
                now = ", ".join(f"{kind} of {target}" for kind, target in sorted(in_place)) or "nothing"
                problems.append(f"steps.{i}.heal: {step.target} has no partition or latency at this step (one with "
                                f"seconds ends by itself); in place then: {now}")
            in_place -= ended
    return problems


# ---- expectations ----------------------------------------------------------------------------

_EXPECTATION = re.compile(r"^\s*([a-z][a-z0-9_]*)\s*(==|!=|<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)\s*$")


class Expectation(_Model):
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
        if metric not in CATALOG:
            raise ValueError(f"unknown metric {metric!r}{did_you_mean(metric, list(CATALOG))}; "
                             f"known metrics: {', '.join(CATALOG)}")
        return metric

    @classmethod
    def parse(cls, text: str) -> "Expectation":
        return cls.model_validate(text)

    def holds(self, value: float) -> bool:
        return {"==": value == self.bound, "!=": value != self.bound, "<=": value <= self.bound,
                ">=": value >= self.bound, "<": value < self.bound, ">": value > self.bound}[self.op]


class EffectsModel(_Model):
    """What the user's program left in its store, read after the run: the records whose effects are there."""

    command: list[str] = Field(min_length=1, description=(
        "prints one JSON object a line, {topic, partition, offset}, for each record whose effect the store holds "
        "(a record written twice: two lines); arguments may use {run_dir}, {bootstrap_servers}, {group_id}, "
        "{topic:<name>}; run after the members stopped, from the directory testbed runs in"))
    cwd: str | None = None
    env: dict[str, str] = Field(default_factory=dict, description="environment variables; the same placeholders")
    timeout_s: float = Field(default=120.0, gt=0, allow_inf_nan=False)


class Scenario(_Model):
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
    analysis: AnalysisModel = Field(default_factory=AnalysisModel)
    effects: EffectsModel | None = Field(
        default=None, description="a command that lists what the user's store holds after the run: each acknowledged "
        "record whose effect is missing (effects_missing) or there twice (effects_duplicated) is counted")
    share: ShareGroupModel | None = Field(
        default=None, description="the share group's settings, when the members are share members (default: "
        "ShareGroupModel's values)")
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
    def share_group(self) -> ShareGroupModel:
        """The share group's settings in force: the file's, else the defaults."""
        return self.share or ShareGroupModel()

    @model_validator(mode="after")
    def _references(self) -> "Scenario":
        """Names that must refer to something else in the file; every problem, one ``path: message`` a line."""
        specs = sorted(self.members)
        topics = sorted(t.name for t in self.topics)
        problems = []

        def need_spec(where: str, name: str | None) -> None:
            if name is not None and name not in self.members:
                problems.append(f"{where}: member spec {name!r} is not defined; defined specs: {', '.join(specs)}")

        for i, f in enumerate(self.fleet):
            need_spec(f"fleet.{i}.spec", f.spec)
        if self.load is not None and self.load.topic not in topics:
            problems.append(f"load.topic: {self.load.topic!r} is not one of the topics {', '.join(topics)}")
        for i, step in enumerate(self.steps):
            if isinstance(step, RollingBounce):
                need_spec(f"steps.{i}.rolling_bounce.to", step.to)
            if isinstance(step, ScaleOut):
                need_spec(f"steps.{i}.scale_out.spec", step.spec)
            if isinstance(step, AddPartitions) and step.topic not in topics:
                problems.append(f"steps.{i}.add_partitions.topic: {step.topic!r} is not one of {', '.join(topics)}")
            if step.kind in NETWORK_STEPS and self.cluster.external:
                problems.append(f"steps.{i}.{step.kind}: network steps need a cluster testbed starts (its broker "
                                "ports); this scenario uses cluster.bootstrap_servers")
            if step.kind in BROKER_STEPS:
                if self.cluster.external:
                    problems.append(f"steps.{i}.{step.kind}: broker steps need a cluster testbed starts; "
                                    "this scenario uses cluster.bootstrap_servers")
                elif isinstance(step, BrokerStep) and isinstance(step.broker, int) and step.broker > self.cluster.brokers:
                    problems.append(f"steps.{i}.{step.kind}.broker: must be 1..{self.cluster.brokers} or "
                                    f"{COORDINATOR!r}")
        problems += _coordinator_refusals(self.steps)
        problems += _network_refusals(self.steps, self.cluster.brokers)
        if not self.cluster.external:
            problems += _upgrade_refusals(self.steps, self.cluster.kafka_version, self.cluster.brokers)
        problems += _protocol_refusals(self)
        problems += _single_topic_refusals(self)
        problems += _program_refusals(self)
        problems += _share_refusals(self)
        problems += roster_refusals(self.fleet, self.steps, self.members)
        if problems:
            raise ValueError("\n".join(problems))
        return self
