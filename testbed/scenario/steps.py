"""What each scenario step does: one table from step kind to handler, so a new step is one entry.

The handlers act on the services of a run under way (``RunContext``); the step models
(``testbed.scenario.step_model``) say which steps exist and what they take.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from ..admin.kafka_admin import KafkaAdmin
from ..brokers.cluster import KafkaCluster
from ..errors import TestbedError
from ..faults.network import Cut, NetworkFaults
from ..fleet import BounceOptions, Fleet
from ..history.events import Action
from ..history.harness import HarnessLog
from ..load.generator import LoadGenerator
from ..run.layout import RunDir
from ..waits import wait_until
from . import model as m
from .group_kinds import ConsumerGroup, group_kind


@dataclass
class RunContext:
    """What the steps act on while a run is under way."""

    scenario: m.Scenario
    run_dir: RunDir
    harness: HarnessLog
    bootstrap_servers: str
    topics: dict[str, str]  # scenario topic name -> real topic name
    cluster: KafkaCluster | None  # None: an external cluster, which broker steps cannot touch
    admin: KafkaAdmin
    fleet: Fleet
    load: LoadGenerator | None = None
    drained: dict[str, object] | None = None
    coordinator_down: int | None = None  # the broker a step took down as the group's coordinator
    network: NetworkFaults | None = None  # present when the scenario has partition steps
    cuts: dict[str, str] = field(default_factory=dict)  # a partition step's target -> its cut in place
    latencies: dict[str, int] = field(default_factory=dict)  # a latency step's target -> the node delayed

    @cached_property
    def kind(self) -> ConsumerGroup:
        """The scenario's group kind (chosen once: ``group_kinds``)."""
        return group_kind(self.scenario)


StepHandler = Callable[[RunContext, Any], object]


def run_step(ctx: RunContext, step: m.Step) -> None:
    STEP_HANDLERS[step.kind](ctx, step)


def _controlled(ctx: RunContext, step: m.Step) -> KafkaCluster:
    if ctx.cluster is None:
        raise TestbedError(f"step {step.kind} needs a cluster testbed controls")
    return ctx.cluster


def _coordinator(ctx: RunContext) -> int:
    view = wait_until(lambda: (v := ctx.fleet.describe()).coordinator is not None and v, timeout_s=30,
                      what=f"the coordinator of group {ctx.fleet.group_id}", diagnostics=ctx.fleet.diagnostics)
    return view.coordinator


def _broker(ctx: RunContext, step: m.BrokerNodeStep) -> tuple[int, dict[str, object]]:
    """The node id a broker step acts on, and the detail its harness action carries."""
    if step.broker != m.COORDINATOR:
        return int(step.broker), {}
    if isinstance(step, (m.BrokerStart, m.BrokerUnpause)):
        if ctx.coordinator_down is None:  # the model refuses such a file; kept for steps run by hand
            raise TestbedError(f"step {step.kind}: no earlier step took the coordinator down")
        return ctx.coordinator_down, {"role": m.COORDINATOR}
    node = _coordinator(ctx)
    if not isinstance(step, m.BrokerRestart):
        ctx.coordinator_down = node
    return node, {"role": m.COORDINATOR}


def _named_broker(ctx: RunContext, broker: int | str) -> tuple[int, dict[str, object]]:
    """A network or latency step's broker (node id or 'coordinator', resolved now), and its action's detail."""
    if broker == m.COORDINATOR:
        return _coordinator(ctx), {"role": m.COORDINATOR}
    return int(broker), {}


def _broker_step(action: str) -> StepHandler:
    def handler(ctx: RunContext, step: m.BrokerNodeStep) -> None:
        node, detail = _broker(ctx, step)
        getattr(_controlled(ctx, step), action)(node, **detail)
    return handler


def _broker_restart(ctx: RunContext, step: m.BrokerRestart) -> None:
    node, detail = _broker(ctx, step)
    _controlled(ctx, step).restart_broker(node, hard=step.mode == "hard", **detail)


def _broker_upgrade(ctx: RunContext, step: m.BrokerUpgrade) -> None:
    cluster = _controlled(ctx, step)
    for i, node in enumerate(step.brokers or [n.node_id for n in cluster.nodes]):
        if i and step.interval_s:
            time.sleep(step.interval_s)  # the scenario asks for this much time on a mixed-version cluster
        cluster.upgrade_broker(node, step.to)
    if step.finalize:
        cluster.finalize_features(step.to)


def _rolling_bounce(ctx: RunContext, step: m.RollingBounce) -> None:
    to = ctx.scenario.members[step.to] if step.to else None
    ctx.fleet.rolling_bounce(to, BounceOptions(step.interval_s, step.mode, step.wait_stable, step.stable_timeout_s,
                                               step.count))


def _moment(ctx: RunContext, step: m.Kill | m.Pause) -> dict[str, object]:
    """Wait for the step's ``when`` (a share member holding records, or with acknowledgements in flight);
    the detail its harness action carries."""
    if step.when is None:
        return {}
    return ctx.fleet.wait_share_moment(step.member, step.when, step.when_timeout_s)


def _kill(ctx: RunContext, step: m.Kill) -> None:
    detail = _moment(ctx, step)
    ctx.fleet.kill_member(step.member, **detail)


def _pause(ctx: RunContext, step: m.Pause) -> None:
    detail = _moment(ctx, step)
    ctx.fleet.pause_member(step.member, **detail)
    if step.seconds is not None:
        time.sleep(step.seconds)  # the pause length is the fault being injected
        ctx.fleet.resume_member(step.member)


def _broker_pause(ctx: RunContext, step: m.BrokerPause) -> None:
    cluster = _controlled(ctx, step)
    node, detail = _broker(ctx, step)
    cluster.pause_broker(node, **detail)
    if step.seconds is not None:
        time.sleep(step.seconds)  # the pause length is the fault being injected
        cluster.unpause_broker(node, **detail)


def _stall(ctx: RunContext, step: m.Stall) -> None:
    ctx.fleet.stall_member(step.member)
    if step.seconds is not None:
        time.sleep(step.seconds)  # the stall length is the fault being injected
        ctx.fleet.unstall_member(step.member)


def _network(ctx: RunContext, step: m.Partition | m.Heal) -> NetworkFaults:
    if ctx.network is None:  # the runner starts it for every scenario with network steps
        raise TestbedError(f"step {step.kind} needs the run's network faults service")
    return ctx.network


def _cut_of(ctx: RunContext, step: m.Partition) -> Cut:
    """What a partition step drops: a member's packets to the brokers (by its gid), or all of a broker's."""
    cluster = _controlled(ctx, step)
    if step.member is not None:
        proc = ctx.fleet.member(step.member)
        if proc.gid is None:  # the runner gives members their own gids whenever a step cuts a member off
            raise TestbedError(f"member {step.member} runs without a gid of its own: it cannot be cut off alone")
        if step.brokers == m.COORDINATOR:
            node = _coordinator(ctx)
            ports, detail = (cluster.node(node).client_port,), {"brokers": m.COORDINATOR, "broker": node}
        else:
            ports, detail = tuple(n.client_port for n in cluster.nodes), {"brokers": "all"}
        detail = {**detail, **ctx.fleet.session_timeout_detail(step.member)}
        if (table := proc.network_rules) is None:
            return Cut(step.member, "member", ports, gid=proc.gid, loss=step.loss, detail=detail)
        # On a node of a Ray cluster: the rules go to that node's iptables, for whichever interface reaches the
        # brokers.
        return Cut(step.member, "member", ports, gid=proc.gid, loss=step.loss,
                   detail={**detail, "node": proc.node_name}, interface=None, table=table)
    node, detail = _named_broker(ctx, step.broker)
    return Cut(f"broker-{node}", "broker", cluster.node(node).ports, both_ways=True, loss=step.loss, detail=detail)


def _partition(ctx: RunContext, step: m.Partition) -> None:
    network = _network(ctx, step)
    cut = _cut_of(ctx, step)
    network.cut(cut)
    if step.seconds is None:
        ctx.cuts[step.target] = cut.name
        return
    time.sleep(step.seconds)  # the partition's length is the fault being injected
    network.heal([cut.name])


def _latency(ctx: RunContext, step: m.Latency) -> None:
    cluster = _controlled(ctx, step)
    node, detail = _named_broker(ctx, step.broker)
    cluster.add_latency(node, step.ms, step.jitter_ms, **detail)
    if step.seconds is None:
        ctx.latencies[step.target] = node
        return
    time.sleep(step.seconds)  # the latency's length is the fault being injected
    cluster.clear_latency(node, **detail)


def _heal(ctx: RunContext, step: m.Heal) -> None:
    """End the partitions and latencies in place on the step's target (on every target, if it names none)."""
    for target in [t for t in ctx.latencies if step.target in (None, t)]:
        _controlled(ctx, step).clear_latency(ctx.latencies.pop(target))
    if step.target is None:
        if ctx.network is not None:
            ctx.network.heal()
        ctx.cuts.clear()
    elif step.target in ctx.cuts:
        _network(ctx, step).heal([ctx.cuts.pop(step.target)])


def _add_partitions(ctx: RunContext, step: m.AddPartitions) -> None:
    topic = ctx.topics[step.topic]
    ctx.harness.record(Action.ADD_PARTITIONS, topic, total=step.total)
    ctx.admin.add_partitions(topic, step.total)


def _drain(ctx: RunContext, step: m.Drain) -> None:
    if ctx.load is not None:
        ctx.load.stop()
    ctx.harness.record(Action.DRAIN_START, None, timeout_s=step.timeout_s)
    ctx.drained = ctx.kind.drain(ctx, step)
    ctx.harness.record(Action.DRAIN_END, None, **ctx.drained)
    ctx.kind.after_drain(ctx)


STEP_HANDLERS: dict[str, StepHandler] = {
    "wait_stable": lambda ctx, s: ctx.fleet.wait_stable(s.members, timeout_s=s.timeout_s),
    # The scenario asks for this much time under load: not a readiness wait.
    "wait": lambda ctx, s: time.sleep(s.seconds),
    "rolling_bounce": _rolling_bounce,
    "kill": _kill,
    "stop": lambda ctx, s: ctx.fleet.stop_member(s.member),
    "pause": _pause,
    "resume": lambda ctx, s: ctx.fleet.resume_member(s.member),
    "stall": _stall,
    "unstall": lambda ctx, s: ctx.fleet.unstall_member(s.member),
    "scale_out": lambda ctx, s: ctx.fleet.scale_out(ctx.scenario.members[s.spec], s.count, s.members_per_process,
                                                    s.placement),
    "scale_in": lambda ctx, s: ctx.fleet.scale_in(s.count, s.mode),
    "broker_kill": _broker_step("kill_broker"),
    "broker_stop": _broker_step("stop_broker"),
    "broker_start": _broker_step("start_broker"),
    "broker_pause": _broker_pause,
    "broker_unpause": _broker_step("unpause_broker"),
    "broker_restart": _broker_restart,
    "broker_rolling_restart": lambda ctx, s: _controlled(ctx, s).rolling_restart(hard=s.mode == "hard"),
    "broker_upgrade": _broker_upgrade,
    "partition": _partition,
    "latency": _latency,
    "heal": _heal,
    "add_partitions": _add_partitions,
    "drain": _drain,
}
