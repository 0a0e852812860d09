"""One scenario run: host sampler -> cluster -> (load spawned) topics -> fleet -> load started -> steps -> drain ->
saved history -> analysis -> checkers -> result.json, into ``reports/<time>-<scenario>/``. Its report is rendered by
the caller (the CLI, the pytest plugin) from those saved files.

The history is saved as it happens; analysis reads only saved files. Ctrl-C (or SIGTERM) stops the
load and the fleet, keeps the history, analyses what there is and marks the result partial.
Every service is a context manager, so nothing outlives the run.
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from ..admin.group_probe import GroupProbe
from ..admin.kafka_admin import KafkaAdmin
from ..analysis.group.broker_logs import run_stalls_note
from ..analysis.service import warm_up
from ..brokers.cluster import KafkaCluster
from ..errors import ConfigError, NoMemberHistory, WaitTimeout
from ..faults.network import NetworkFaults
from ..faults.network import unavailable as network_unavailable
from ..fleet import Fleet
from ..history.events import Action, now_ms
from ..history.harness import HarnessLog, read_actions
from ..history.silence import silent_members
from ..host import HostSampler
from ..load.generator import LoadGenerator
from ..load.spec import LoadSpec
from ..members.defaults import broker_consumer_session_timeout_ms
from ..run.layout import RunDir
from ..run.result import RunResult
from ..run.revision import testbed_revision
from ..settings import settings
from ..waits import wait_until
from . import model as m
from .effects import collect_or_explain
from .evaluate import evaluate
from .events import PhaseStarted, RunEvents, StepEvent, steps_recorded
from .group_kinds import group_kind
from .loader import ScenarioRun
from .steps import RunContext, run_step

if TYPE_CHECKING:
    from ..placement.cluster import RayPlacer

log = logging.getLogger(__name__)


def run_directory(reports_root: Path, label: str) -> RunDir:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.=+-]+", "-", label).strip("-")
    if len(safe) > 80:  # keep the end too: a trial's number and the last matrix value tell runs apart
        safe = safe[:55] + "~" + safe[-24:]
    root = reports_root / f"{stamp}-{safe}"
    while root.exists():
        root = root.with_name(root.name + "-" + uuid.uuid4().hex[:4])
    return RunDir(root).create()


class ScenarioRunner:
    """``ScenarioRunner(run).execute()``; subscribe to ``runner.events`` to follow it (steps, phases)."""

    def __init__(self, run: ScenarioRun, reports_root: Path = Path("reports"), *,
                 cluster: KafkaCluster | None = None, analyse: bool = True) -> None:
        self.run = run
        self.scenario = run.scenario
        self.reports_root = reports_root
        self.shared_cluster = cluster  # a cluster the caller owns (pytest's), reused for speed
        self.events = RunEvents()
        self.do_analyse = analyse
        self.context: RunContext | None = None
        self.finished = False  # services are down; what remains is judging the saved history
        self.placer: RayPlacer | None = None  # the Ray cluster the members run on, when the settings name one
        self._removals: list[threading.Thread] = []  # the cluster's removal, beside the analysis (``execute`` joins)

    # ---- the run ---------------------------------------------------------------------------

    def execute(self) -> RunResult:
        try:
            self._prepare()  # refuses what cannot work before anything starts
            return self._execute()
        finally:
            if self.placer is not None:
                self.placer.close()
            for removal in self._removals:  # a Ctrl-C here leaves it running: the interpreter waits for it
                removal.join()

    def _execute(self) -> RunResult:
        scenario = self.scenario
        if self.do_analyse:
            warm_up()  # the analysis's Spark boots while the brokers and the fleet start
        run_dir = run_directory(self.reports_root, self.run.label)
        run_dir.scenario.write_text(
            yaml.safe_dump(scenario.model_dump(mode="json", exclude_none=True), sort_keys=False))
        result = RunResult(scenario=scenario.name, run_dir=str(run_dir.root), status="error", started_ms=now_ms(),
                           parameters=self.run.parameters, testbed_revision=testbed_revision())
        harness = HarnessLog(run_dir.harness_log)
        harness.record(Action.RUN_START, scenario.name, parameters=self.run.parameters,
                       allow_crashes=scenario.allow_crashes)
        try:
            self._run(run_dir, harness, result)
            self.events.phase.fire(PhaseStarted("judging", "analysing the saved history"))
            result = self._judge(run_dir, result)
        finally:  # written once, judged or not: Ctrl-C while judging keeps how the run itself ended
            result.save(run_dir.result)
        return result

    def _run(self, run_dir: RunDir, harness: HarnessLog, result: RunResult) -> None:
        """The run itself, until every service is down: how it ended goes into ``result``."""
        scenario = self.scenario
        try:
            with steps_recorded(self.events, harness):
                self._run_services(run_dir, harness)
            if (silent := silent_members(run_dir)) is not None:  # every member has stopped: their files are whole
                raise NoMemberHistory(silent.message)
            if scenario.effects is not None and self.context is not None:  # every member has stopped: a final store
                self.events.phase.fire(PhaseStarted("effects", "reading what the store holds"))
                if failed := collect_or_explain(scenario.effects, run_dir, bootstrap_servers=self.context.bootstrap_servers,
                                                group_id=self.context.fleet.group_id, topics=self.context.topics):
                    log.error("%s", failed)
            result.outcome = result.status = "pass"
        except KeyboardInterrupt:
            harness.record(Action.INTERRUPTED, None, reason="KeyboardInterrupt")
            result.outcome = result.status = "partial"
            result.partial, result.reason = True, "interrupted (Ctrl-C or SIGTERM)"
        except Exception as exc:  # noqa: BLE001 - the history so far is analysed and reported anyway
            result.partial = True
            if crashes := self._crashes_behind(exc):
                # The program died and the group never settled after it: what the run found, not testbed's failure.
                log.warning("run stopped: the group did not settle after the program crashed: %s", exc)
                result.outcome = result.status = "fail"
                result.reason = (f"the group did not settle after the program crashed ({len(crashes)} crash(es); "
                                 f"the first: {crashes[0]}): {type(exc).__name__}: {exc}")
            elif left_out := self._programs_left_out(exc):
                # The program lives on outside its group (stuck past max.poll.interval.ms, or hung in its client):
                # what the run found too; the wait's diagnostics say where its threads stood.
                log.warning("run stopped: the group did not settle with the program out of it: %s", exc)
                result.outcome = result.status = "fail"
                result.reason = (f"the group did not settle: the program's {', '.join(left_out)} ran on outside the "
                                 f"group (stopped taking part; where the threads stood is below): "
                                 f"{type(exc).__name__}: {exc}")
            else:
                log.error("run failed: %s", exc)
                result.outcome = result.status = "error"
                result.reason = f"{type(exc).__name__}: {exc}"
            run_dir.error.write_text(traceback.format_exc())
        finally:
            if scenario.effects is not None and not run_dir.effects.exists() and not run_dir.effects_failed.exists():
                run_dir.effects_failed.write_text(f"the run ended early ({result.status}): the store was not read")
            harness.record(Action.RUN_END, scenario.name, status=result.status)
            harness.close()
            result.ended_ms = now_ms()
            self._say_stalls(run_dir, result)
            self.finished = True

    @staticmethod
    def _say_stalls(run_dir: RunDir, result: RunResult) -> None:
        """A broker that stalled during the run (fenced by its controller, or its controller's work held up for
        seconds; its logs are in the run by now) is told in the log, and in the reason of a run that did not
        complete: beside the error it may explain."""
        actions = [a.model_dump() for a in read_actions(run_dir.harness_log)]
        if (note := run_stalls_note(run_dir.brokers, result.started_ms, result.ended_ms or now_ms(), actions)) is None:
            return
        log.warning("%s", note)
        if result.reason is not None:
            result.reason = f"{result.reason}; {note}"

    def _prepare(self) -> None:
        from ..brokers.versions import check_kafka_version
        from ..brokers.reaper import reap_leftover_processes
        from ..members.launch import prepare_spec

        if not self.scenario.cluster.external and self.shared_cluster is None:
            check_kafka_version(self.scenario.cluster.kafka_version, "cluster.kafka_version")
        self._prepare_upgrades()
        cuts = [i for i, s in enumerate(self.scenario.steps) if isinstance(s, m.Partition)]
        if cuts and (why := network_unavailable()):
            raise ConfigError(f"steps.{cuts[0]}.partition: {why}")
        delays = [i for i, s in enumerate(self.scenario.steps) if isinstance(s, m.Latency)]
        if delays:
            from ..faults.proxies import ensure_toxiproxy, unavailable as proxies_unavailable

            if why := proxies_unavailable():
                raise ConfigError(f"steps.{delays[0]}.latency: {why}")
            ensure_toxiproxy()
        if self.scenario.cluster.external:  # else the cluster's start reaps them, with its containers
            reaped = reap_leftover_processes()
            if reaped:
                log.warning("ended processes an earlier run left: %s", ", ".join(reaped))
        self._prepare_placement()
        if self.placer is None:  # else each spec was readied on the nodes its members may run on
            for spec in self.scenario.members.values():
                prepare_spec(spec)
        group_kind(self.scenario).prepare()

    def _prepare_placement(self) -> None:
        """With a Ray cluster in the settings: connected, the placements checked against its nodes and every spec
        readied there. Without one, members run here, where a placement other than spread means nothing."""
        from ..placement.cluster import PlacedEntry, RayPlacer

        scenario = self.scenario
        entries = [PlacedEntry(f"fleet.{i}", f.placement) for i, f in enumerate(scenario.fleet)]
        entries += [PlacedEntry(f"steps.{i}.scale_out", s.placement)
                    for i, s in enumerate(scenario.steps) if isinstance(s, m.ScaleOut)]
        load = scenario.load.placement if scenario.load is not None else None
        address = settings().ray_address
        if address is None:
            for entry in entries:
                if entry.placement != "spread":
                    raise ConfigError(f"{entry.where}.placement: members are placed on chosen nodes of a Ray cluster "
                                      "only: give its address (testbed run --ray HOST:PORT, or TESTBED_RAY_ADDRESS)")
            if load is not None:
                raise ConfigError("load.placement: the load's workers are placed on a Ray cluster only: give its "
                                  "address (testbed run --ray HOST:PORT, or TESTBED_RAY_ADDRESS), or leave it out")
            return
        cuts = [f"steps.{i}.partition.member" for i, s in enumerate(scenario.steps)
                if isinstance(s, m.Partition) and s.member is not None]
        self.placer = RayPlacer.connect(address)
        self.placer.check(entries + ([PlacedEntry("load", load)] if load is not None else []),
                          brokers_on_loopback=not scenario.cluster.external)
        self.placer.prepare(entries, list(scenario.members.values()), member_cut=cuts[0] if cuts else None)

    def _prepare_upgrades(self) -> None:
        """The images and the feature tool of every version a broker_upgrade brings, before anything starts:
        a build in the middle of a roll would be timed as part of it."""
        from ..brokers.images import ensure_kafka_image
        from ..brokers.versions import check_kafka_version
        from ..members.envs import java_classpath

        for i, step in enumerate(self.scenario.steps):
            if isinstance(step, m.BrokerUpgrade):
                check_kafka_version(step.to, f"steps.{i}.broker_upgrade.to")
                ensure_kafka_image(step.to)
                if step.finalize:
                    java_classpath(step.to)

    def _run_services(self, run_dir: RunDir, harness: HarnessLog) -> None:
        scenario = self.scenario
        self.events.phase.fire(PhaseStarted("services", "starting cluster and fleet"))
        with ExitStack() as stack:
            # First in, last out: the host is sampled from before the cluster starts until everything stopped.
            stack.enter_context(HostSampler(run_dir.host_log))
            if self.placer is not None:  # closed after the fleet: the members' last files come home first
                self.placer.begin(run_dir, harness)
                stack.callback(self.placer.close)
            cluster = self.shared_cluster
            if cluster is None and not scenario.cluster.external:
                cluster = stack.enter_context(self._removed_beside_analysis(KafkaCluster(
                    brokers=scenario.cluster.brokers, kafka_version=scenario.cluster.kafka_version,
                    broker_settings=scenario.cluster.broker_settings, log_dir=run_dir.brokers, recorder=harness,
                    log_levels=dict(scenario.cluster.broker_log_levels),
                    client_proxies=any(isinstance(s, m.Latency) for s in scenario.steps))))
            elif cluster is not None:
                cluster.recorder = harness
                stack.callback(cluster.copy_logs, run_dir.brokers)
                stack.callback(setattr, cluster, "recorder", None)
            bootstrap = cluster.bootstrap_servers if cluster else scenario.cluster.bootstrap_servers
            if cluster is not None:
                admin = cluster.admin()
            else:  # an external cluster's
                admin = stack.enter_context(KafkaAdmin(bootstrap))
            # On a cluster other runs share, topic names get a unique suffix.
            suffix = uuid.uuid4().hex[:6] if self.shared_cluster or scenario.cluster.external else ""
            # The group's coordinator is awaited before any member starts: its creation belongs to the cluster's
            # start, not the group's. Asked from a child: a broker of a shared cluster may still be coming back from
            # the last run's faults, when librdkafka can abort the describing process (testbed.admin.group_probe; it
            # once took a whole test session down).
            group = scenario.group_id or f"{scenario.name}-{uuid.uuid4().hex[:6]}"
            topics = {t.name: f"{t.name}-{suffix}" if suffix else t.name for t in scenario.topics}
            # The load's processes start now and wait at their gate while the topics and the fleet are made (their
            # Python and Locust take a second): the first step follows the members' start by the first ack only.
            load = self._spawned_load(run_dir, harness, bootstrap, topics)
            if load is not None:  # its own close also when the run fails before it starts; entered again below
                stack.callback(load.close)
            probe = GroupProbe(bootstrap)
            probe.start()
            try:
                self._topics_beside_coordinator(admin, topics, group, probe)
            finally:
                probe.close()
            kind = group_kind(scenario)
            kind.configure(admin, harness, group, scenario)
            # A KIP-848 member's session timeout is the brokers'; known only for a cluster the testbed started.
            broker_session = broker_consumer_session_timeout_ms(cluster.broker_settings) if cluster else None
            member_cuts = any(isinstance(s, m.Partition) and s.member is not None for s in scenario.steps)
            # called once the fleet has stopped (entered after this), the cluster still up
            consumed = [topics[t.name] for t in scenario.topics if t.consumed]  # what the group reads
            stack.callback(kind.after_fleet, bootstrap, consumed, run_dir)
            fleet = stack.enter_context(Fleet(bootstrap, group, consumed, run_dir, harness,
                                              broker_session_timeout_ms=broker_session, own_gids=member_cuts,
                                              topic_names=topics, stable_wait=kind.stable_wait,
                                              placer=self.placer))
            ctx = RunContext(scenario, run_dir, harness, bootstrap, topics, cluster, admin, fleet)
            if any(isinstance(s, m.Partition) for s in scenario.steps):
                # Entered after the fleet, so closed before it: members stop on a healed network.
                ctx.network = stack.enter_context(NetworkFaults(harness))
            self.context = ctx
            # every entry started before any program is awaited: the programs start side by side
            formed = [member for f in scenario.fleet
                      for member in fleet.start(scenario.members[f.spec], f.count, f.members_per_process, wait=False,
                                                placement=f.placement)]
            fleet.await_programs(formed)
            if load is not None:
                ctx.load = stack.enter_context(load)  # the gate opened: closed before the fleet, as it started after
                self._wait_first_ack(ctx)
            self.run_steps(ctx, self.steps())

    def steps(self) -> list[m.Step]:
        """The scenario's steps, and a final drain if it has none: every run ends with one."""
        steps = list(self.scenario.steps)
        if not any(isinstance(s, m.Drain) for s in steps):
            steps.append(m.Drain())
        return steps

    def run_steps(self, ctx: RunContext, steps: list[m.Step]) -> None:
        for i, step in enumerate(steps):
            self.events.step_start.fire(StepEvent(i, len(steps), step))
            run_step(ctx, step)
            self.events.step_end.fire(StepEvent(i, len(steps), step))

    @contextmanager
    def _removed_beside_analysis(self, cluster: KafkaCluster) -> Iterator[KafkaCluster]:
        """The cluster, started (a failed start removes what it started); at the block's end its brokers' logs are
        copied and its containers removed on a thread (``close_beside``) while the analysis reads the copies."""
        cluster.open()
        try:
            yield cluster
        finally:
            self._removals.append(cluster.close_beside())

    def _topics_beside_coordinator(self, admin: KafkaAdmin, topics: dict[str, str], group: str,
                                   probe: GroupProbe) -> None:
        """The topics (``topics``: each scenario topic's name on the cluster) made while the group's coordinator is
        awaited on a thread (a cluster this run started made __consumer_offsets in its start; on another the first
        lookup may have the brokers make it, half a second on one broker). A failure of either ends both."""
        stop = threading.Event()
        with ThreadPoolExecutor(1, thread_name_prefix="group-coordinator") as pool:
            try:
                coordinator = pool.submit(admin.wait_group_coordinator, group, describe=probe.describe, stop=stop)
                for t in self.scenario.topics:
                    admin.create_topic(topics[t.name], t.partitions, t.replication_factor)
                coordinator.result()
            finally:
                stop.set()  # the wait, if still polling, ends at its next poll

    def _spawned_load(self, run_dir: RunDir, harness: HarnessLog, bootstrap: str,
                      topics: dict[str, str]) -> LoadGenerator | None:
        """The scenario's load, its processes spawned (``LoadGenerator.spawn``); None without a load."""
        load = self.scenario.load
        if load is None:
            return None
        spec = LoadSpec(bootstrap_servers=bootstrap, topic=topics[load.topic], rate=load.rate, users=load.users,
                        workers=load.workers, duration_s=load.duration_s, key_space=load.keys,
                        key_distribution=load.key_distribution, payload_bytes=load.payload_bytes)
        placed = load.placement
        workers = self.placer.workers(placed) if self.placer is not None and placed is not None else None
        generator = LoadGenerator(run_dir, spec, recorder=harness, worker_hosts=workers)
        generator.spawn()
        return generator

    def _wait_first_ack(self, ctx: RunContext, timeout_s: float = 60.0) -> None:
        """A load that acknowledges nothing would make every measurement vacuous: fail the run early."""
        load = ctx.load
        assert load is not None
        # Polled often: the first step starts the moment the load is acknowledged (a stat per producer a poll).
        wait_until(lambda: any(p.exists() and p.stat().st_size > 0 for p in load.ack_logs.values()),
                   timeout_s=timeout_s, what="the first acknowledged record of the load", interval_s=0.05,
                   diagnostics=load.diagnostics, abort=load.ended_early)

    # ---- judging ---------------------------------------------------------------------------

    def _crashes_behind(self, exc: Exception) -> list[str]:
        """The program's crashes over the run when ``exc`` is a wait that timed out (a wait for a stable group, say):
        a group that never settles after its program died is a finding; none when the run saw no crash."""
        if not isinstance(exc, WaitTimeout) or self.context is None:
            return []
        return self.context.fleet.crash_lines()

    def _programs_left_out(self, exc: Exception) -> list[str]:
        """The user's programs alive but out of their group when ``exc``, a wait for a stable group, gave up: a
        program that stops taking part while it runs on is a finding, as one that dies is."""
        if not isinstance(exc, WaitTimeout) or self.context is None:
            return []
        return self.context.fleet.programs_left_out

    def _judge(self, run_dir: RunDir, result: RunResult) -> RunResult:
        """Analysis, checkers and expectations from the saved history; a failure here is reported, not raised."""
        return evaluate(run_dir, self.scenario, result) if self.do_analyse else result
