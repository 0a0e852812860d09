"""A scenario's group kind, chosen once from its member specs (``group_kind``): a consumer group, a share group
(KIP-932) or a Kafka Streams application. The kind carries what differs in driving the run: what to prepare
before anything starts, the group's own configs before its first member joins, how the fleet tells the group
stable (``Fleet.stable_wait``), the final drain, and what to save once the fleet has stopped. The scenario's
cross-checks (``cross_checks``) keep one group to one kind, so no caller tests the specs' flags again.
"""

from __future__ import annotations

from typing import Protocol

from ..admin.kafka_admin import KafkaAdmin
from ..errors import ConfigError
from ..fleet import Fleet, StableWait
from ..history.events import Action
from ..history.harness import HarnessLog
from ..members.java.streams import streams_output_topic
from ..members.share_offsets import share_start_offsets
from ..run.layout import RunDir
from . import model as m
from .drain import drain, share_drain
from .streams_output import save_streams_output


class RunContext(Protocol):
    """What a kind's drain reads of the run under way (``steps.RunContext``)."""

    scenario: m.Scenario
    run_dir: RunDir
    harness: HarnessLog
    bootstrap_servers: str
    topics: dict[str, str]
    fleet: Fleet


class ConsumerGroup:
    """A consumer group: nothing to prepare or configure, its assignment agreed on is stable, the drain waits for
    its members to process every acknowledged record."""

    name = "consumer"
    stable_wait: StableWait = "group"

    def prepare(self) -> None:
        """Before anything starts (a build timed inside the run would be part of it)."""

    def configure(self, admin: KafkaAdmin, harness: HarnessLog, group: str, scenario: m.Scenario) -> None:
        """The group's own configs, before its first member joins."""

    def drain(self, ctx: RunContext, step: m.Drain) -> dict[str, object]:
        return drain(ctx.run_dir, ctx.bootstrap_servers, ctx.fleet.topics, step.timeout_s,
                     ctx.fleet.nobody_left)

    def after_drain(self, ctx: RunContext) -> None:
        """What the analysis needs recorded at the drain's end."""

    def after_fleet(self, bootstrap: str, topics: list[str], run_dir: RunDir) -> None:
        """Once the fleet has stopped, the cluster still up."""


class ShareGroup(ConsumerGroup):
    name = "share"
    stable_wait: StableWait = "share"

    def prepare(self) -> None:
        from ..members.envs import java_share_offsets_classes

        java_share_offsets_classes()  # the drain asks the brokers for the group's start offsets through it

    def configure(self, admin: KafkaAdmin, harness: HarnessLog, group: str, scenario: m.Scenario) -> None:
        configure_share_group(admin, harness, group, scenario.share_group)

    def drain(self, ctx: RunContext, step: m.Drain) -> dict[str, object]:
        share, group = ctx.scenario.share_group, ctx.fleet.group_id
        return share_drain(ctx.run_dir, ctx.bootstrap_servers, ctx.fleet.topics, step.timeout_s,
                           share.delivery_count_limit, share.record_lock_duration_ms,
                           lambda: share_start_offsets(ctx.bootstrap_servers, group))

    def after_drain(self, ctx: RunContext) -> None:
        """The share group's start offsets at the drain's end, for the analysis: a record below one that no history
        shows accepted or archived was completed by the brokers all the same (an acknowledgement whose answer its
        member never read). A failure is recorded as such: the analysis then cannot tell."""
        group = ctx.fleet.group_id
        try:
            offsets = share_start_offsets(ctx.bootstrap_servers, group)
        except Exception as exc:  # noqa: BLE001 - recorded: the analysis reports what it cannot know
            ctx.harness.record(Action.SHARE_GROUP_OFFSETS, group, group_id=group, error=str(exc)[:500])
            return
        ctx.harness.record(Action.SHARE_GROUP_OFFSETS, group, group_id=group,
                           offsets={f"{t}-{p}": o for (t, p), o in sorted(offsets.items())})


class StreamsApplication(ConsumerGroup):
    """A Kafka Streams application: on the streams protocol its group configs are set first and it is stable when
    its instances are RUNNING by their histories; on the classic protocol it is stable as a consumer group is, with
    every instance RUNNING as well (``Fleet.wait_group_stable``). Its output topic is read once the instances have
    stopped."""

    name = "streams"

    def __init__(self, on_protocol: bool) -> None:
        self.stable_wait: StableWait = "streams" if on_protocol else "group"

    def configure(self, admin: KafkaAdmin, harness: HarnessLog, group: str, scenario: m.Scenario) -> None:
        if (standbys := scenario.streams_protocol_standbys) is not None:
            configure_streams_group(admin, harness, group, standbys, scenario.streams_group or m.StreamsGroupModel())

    def after_fleet(self, bootstrap: str, topics: list[str], run_dir: RunDir) -> None:
        save_streams_output(bootstrap, streams_output_topic(topics[0]), run_dir)


def group_kind(scenario: m.Scenario) -> ConsumerGroup:
    """The scenario's group kind, from the member specs its fleet starts."""
    if scenario.is_share:
        return ShareGroup()
    if scenario.has_streams:
        return StreamsApplication(scenario.streams_protocol_standbys is not None)
    return ConsumerGroup()


def configure_share_group(admin: KafkaAdmin, harness: HarnessLog, group: str, share: m.ShareGroupModel) -> None:
    """Set the share group's own configs before its first member joins, and record the values in force.

    A share group starts each partition at its end by default (share.auto.offset.reset=latest): records
    produced before a member joins would never be delivered. The reset applies when the group first reads a
    partition, so it must be set before any member starts."""
    wanted = share.group_configs()
    in_force = admin.set_group_configs(group, wanted)
    if differs := {k: (v, in_force.get(k)) for k, v in wanted.items() if in_force.get(k) != v}:
        raise ConfigError(f"share: the brokers did not take the group's settings (wanted, in force): {differs}")
    harness.record(Action.SHARE_GROUP_CONFIG, group, group_id=group,
                   record_lock_duration_ms=int(in_force["share.record.lock.duration.ms"]),
                   delivery_count_limit=int(in_force["share.delivery.count.limit"]),
                   auto_offset_reset=in_force["share.auto.offset.reset"],
                   session_timeout_ms=int(in_force["share.session.timeout.ms"]),
                   heartbeat_interval_ms=int(in_force["share.heartbeat.interval.ms"]))


STREAMS_STANDBYS = "streams.num.standby.replicas"


def configure_streams_group(admin: KafkaAdmin, harness: HarnessLog, group: str, standbys: int,
                            settings: m.StreamsGroupModel) -> None:
    """Under the streams protocol (KIP-1071) the standby replicas, the session and the heartbeat are the group's
    (the client's settings are ignored): set before the first instance joins, and record the values in force."""
    wanted = {STREAMS_STANDBYS: str(standbys), **settings.group_configs()}
    in_force = admin.set_group_configs(group, wanted)
    if differs := {k: (v, in_force.get(k)) for k, v in wanted.items() if in_force.get(k) != v}:
        raise ConfigError(f"streams_group: the brokers did not take the group's settings (wanted, in force): "
                          f"{differs}; their group.streams.max.standby.replicas, session or heartbeat bounds may be "
                          "narrower")
    harness.record(Action.STREAMS_GROUP_CONFIG, group, group_id=group, num_standby_replicas=standbys,
                   **{k.removeprefix("streams.").replace(".", "_"): _number(in_force.get(k))
                      for k in STREAMS_GROUP_CONFIGS})


# What a streams_group_config action records: each config the brokers had in force for the group.
STREAMS_GROUP_CONFIGS = ("streams.session.timeout.ms", "streams.heartbeat.interval.ms",
                         "streams.initial.rebalance.delay.ms")


def _number(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


