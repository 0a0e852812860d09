"""One scenario run: cluster -> topics -> fleet -> load -> steps -> drain -> saved history ->
analysis -> checkers -> report, into ``reports/<time>-<scenario>/``.

The history is saved as it happens; analysis reads only saved files. Ctrl-C (or SIGTERM) stops the
load and the fleet, keeps the history, analyses what there is and marks the result partial.
Every service is a context manager, so nothing outlives the run.
"""

from __future__ import annotations

import logging
import re
import time
import traceback
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml

from ..cluster import KafkaCluster
from ..errors import TestbedError
from ..fleet import BounceOptions, Fleet
from ..history.events import now_ms
from ..history.harness import HarnessLog
from ..history.layout import RunDir
from ..load.generator import LoadGenerator
from ..load.spec import LoadSpec
from ..members.defaults import broker_consumer_session_timeout_ms
from ..waits import wait_until
from . import model as m
from .drain import drain
from .evaluate import evaluate
from .loader import ScenarioRun
from .result import RunResult

log = logging.getLogger(__name__)
StepListener = Callable[[int, str], None]


def run_directory(reports_root: Path, label: str) -> RunDir:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.=+-]+", "-", label).strip("-")
    if len(safe) > 80:  # keep the end too: a trial's number and the last matrix value tell runs apart
        safe = safe[:55] + "~" + safe[-24:]
    root = reports_root / f"{stamp}-{safe}"
    while root.exists():
        root = root.with_name(root.name + "-" + uuid.uuid4().hex[:4])
    return RunDir(root).create()


@dataclass
class RunContext:
    """What the steps act on while a run is under way."""

    scenario: m.Scenario
    run_dir: RunDir
    harness: HarnessLog
    bootstrap_servers: str
    topics: dict[str, str]  # scenario topic name -> real topic name
    cluster: KafkaCluster | None
    fleet: Fleet
    load: LoadGenerator | None = None
    drained: dict[str, object] | None = None
    notes: list[str] = field(default_factory=list)


class ScenarioRunner:
    def __init__(self, run: ScenarioRun, reports_root: Path = Path("reports"), *,
                 cluster: KafkaCluster | None = None, on_step: StepListener | None = None,
                 analyse: bool = True, render: bool = True) -> None:
        self.run = run
        self.scenario = run.scenario
        self.reports_root = reports_root
        self.shared_cluster = cluster  # a cluster the caller owns (pytest's), reused for speed
        self.on_step = on_step
        self.do_analyse = analyse
        self.do_render = render
        self.context: RunContext | None = None
        self.finished = False  # services are down; what remains is judging the saved history

    # ---- the run ---------------------------------------------------------------------------

    def execute(self) -> RunResult:
        scenario = self.scenario
        self._prepare()  # refuses what cannot work before anything starts
        run_dir = run_directory(self.reports_root, self.run.label)
        (run_dir.root / "scenario.yaml").write_text(
            yaml.safe_dump(scenario.model_dump(mode="json", exclude_none=True), sort_keys=False))
        result = RunResult(scenario=scenario.name, run_dir=str(run_dir.root), status="error", started_ms=now_ms(),
                           parameters=self.run.parameters)
        harness = HarnessLog(run_dir.harness_log)
        harness.record("run_start", scenario.name, parameters=self.run.parameters)
        try:
            self._run_services(run_dir, harness)
            result.outcome = result.status = "pass"
        except KeyboardInterrupt:
            harness.record("interrupted", None, reason="KeyboardInterrupt")
            result.outcome = result.status = "partial"
            result.partial, result.reason = True, "interrupted (Ctrl-C or SIGTERM)"
        except Exception as exc:  # noqa: BLE001 - the history so far is analysed and reported anyway
            log.error("run failed: %s", exc)
            result.outcome = result.status = "error"
            result.partial = True
            result.reason = f"{type(exc).__name__}: {exc}"
            (run_dir.root / "error.txt").write_text(traceback.format_exc())
        finally:
            harness.record("run_end", scenario.name, status=result.status)
            harness.close()
            result.ended_ms = now_ms()
            result.save(run_dir.result)
            self.finished = True
        if self.on_step is not None:
            self.on_step(-1, "analysing the saved history and rendering the report")
        return self._judge(run_dir, result)

    def _prepare(self) -> None:
        from ..images import check_kafka_version
        from ..members.envs import prepare
        from ..members.wheels import check_client_available

        if not self.scenario.cluster.external and self.shared_cluster is None:
            check_kafka_version(self.scenario.cluster.kafka_version)
        for spec in self.scenario.members.values():
            check_client_available(spec)
            prepare(spec.client, spec.client_version)

    def _run_services(self, run_dir: RunDir, harness: HarnessLog) -> None:
        scenario = self.scenario
        with ExitStack() as stack:
            cluster = self.shared_cluster
            if cluster is None and not scenario.cluster.external:
                cluster = stack.enter_context(KafkaCluster(
                    brokers=scenario.cluster.brokers, kafka_version=scenario.cluster.kafka_version,
                    broker_settings=scenario.cluster.broker_settings, log_dir=run_dir.brokers, recorder=harness))
            elif cluster is not None:
                cluster.recorder = harness
                stack.callback(cluster.copy_logs, run_dir.brokers)
                stack.callback(setattr, cluster, "recorder", None)
            bootstrap = cluster.bootstrap_servers if cluster else scenario.cluster.bootstrap_servers
            # On a cluster other runs share, topic names get a unique suffix.
            suffix = uuid.uuid4().hex[:6] if self.shared_cluster or scenario.cluster.external else ""
            topics = self._create_topics(cluster, bootstrap, suffix)
            group = scenario.group_id or f"{scenario.name}-{uuid.uuid4().hex[:6]}"
            # A KIP-848 member's session timeout is the brokers'; known only for a cluster the testbed started.
            broker_session = broker_consumer_session_timeout_ms(cluster.broker_settings) if cluster else None
            fleet = stack.enter_context(Fleet(bootstrap, group, list(topics.values()), run_dir, harness,
                                              broker_session_timeout_ms=broker_session))
            ctx = RunContext(scenario, run_dir, harness, bootstrap, topics, cluster, fleet)
            self.context = ctx
            for f in scenario.fleet:
                fleet.start(scenario.members[f.spec], f.count)
            if scenario.load is not None:
                ctx.load = stack.enter_context(LoadGenerator(run_dir, self._load_spec(ctx), recorder=harness))
                self._wait_first_ack(ctx)
            steps = list(scenario.steps)
            if not any(isinstance(s, m.Drain) for s in steps):
                steps.append(m.Drain())  # every run ends with a final drain
            for i, step in enumerate(steps):
                self._notify(i, step)
                harness.record("step_start", step.kind, index=i, step=step.model_dump(mode="json"))
                self.run_step(ctx, step)
                harness.record("step_end", step.kind, index=i)

    def _create_topics(self, cluster: KafkaCluster | None, bootstrap: str, suffix: str) -> dict[str, str]:
        from confluent_kafka.admin import AdminClient, NewTopic

        names = {t.name: f"{t.name}-{suffix}" if suffix else t.name for t in self.scenario.topics}
        for t in self.scenario.topics:
            if cluster is not None:
                cluster.create_topic(names[t.name], t.partitions, t.replication_factor)
            else:
                admin = AdminClient({"bootstrap.servers": bootstrap})
                admin.create_topics([NewTopic(names[t.name], t.partitions, t.replication_factor or 1)])[
                    names[t.name]].result(timeout=30)
        return names

    def _load_spec(self, ctx: RunContext) -> LoadSpec:
        load = self.scenario.load
        assert load is not None
        return LoadSpec(bootstrap_servers=ctx.bootstrap_servers, topic=ctx.topics[load.topic], rate=load.rate,
                        users=load.users, workers=load.workers, duration_s=load.duration_s, key_space=load.keys,
                        key_distribution=load.key_distribution, payload_bytes=load.payload_bytes)

    def _wait_first_ack(self, ctx: RunContext, timeout_s: float = 60.0) -> None:
        """A load that acknowledges nothing would make every measurement vacuous: fail the run early."""
        load = ctx.load
        assert load is not None
        wait_until(lambda: any(p.exists() and p.stat().st_size > 0 for p in load.ack_logs.values()),
                   timeout_s=timeout_s, what="the first acknowledged record of the load",
                   diagnostics=load.diagnostics)

    def _notify(self, index: int, step: m.Step) -> None:
        if self.on_step is not None:
            self.on_step(index, step.kind)

    # ---- steps -----------------------------------------------------------------------------

    def run_step(self, ctx: RunContext, step: m.Step) -> None:  # noqa: C901 - one dispatch, one place
        fleet, cluster, scenario = ctx.fleet, ctx.cluster, ctx.scenario
        if isinstance(step, m.WaitStable):
            fleet.wait_stable(step.members, timeout_s=step.timeout_s)
        elif isinstance(step, m.Wait):
            time.sleep(step.seconds)  # the scenario asks for this much time under load, not a readiness wait
        elif isinstance(step, m.RollingBounce):
            to = scenario.members[step.to] if step.to else None
            fleet.rolling_bounce(to, BounceOptions(step.interval_s, step.mode, step.wait_stable, step.stable_timeout_s))
        elif isinstance(step, m.Kill):
            fleet.kill_member(step.member)
        elif isinstance(step, m.StopMember):
            fleet.stop_member(step.member)
        elif isinstance(step, m.Pause):
            fleet.pause_member(step.member)
            if step.seconds is not None:
                time.sleep(step.seconds)  # the pause length is the fault being injected
                fleet.resume_member(step.member)
        elif isinstance(step, m.Resume):
            fleet.resume_member(step.member)
        elif isinstance(step, m.ScaleOut):
            fleet.scale_out(scenario.members[step.spec], step.count)
        elif isinstance(step, m.ScaleIn):
            fleet.scale_in(step.count, step.mode)
        elif isinstance(step, (m.BrokerKill, m.BrokerStop, m.BrokerStart, m.BrokerRestart, m.BrokerRollingRestart)):
            if cluster is None:
                raise TestbedError(f"step {step.kind} needs a cluster testbed controls")
            if isinstance(step, m.BrokerKill):
                cluster.kill_broker(step.broker)
            elif isinstance(step, m.BrokerStop):
                cluster.stop_broker(step.broker)
            elif isinstance(step, m.BrokerStart):
                cluster.start_broker(step.broker)
            elif isinstance(step, m.BrokerRestart):
                cluster.restart_broker(step.broker, hard=step.mode == "hard")
            else:
                cluster.rolling_restart(hard=step.mode == "hard")
        elif isinstance(step, m.AddPartitions):
            self._add_partitions(ctx, ctx.topics[step.topic], step.total)
        elif isinstance(step, m.Drain):
            self._drain(ctx, step)
        else:  # pragma: no cover - the model admits no other step
            raise TestbedError(f"unknown step {step!r}")

    def _add_partitions(self, ctx: RunContext, topic: str, total: int) -> None:
        from confluent_kafka.admin import AdminClient, NewPartitions

        ctx.harness.record("add_partitions", topic, total=total)
        admin = AdminClient({"bootstrap.servers": ctx.bootstrap_servers})
        admin.create_partitions([NewPartitions(topic, total)])[topic].result(timeout=30)

    def _drain(self, ctx: RunContext, step: m.Drain) -> None:
        if ctx.load is not None:
            ctx.load.stop()
        ctx.harness.record("drain_start", None, timeout_s=step.timeout_s)
        ctx.drained = drain(ctx.run_dir, ctx.bootstrap_servers, list(ctx.topics.values()), step.timeout_s)
        ctx.harness.record("drain_end", None, **ctx.drained)

    # ---- judging ---------------------------------------------------------------------------

    def _judge(self, run_dir: RunDir, result: RunResult) -> RunResult:
        """Analysis, checkers and expectations from the saved history; a failure here is reported, not raised."""
        if self.do_analyse:
            result = evaluate(run_dir, self.scenario, result)
            result.save(run_dir.result)
        if self.do_render:
            try:
                from ..report import render_index, render_run

                render_run(run_dir.root)
                render_index(self.reports_root)
            except Exception as exc:  # noqa: BLE001 - the history and result.json stay; say what failed
                log.error("rendering the report failed: %s", exc)
                (run_dir.root / "report-error.txt").write_text(traceback.format_exc())
        return result
