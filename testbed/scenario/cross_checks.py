"""What one part of a scenario file says against another, refused before anything starts: one ``path: message``
line a problem, every problem listed.

Most checks ask the same question of every place the scenario starts members of a named spec
(``spec_uses``): the fleet entries, each ``rolling_bounce.to`` and each ``scale_out.spec``. The members a
step may name are replayed by ``testbed.scenario.roster``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..members.spec import ENV_PLACEHOLDERS, ENV_TOPIC_PLACEHOLDER, env_placeholders
from .roster import roster_refusals
from .schema import ScenarioFile
from .step_model import (COORDINATOR, KAFKA_RELEASE, AddPartitions, BrokerKill, BrokerNodeStep, BrokerPause,
                         BrokerStart, BrokerStop, BrokerUnpause, BrokerUpgrade, Heal, Latency, Partition,
                         RollingBounce, ScaleOut, StepModel)


@dataclass(frozen=True)
class SpecUse:
    """A place in the file that starts members of a named spec."""

    entry: str  # the fleet entry or step: "fleet.0", "steps.3.rolling_bounce"
    field: str  # its field naming the spec: "spec", or a bounce's "to"
    spec: str
    per_process: int  # members a process holds; a bounce's replacement that leaves its host runs on its own: 1
    step: int | None  # the step's index; None: the fleet, started before the first step

    @property
    def path(self) -> str:
        return f"{self.entry}.{self.field}"


def spec_uses(scenario: ScenarioFile) -> list[SpecUse]:
    """Every place that starts members of a named spec, in file order (a bounce into the same spec names none)."""
    uses = [SpecUse(f"fleet.{i}", "spec", f.spec, f.members_per_process, None) for i, f in enumerate(scenario.fleet)]
    for i, step in enumerate(scenario.steps):
        if isinstance(step, RollingBounce) and step.to is not None:
            uses.append(SpecUse(f"steps.{i}.rolling_bounce", "to", step.to, 1, i))
        elif isinstance(step, ScaleOut):
            uses.append(SpecUse(f"steps.{i}.scale_out", "spec", step.spec, step.members_per_process, i))
    return uses


def cross_field_refusals(scenario: ScenarioFile) -> list[str]:
    uses = spec_uses(scenario)
    problems = _undefined_specs(scenario, uses) + _unknown_topics(scenario) + _cluster_reach(scenario)
    problems += _coordinator_refusals(scenario.steps)
    problems += _network_refusals(scenario.steps, scenario.cluster.brokers)
    if not scenario.cluster.external:
        problems += _upgrade_refusals(scenario.steps, scenario.cluster.kafka_version, scenario.cluster.brokers)
    problems += _protocol_refusals(scenario, uses)
    problems += _single_topic_refusals(scenario, uses)
    problems += _program_refusals(scenario, uses)
    problems += _share_refusals(scenario, uses)
    problems += _streams_refusals(scenario, uses)
    problems += roster_refusals(scenario.fleet, scenario.steps, scenario.members)
    return problems


def _undefined_specs(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
    specs = ", ".join(sorted(scenario.members))
    return [f"{use.path}: member spec {use.spec!r} is not defined; defined specs: {specs}"
            for use in uses if use.spec not in scenario.members]


def _unknown_topics(scenario: ScenarioFile) -> list[str]:
    topics = sorted(t.name for t in scenario.topics)
    consumed = sorted(t.name for t in scenario.topics if t.consumed)
    problems = []
    if not consumed:
        problems.append(f"topics: every topic is consumed: false ({', '.join(topics)}); the group reads at least one")
    if scenario.load is not None and scenario.load.topic not in topics:
        problems.append(f"load.topic: {scenario.load.topic!r} is not one of the topics {', '.join(topics)}")
    elif scenario.load is not None and scenario.load.topic not in consumed:
        problems.append(f"load.topic: {scenario.load.topic!r} is consumed: false, so no member would read the load; "
                        f"the consumed topics: {', '.join(consumed) or 'none'}")
    for i, step in enumerate(scenario.steps):
        if isinstance(step, AddPartitions) and step.topic not in topics:
            problems.append(f"steps.{i}.add_partitions.topic: {step.topic!r} is not one of {', '.join(topics)}")
    return problems


def _cluster_reach(scenario: ScenarioFile) -> list[str]:
    """Broker and network steps act on a cluster the testbed starts, and on its nodes only."""
    cluster = scenario.cluster
    problems = []
    for i, step in enumerate(scenario.steps):
        if step.category == "network" and cluster.external:
            problems.append(f"steps.{i}.{step.kind}: network steps need a cluster testbed starts (its broker "
                            "ports); this scenario uses cluster.bootstrap_servers")
        if step.category == "broker":
            if cluster.external:
                problems.append(f"steps.{i}.{step.kind}: broker steps need a cluster testbed starts; "
                                "this scenario uses cluster.bootstrap_servers")
            elif isinstance(step, BrokerNodeStep) and isinstance(step.broker, int) and step.broker > cluster.brokers:
                problems.append(f"steps.{i}.{step.kind}.broker: must be 1..{cluster.brokers} or {COORDINATOR!r}")
    return problems


def _coordinator_refusals(steps: Sequence[StepModel]) -> list[str]:
    """Bringing back 'coordinator' needs an earlier step that took the coordinator down: it has moved since."""
    took_down, problems = False, []
    for i, step in enumerate(steps):
        if isinstance(step, BrokerNodeStep) and step.broker == COORDINATOR:
            if isinstance(step, (BrokerStart, BrokerUnpause)) and not took_down:
                problems.append(f"steps.{i}.{step.kind}.broker: 'coordinator' here means the broker an earlier "
                                "broker_kill, broker_stop or broker_pause took down as coordinator, and none did; "
                                "name the node id (1..3)")
            took_down = took_down or isinstance(step, (BrokerKill, BrokerStop, BrokerPause))
    return problems


def _network_refusals(steps: Sequence[StepModel], brokers: int) -> list[str]:
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


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


# KRaft clusters of 3.3 and later can take 4.x brokers (Kafka's upgrade notes; 4.0 dropped ZooKeeper and
# metadata.version below 3.3-IV3).
FIRST_UPGRADABLE_TO_4 = (3, 3)


def _upgrade_refusals(steps: Sequence[StepModel], kafka_version: str, brokers: int) -> list[str]:
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


def _protocol_refusals(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
    """Members of the consumer protocol only where the brokers serve it at that step."""
    cluster = scenario.cluster
    if cluster.external or not re.match(KAFKA_RELEASE, cluster.kafka_version):
        return []
    consumer = {name for name, spec in scenario.members.items() if spec.group_protocol == "consumer"}
    return [f"{use.path}: member spec {use.spec!r} uses group_protocol 'consumer', but {why}"
            for use in uses if use.spec in consumer and (why := _consumer_protocol_off(scenario, use.step))]


def _consumer_protocol_off(scenario: ScenarioFile, step: int | None) -> str | None:
    """Why the brokers do not serve the consumer protocol when ``step`` starts (None: the fleet's start), after
    the upgrades before it; None when they serve it."""
    cluster = scenario.cluster
    preview = "consumer" in cluster.broker_settings.get(PREVIEW_SETTING, "")
    served = preview or _version(cluster.kafka_version)[:2] >= CONSUMER_PROTOCOL_SINCE
    why = (f"the brokers run Kafka {cluster.kafka_version}, which serves it from 4.0 (or as a preview with "
           f"broker_settings {PREVIEW_SETTING}: classic,consumer)")
    for i, earlier in enumerate(scenario.steps[:step] if step is not None else []):
        if isinstance(earlier, BrokerUpgrade) and earlier.finalize:
            served = preview or _version(earlier.to)[:2] >= CONSUMER_PROTOCOL_SINCE
            why = f"after steps.{i}.broker_upgrade the brokers run Kafka {earlier.to}, which serves it from 4.0"
        elif isinstance(earlier, BrokerUpgrade) and not served:
            why = (f"steps.{i}.broker_upgrade raises no feature level (finalize: false), so group.version stays 0 "
                   "and the consumer protocol stays off")
    return None if served else why


def _single_topic_refusals(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
    """A Java member in a process of its own is a VerifiableConsumer, which consumes exactly one topic (``--topic``);
    members subscribe to every topic of the scenario. Hosted Java members (members_per_process > 1) take several, and
    a command member (the team's own JVM program) reads what it subscribes to."""
    consumed = [t.name for t in scenario.topics if t.consumed]
    if len(consumed) < 2:
        return []
    topics = ", ".join(consumed)
    return [f"{use.path}: member spec {use.spec!r} runs testbed's Kafka Streams application, which reads exactly one "
            f"topic; this scenario has {len(consumed)} consumed topics ({topics}): keep one, or mark the others "
            "consumed: false"
            if scenario.members[use.spec].is_streams else
            f"{use.path}: member spec {use.spec!r} runs a Java member in a process of its own (VerifiableConsumer), "
            f"which consumes exactly one topic; this scenario has {len(consumed)} consumed topics ({topics}): keep "
            "one, mark the others consumed: false, or host the members (members_per_process > 1)"
            for use in uses if use.spec in scenario.members and scenario.members[use.spec].client == "java"
            and not scenario.members[use.spec].is_command and use.per_process == 1]


def _program_refusals(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
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
    for use in uses:
        spec = scenario.members.get(use.spec)
        if spec is not None and spec.is_command and use.per_process > 1:
            problems.append(f"{use.entry}.members_per_process: member spec {use.spec!r} runs the user's program "
                            "(command), one member a process: 1")
    if scenario.allow_crashes and not any(spec.is_command for spec in scenario.members.values()):
        problems.append("allow_crashes: only a user's program (a member spec with command) can crash in a run; this "
                        "scenario runs testbed's own runners only, whose crash is an error of the run")
    return problems


# Share groups (KIP-932) are generally available from Kafka 4.2, on by default (share.version 1). 4.1 served them as
# a preview behind the share.version feature; the testbed does not turn that on: it refuses those brokers.
SHARE_GROUPS_SINCE = (4, 2)


def _share_refusals(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
    """One group is a share group or a consumer group, never both; share members need brokers that serve
    share groups; a Java share member runs in a process of its own."""
    defined = [use for use in uses if use.spec in scenario.members]
    share = [use for use in defined if scenario.members[use.spec].is_share]
    problems = []
    if share and len(share) != len(defined):
        other = next(use for use in defined if not scenario.members[use.spec].is_share)
        problems.append(f"{other.path}: this scenario's group is a share group ({share[0].path} uses spec "
                        f"{share[0].spec!r}, group_protocol 'share'); a group is a share group or a consumer group, "
                        "never both: make every member spec group_protocol 'share', or none")
    if scenario.share is not None and not share:
        problems.append("share: share-group settings, but no member spec of the fleet or its steps uses "
                        "group_protocol 'share'")
    cluster = scenario.cluster
    if share and not cluster.external and re.match(KAFKA_RELEASE, cluster.kafka_version) and \
            _version(cluster.kafka_version)[:2] < SHARE_GROUPS_SINCE:
        problems.append(f"{share[0].path}: member spec {share[0].spec!r} uses group_protocol 'share', but the brokers "
                        f"run Kafka {cluster.kafka_version}; share groups are served from 4.2 (4.1's preview is not "
                        "supported): set cluster.kafka_version to 4.2.0 or later")
    for use in share:
        if scenario.members[use.spec].client == "java" and use.per_process > 1:
            problems.append(f"{use.path}: member spec {use.spec!r} is a Java share member, which runs in a process "
                            "of its own: members_per_process must be 1")
    return problems


# Kafka Streams' rebalance protocol (KIP-1071) is served, on by default (streams.version 1), from Kafka 4.2.
STREAMS_PROTOCOL_BROKERS_SINCE = (4, 2)
# Static members of a streams group (group.instance.id on StreamsGroupHeartbeat): brokers from 4.4 (KAFKA-20169).
STREAMS_STATIC_BROKERS_SINCE = (4, 4)


def _streams_refusals(scenario: ScenarioFile, uses: list[SpecUse]) -> list[str]:
    """A Streams application's group holds its instances alone, all of one topology, on one rebalance protocol
    (4.2 and 4.3 migrate a group from classic to streams only offline), each in a process of its own; the streams
    protocol needs brokers that serve it."""
    defined = [use for use in uses if use.spec in scenario.members]
    streams = [use for use in defined if scenario.members[use.spec].is_streams]
    on_protocol = [use for use in streams if scenario.members[use.spec].group_protocol == "streams"]
    problems = []
    if scenario.streams_group is not None and not on_protocol:
        problems.append("streams_group: settings of a Kafka Streams group on the streams protocol, but no member spec "
                        "of the fleet or its steps is a streams: instance with group_protocol 'streams' (under the "
                        "classic protocol the session and heartbeat are the member spec's session_timeout_ms and "
                        "client_config)")
    if not streams:
        return problems
    first = scenario.members[streams[0].spec]
    assert first.streams is not None
    if len(streams) != len(defined):
        other = next(use for use in defined if not scenario.members[use.spec].is_streams)
        problems.append(f"{other.path}: this scenario's group is a Kafka Streams application ({streams[0].path} uses "
                        f"spec {streams[0].spec!r}); its group holds its instances alone: make every member spec a "
                        "streams: one, or none")
    for use in streams[1:]:
        spec = scenario.members[use.spec]
        assert spec.streams is not None
        if spec.streams.topology != first.streams.topology:
            problems.append(f"{use.path}: spec {use.spec!r} runs topology {spec.streams.topology!r}, spec "
                            f"{streams[0].spec!r} {first.streams.topology!r}: one application has one topology")
        if spec.group_protocol != first.group_protocol:
            problems.append(f"{use.path}: spec {use.spec!r} rebalances by {spec.group_protocol!r}, spec "
                            f"{streams[0].spec!r} by {first.group_protocol!r}: Kafka 4.2 and 4.3 have no online "
                            "migration of a Streams group between the classic and the streams protocol")
        elif spec.group_protocol == "streams" and spec.streams.num_standby_replicas != first.streams.num_standby_replicas:
            problems.append(f"{use.path}: spec {use.spec!r} asks {spec.streams.num_standby_replicas} standby replicas, "
                            f"spec {streams[0].spec!r} {first.streams.num_standby_replicas}: under the streams protocol "
                            "they are one setting of the group (streams.num.standby.replicas)")
    for use in streams:
        if use.per_process > 1:
            problems.append(f"{use.path}: member spec {use.spec!r} is a Kafka Streams instance, one JVM a process: "
                            "members_per_process must be 1")
    cluster = scenario.cluster
    brokers = (_version(cluster.kafka_version)[:2]
               if not cluster.external and re.match(KAFKA_RELEASE, cluster.kafka_version) else None)
    if on_protocol and brokers is not None and brokers < STREAMS_PROTOCOL_BROKERS_SINCE:
        problems.append(f"{on_protocol[0].path}: member spec {on_protocol[0].spec!r} uses group_protocol 'streams', "
                        f"but the brokers run Kafka {cluster.kafka_version}; the streams protocol is served from 4.2: "
                        "set cluster.kafka_version to 4.2.0 or later")
    elif brokers is not None and brokers < STREAMS_STATIC_BROKERS_SINCE and \
            (static := next((use for use in on_protocol if scenario.members[use.spec].static), None)):
        problems.append(f"{static.path}: member spec {static.spec!r} is static under group_protocol 'streams', but the "
                        f"brokers run Kafka {cluster.kafka_version}: brokers before 4.4 refuse group.instance.id on "
                        "a streams group's heartbeat (INVALID_REQUEST, fatal to the instance); set "
                        "cluster.kafka_version to 4.4.0 or later")
    return problems
