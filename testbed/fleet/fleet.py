"""Fleet: a consumer group of member processes, and the harness actions scenarios drive on it.

A service: a context manager that starts members from specs, stops, kills, pauses and resumes
them, scales the group and bounces it member by member to another spec (the mixed-version step).
Every action is written to the harness history with its time before it is taken, and every
member process is gone when the fleet exits, also on Ctrl-C. Every member process that ends, for
whatever reason, gets one ``member_exit`` action stamped when it really ended (see
``MemberProcess``): after the ``member_stop``/``member_kill`` that caused it, if any.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..admin.group_probe import GroupProbe
from ..admin.kafka_admin import GroupView, KafkaAdmin
from ..clients import names
from ..errors import ConfigError
from ..faults.network import member_gid
from ..history.events import Action, TopicPartition, now_ms
from ..history.harness import HarnessLog
from ..members.config import MemberConfig
from ..members.defaults import effective_timeouts
from ..members.launch import host_command, prepare_spec
from ..members.naming import MemberNames, placements
from ..members.spec import MemberSpec
from ..run.layout import RunDir
from ..waits import wait_until
from .crashes import CrashRestarts
from .host import HostedMember, HostProcess
from .member import Member, MemberHost, Placer
from .ownership import HistoryOwnership, disagreements, fleet_names, held_once
from .process import MemberProcess, last_client_error
from .programs import ProgramCrashedAtStart, wait_program_subscribed
from .restarts import RestartOrder
from .share import HoldingMoment, ShareActivity, ShareHolding
from .stacks import STACKS_AT_MOST, client_stacks, indented, stacks_now
from .streams import STATUS_LOG_LINES, StreamsStates, last_group_status, not_running, stream_threads

log = logging.getLogger(__name__)
StopMode = Literal["clean", "hard"]
# How wait_stable tells the group stable: a consumer group's agreed assignment, share members acquiring, Streams
# instances RUNNING (the streams protocol, which the consumer-group admin API does not list).
StableWait = Literal["group", "share", "streams"]
EXIT_RECORD_TIMEOUT_S = 10.0  # close(): at most this long, in all, for the last exits to be recorded


@dataclass(frozen=True)
class BounceOptions:
    interval_s: float = 0.0
    mode: StopMode = "clean"
    wait_stable: bool = True
    stable_timeout_s: float = 120.0
    count: int | None = None  # bounce only the first ``count`` live members (slot order); None: all


class Fleet:
    """``with Fleet(bootstrap, group, topics, run_dir) as fleet: fleet.start(spec, 4)``."""

    def __init__(self, bootstrap_servers: str, group_id: str, topics: list[str], run_dir: RunDir,
                 harness: HarnessLog | None = None, stop_timeout_s: float = 30.0,
                 broker_session_timeout_ms: int | None = None, own_gids: bool = False,
                 topic_names: dict[str, str] | None = None, stable_wait: StableWait = "group",
                 placer: Placer | None = None) -> None:
        if not topics:
            raise ConfigError("topics must name at least one topic")
        self.bootstrap_servers = bootstrap_servers
        self.group_id = group_id
        self.topics = list(topics)
        # scenario topic name -> this run's name, for command members' {topic:<name>}; the names themselves if none
        self.topic_names = dict(topic_names) if topic_names is not None else {t: t for t in self.topics}
        self.run_dir = run_dir.create()
        self._own_harness = harness is None
        self.harness = harness or HarnessLog(run_dir.harness_log)
        self.admin = KafkaAdmin(bootstrap_servers)
        self.probe = GroupProbe(bootstrap_servers)
        self.probe.start()
        self.stop_timeout_s = stop_timeout_s
        # The brokers' group.consumer.session.timeout.ms, if known: a KIP-848 member's session timeout.
        self.broker_session_timeout_ms = broker_session_timeout_ms
        self.own_gids = own_gids  # each member under its own gid, so that a network cut can single it out
        self.stable_wait = stable_wait  # how wait_stable tells the group stable: its kind's choice
        self.members: dict[int, Member] = {}  # slot -> the live (or last) member in that slot
        self.retired: list[Member] = []
        self.hosts: list[MemberHost] = []  # processes that host many members each
        self.placer = placer  # where every member runs when not here: the nodes of a Ray cluster (testbed.placement)
        self._names = MemberNames()
        # The names the scenario knows its members by (testbed.scenario.roster replays them): a crashed program's
        # restart takes the slot's next process name but keeps the scenario's name of the member it replaces.
        self._scenario_names = MemberNames()
        self._named: dict[str, str] = {}  # member id -> the scenario's name for it
        # The user's programs alive but out of the group when a stable wait last gave up (absent_accounts).
        self.programs_left_out: list[str] = []
        self._slots = threading.RLock()  # starts in a slot: the run's thread and the restarts' thread
        self._closing = False
        self._crashes = CrashRestarts(self.harness, self._restart)
        self._prepared: set[tuple[object, ...]] = set()
        self._ownership = HistoryOwnership()  # the members' own view of what they hold, for wait_stable
        self._share_activity = ShareActivity()  # share members' acquisitions, for wait_share_active
        self._streams_states = StreamsStates()  # Streams instances' latest state, for wait_streams_stable

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> "Fleet":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop every member (clean, then SIGKILL after the timeout); never leaves a process behind."""
        self._closing = True
        self._crashes.restarter.stop_scheduling()  # no restart from now on; one under way has finished
        # Every member is asked to leave at once, then waited for: a 50-member fleet closes in seconds.
        stopping = []
        for slot in sorted(self.members):
            proc = self.members[slot]
            try:
                if proc.alive():
                    self.harness.record(Action.MEMBER_STOP, proc.member_id, reason="fleet_close")
                    proc.request_stop()
                    stopping.append(proc)
            except Exception as exc:  # noqa: BLE001 - each member is stopped independently
                log.error("stopping %s failed: %s", proc.member_id, exc)
                proc.kill()
        # One deadline for them all: waited for one by one, each hung member would add its own timeout (and whether
        # a member's close counts as hung would depend on its place in the order).
        until = time.monotonic() + self.stop_timeout_s
        for proc in stopping:
            try:
                proc.stop(max(0.0, until - time.monotonic()))
            except Exception as exc:  # noqa: BLE001
                log.error("stopping %s failed: %s", proc.member_id, exc)
                proc.kill()
        for proc in [*self.members.values(), *self.retired]:
            if proc.alive():
                proc.kill()
        # Every exit is recorded before the harness log may close (the watchers are done in ms).
        deadline = time.monotonic() + EXIT_RECORD_TIMEOUT_S
        for host in self.hosts:  # its members are gone: the process ends on its own
            host.close()
        for proc in [*self.members.values(), *self.retired]:
            if not proc.wait_exit_recorded(max(0.0, deadline - time.monotonic())):
                log.warning("the exit of %s was not recorded in time", proc.member_id)
        self._crashes.restarter.close()  # its thread ends last: the restarted members died with it otherwise
        self.probe.close()
        self.admin.close()
        if self._own_harness:
            self.harness.close()

    def prepare(self, spec: MemberSpec) -> None:
        """Refuse a spec that cannot work and build its client environment, before any member starts."""
        key = (spec.client, spec.client_version, spec.is_share, tuple(spec.command or ()), spec.cwd)
        if key in self._prepared or self.placer is not None:  # a placer readied every spec on its nodes
            return
        prepare_spec(spec)
        self._prepared.add(key)

    # ---- members ---------------------------------------------------------------------------

    def _new_process(self, slot: int, spec: MemberSpec, host: MemberHost | None = None,
                     restart_of: Member | None = None, placement: object = "spread") -> Member:
        member_id = self._names.take(slot)
        self._named[member_id] = (self._named[restart_of.member_id] if restart_of is not None
                                  else self._scenario_names.take(slot))
        config = MemberConfig(
            member_id=member_id, slot=slot, group_id=self.group_id, topics=self.topics,
            bootstrap_servers=self.bootstrap_servers, spec=spec,
            history_path=self.run_dir.member_log(member_id),
            log_path=host.log_path if host else self.run_dir.member_output(member_id),
            broker_session_timeout_ms=self.broker_session_timeout_ms, topic_names=self.topic_names,
            run_dir=self.run_dir.root,
        )
        if self.placer is not None:
            return self.placer.new_member(config, self.run_dir.member_config(member_id), self._record_exit,
                                          gid=member_gid(slot) if self.own_gids else None, placement=placement,
                                          host=host)
        if isinstance(host, HostProcess):
            return HostedMember(config, self.run_dir.member_config(member_id), host, on_exit=self._record_exit)
        return MemberProcess(config, self.run_dir.member_config(member_id), on_exit=self._record_exit,
                             gid=member_gid(slot) if self.own_gids else None)

    def _new_host(self, slot: int, spec: MemberSpec, placement: object = "spread") -> MemberHost:
        """A started, empty member host (here, or where the placer puts it); named after the first member it will
        run."""
        name = f"host-{self._names.upcoming(slot)}"
        gid = member_gid(slot) if self.own_gids else None
        host: MemberHost
        if self.placer is not None:
            host = self.placer.new_host(name, spec, self.run_dir.member_output(name), gid=gid, placement=placement)
        else:
            host = HostProcess(name, host_command(spec), self.run_dir.member_output(name), gid=gid)
            host.start()
        self.hosts.append(host)
        return host

    def _record_exit(self, proc: Member, detail: dict[str, object]) -> None:
        """Called by the process's watcher thread the moment it ended (HarnessLog writes are thread-safe); a crash
        of the user's program is recorded next, and its restart scheduled if its policy asks for one."""
        self.harness.record(Action.MEMBER_EXIT, proc.member_id, slot=proc.config.slot, **detail)
        self._crashes.on_exit(proc, detail, self._named.get(proc.member_id, proc.member_id), self._closing)

    def _restart(self, order: RestartOrder) -> None:
        """A crashed program's new incarnation in its slot, when its back-off is over (the restarts' thread)."""
        with self._slots:
            if self._closing or self.members.get(order.slot) is not order.crashed:
                return  # the run is ending, or a step replaced or removed the member meanwhile
            self.harness.record(Action.MEMBER_RESTART, self._names.upcoming(order.slot), slot=order.slot,
                                replaces=order.crashed.member_id, attempt=order.attempt, backoff_s=order.backoff_s)
            self._start_in_slot(order.slot, order.crashed.config.spec, restart_of=order.crashed)

    def restarts_pending(self) -> bool:
        """Whether a crashed program waits for its restart (its back-off), or is being restarted."""
        return self._crashes.pending()

    def nobody_left(self) -> str | None:
        """Why no member can process anything any more: none runs, paused or not, and no crashed program waits
        for its restart (a drain's reason to end before its timeout); None while one may."""
        if self.restarts_pending() or any(m.alive() for m in self.members.values()):
            return None
        return "no member is left to process the records (none runs, and no restart is coming)"

    def _start_in_slot(self, slot: int, spec: MemberSpec, host: MemberHost | None = None,
                       restart_of: Member | None = None, in_run: bool = False, *, wait: bool = True,
                       placement: object = "spread") -> Member:
        """Start a member in ``slot``; a user's program is watched until it subscribes (``wait``; else by
        ``await_programs`` later). A program that crashes before that ends the run (ProgramCrashedAtStart with its
        output) when the fleet first forms: it cannot run at all. ``in_run`` (a bounce's or a scale-out's new
        member): its crash is recorded and answered by its restart policy like any other, as a rollout of a
        version that crashes at start is what the run is for. A restart is not watched: it runs what already
        subscribed as the run expects; one that dies at start is another crash."""
        with self._slots:
            proc = self._new_process(slot, spec, host, restart_of, placement)
            self.harness.record(Action.MEMBER_START, proc.member_id, slot=slot, spec=spec.name, client=spec.client,
                                client_version=spec.client_version, **({"host": host.name} if host else {}),
                                **({"node": proc.node_name} if proc.node_name else {}),
                                **({"restart_of": restart_of.member_id} if restart_of is not None else {}))
            proc.start()
            if slot in self.members:
                self.retired.append(self.members[slot])
            self.members[slot] = proc
        if wait and restart_of is None:
            self.await_programs([proc], in_run=in_run)
        return proc

    def await_programs(self, started: list[Member], *, in_run: bool = False) -> None:
        """Until each user's program among ``started`` subscribed (``wait_program_subscribed``), one after the
        other: they start side by side meanwhile, so the fleet forms in the time of its slowest program, not the
        sum of all (JVM programs take seconds each). ``in_run``: as in ``_start_in_slot``."""
        for proc in started:
            if not proc.config.spec.is_command:
                continue
            try:
                wait_program_subscribed(proc, self.group_id, self.topics,
                                        [t for t in self.topic_names.values() if t not in self.topics])
            except ProgramCrashedAtStart as crash:
                if not in_run:
                    raise
                log.warning("%s crashed at its start (recorded as a crash; its restart policy applies): %s",
                            proc.member_id, crash)

    def start(self, spec: MemberSpec, count: int, per_process: int = 1, *, in_run: bool = False,
              wait: bool = True, placement: object = "spread") -> list[Member]:
        """Start ``count`` members of ``spec`` in new slots, ``per_process`` of them in each process, and (``wait``)
        until its programs subscribed, started side by side (``await_programs``; without ``wait`` the caller
        awaits them, as the fleet's formation does after starting every entry). ``in_run``: the run is under way
        (a scale-out), where a program crashing at its start is a finding, not a failed start
        (``_start_in_slot``). ``placement``: where the fleet's placer puts them, if it has one (opaque here)."""
        if count < 1:
            raise ConfigError(f"count must be at least 1, got {count}")
        if per_process < 1:
            raise ConfigError(f"members_per_process must be at least 1, got {per_process}")
        self.prepare(spec)
        started: list[Member] = []
        host = None
        for place in placements(self.members, count, per_process):
            if place.opens_process:
                host = self._new_host(place.slot, spec, placement)
            started.append(self._start_in_slot(place.slot, spec, host, in_run=in_run, wait=False,
                                               placement=placement))
        if wait:
            self.await_programs(started, in_run=in_run)
        return started

    def processes(self) -> list[Any]:
        """Every OS process the fleet started and that still runs: member processes and hosts."""
        procs = [p for p in [*self.members.values(), *self.retired] if p.host is None and p.alive()]
        return procs + [h for h in self.hosts if h.alive()]

    def live(self) -> list[Member]:
        return [p for _, p in sorted(self.members.items()) if p.alive() and p.state == "running"]

    def member(self, member_id: str) -> Member:
        """The member of that id, or the one that carries on the member the scenario calls so (a crashed
        program's restart: the scenario's steps name members by the names its file gives them)."""
        for proc in self.members.values():
            if proc.member_id == member_id:
                return proc
        for proc in self.members.values():
            if self._named.get(proc.member_id) == member_id:
                return proc
        raise ConfigError(f"member must be one of {[p.member_id for p in self.members.values()]}, "
                          f"got {member_id!r}")

    def stop_member(self, member_id: str) -> None:
        proc = self.member(member_id)
        self._crashes.restarter.cancel(proc.config.slot)  # stopped by the scenario: not brought back
        if self._ended_by_itself(proc):
            self._nothing_to_end(proc)
            return
        self.harness.record(Action.MEMBER_STOP, proc.member_id)
        proc.stop(self.stop_timeout_s)

    def kill_member(self, member_id: str, **detail: object) -> None:
        """SIGKILL the member's process: a hosted member's whole host, every member in it recorded as killed."""
        proc = self.member(member_id)
        self._crashes.restarter.cancel(proc.config.slot)  # killed by the scenario: not brought back
        if self._ended_by_itself(proc):
            self._nothing_to_end(proc)
            return
        for victim in proc.cohosted():
            self.harness.record(Action.MEMBER_KILL, victim.member_id,
                                **({"by": member_id} if victim is not proc else {}), **detail)
        proc.kill()

    @staticmethod
    def _ended_by_itself(proc: Member) -> bool:
        """A user's program that ended unasked (a crash, waiting for its restart or down for good, or an exit 0);
        testbed's own runners are left as they were (their end is testbed's defect, not the run's)."""
        return (proc.config.spec.is_command and not proc.alive() and proc.exit_info is not None
                and proc.exit_info.get("cause") == "exited")

    def _programs_gone(self) -> bool:
        """The user's programs ended by themselves and none is coming back: a group no wait can see stable."""
        return not self.restarts_pending() and any(self._ended_by_itself(m) for m in self.members.values())

    @staticmethod
    def _nothing_to_end(proc: Member) -> None:
        """A step's member that had ended by itself (its restart, if one waited, is cancelled): the step's action is
        not recorded, which would read as the cause of an end it did not cause."""
        log.warning("%s had already ended by itself (%s): the step has nothing to stop", proc.member_id,
                    proc.ended_how)

    def wait_share_moment(self, member_id: str, moment: HoldingMoment, timeout_s: float = 30.0) -> dict[str, object]:
        """Wait until the share member is at ``moment`` by its history (``ShareHolding``): holding records it
        acquired after this wait began, or with acknowledgements sent after it began and not yet answered. Polled
        every millisecond, so that the fault follows within a few: a member holds a batch for its processing time,
        and acknowledgements are on the wire for a round trip. Returns the detail for the fault's harness action
        (``when``, and what the member held)."""
        proc = self.member(member_id)
        if not proc.config.spec.is_share:
            raise ConfigError(f"when: {moment} needs a share member; {member_id} is not one")
        holding = ShareHolding(proc.config.history_path, now_ms())
        wait_until(lambda: holding.now(moment), timeout_s=timeout_s, interval_s=0.001,
                   what=f"share member {member_id} {moment.replace('_', ' ')}",
                   diagnostics=self.diagnostics, abort=lambda: first_exit([proc]))
        return {"when": moment, "held": len(holding.held), "acks_in_flight": len(holding.in_flight)}

    def session_timeout_detail(self, member_id: str) -> dict[str, int]:
        """The member's effective session timeout, for a fault's harness action: it lets the analysis tell a
        zombie (cut off from the group past it) from a short freeze. Empty when unknown."""
        timeout, _ = effective_timeouts(self.member(member_id).config.spec,
                                        broker_session_timeout_ms=self.broker_session_timeout_ms)
        return {"session_timeout_ms": timeout} if timeout else {}

    def pause_member(self, member_id: str, **detail: object) -> None:
        """SIGSTOP the member's process (a hosted member's whole host: each member in it recorded as paused)."""
        proc = self.member(member_id)
        for victim in proc.cohosted():
            self.harness.record(Action.MEMBER_PAUSE, victim.member_id,
                                **self.session_timeout_detail(victim.member_id), **detail)
        proc.pause()

    def resume_member(self, member_id: str) -> None:
        proc = self.member(member_id)
        for victim in proc.cohosted():
            self.harness.record(Action.MEMBER_RESUME, victim.member_id)
        proc.resume()

    def stall_member(self, member_id: str) -> None:
        """Stop the member's poll loop from polling; its client's own threads (heartbeats) run on."""
        proc = self.member(member_id)
        if not proc.config.spec.family.stall:
            stallable = names(lambda f: f.stall)
            raise ConfigError(f"{member_id}: a {proc.config.spec.client} member's poll loop cannot be stalled (its "
                              f"runner has no hook); stall a {', '.join(stallable[:-1])} or {stallable[-1]} member, "
                              "or pause it")
        _, max_poll = effective_timeouts(proc.config.spec, broker_session_timeout_ms=self.broker_session_timeout_ms)
        self.harness.record(Action.MEMBER_STALL, member_id, max_poll_interval_ms=max_poll)
        proc.stall(True)

    def unstall_member(self, member_id: str) -> None:
        self.harness.record(Action.MEMBER_UNSTALL, member_id)
        self.member(member_id).stall(False)

    def restart_member(self, member_id: str, spec: MemberSpec | None = None, mode: StopMode = "clean") -> Member:
        """Replace a member by a new one in its slot (same static instance id), possibly of another spec.

        A hosted member's replacement runs in the same host when that host still runs and can run the new
        spec (same client and version); otherwise in a process of its own.
        """
        proc = self.member(member_id)
        new_spec = spec or proc.config.spec
        self.prepare(new_spec)
        (self.kill_member if mode == "hard" else self.stop_member)(member_id)
        host = None
        if proc.host is not None and proc.host.alive() and (
                (new_spec.client, new_spec.client_version) == (proc.config.spec.client, proc.config.spec.client_version)):
            host = proc.host
        return self._start_in_slot(proc.config.slot, new_spec, host, in_run=True)

    def scale_out(self, spec: MemberSpec, count: int, per_process: int = 1,
                  placement: object = "spread") -> list[Member]:
        self.harness.record(Action.SCALE_OUT, None, count=count, spec=spec.name)
        return self.start(spec, count, per_process, in_run=True, placement=placement)

    def scale_in(self, count: int, mode: StopMode = "clean") -> list[str]:
        victims = self.live()[-count:] if count > 0 else []
        if count < 1 or len(victims) < count:
            raise ConfigError(f"scale_in count must be between 1 and {len(self.live())}, got {count}")
        self.harness.record(Action.SCALE_IN, None, count=count, members=[p.member_id for p in victims])
        for proc in victims:
            (self.kill_member if mode == "hard" else self.stop_member)(proc.member_id)
            del self.members[proc.config.slot]
            self.retired.append(proc)
        return [p.member_id for p in victims]

    def rolling_bounce(self, to_spec: MemberSpec | None = None, options: BounceOptions = BounceOptions(),
                       between: Callable[[Member], None] | None = None) -> list[Member]:
        """Restart every live member in turn (optionally into ``to_spec``); the mixed-version step. A slot whose
        program crashed (waiting for its restart, or down for good) is replaced in its turn as well, as a rollout
        replaces a crash-looping pod."""
        if to_spec is not None:
            self.prepare(to_spec)
        targets = [p.member_id for _, p in sorted(self.members.items())
                   if (p.alive() and p.state == "running") or self._ended_by_itself(p)][:options.count]
        self.harness.record(Action.BOUNCE_START, None, members=targets, to_spec=to_spec.name if to_spec else None,
                            mode=options.mode, interval_s=options.interval_s)
        started: list[Member] = []
        for i, member_id in enumerate(targets):
            started.append(self.restart_member(member_id, to_spec, options.mode))
            if options.wait_stable:
                self.wait_stable(timeout_s=options.stable_timeout_s)
            if between is not None:
                between(started[-1])
            if options.interval_s > 0 and i < len(targets) - 1:
                time.sleep(options.interval_s)  # the bounce interval is the experiment's parameter, not a wait
        self.harness.record(Action.BOUNCE_END, None, members=[p.member_id for p in started])
        return started

    # ---- observation -----------------------------------------------------------------------

    def describe(self) -> GroupView:
        """What the coordinator says about the group, asked from a child process (``GroupProbe``): the harness
        must survive librdkafka's admin client aborting after a coordinator fault."""
        return self.probe.describe(self.group_id)

    def crash_lines(self, since: float | None = None) -> list[str]:
        """A line per crash of the user's programs over the run, or since ``since`` (monotonic: a wait's start),
        for a wait's diagnostics: a program that died without leaving its group stays a member of it until its
        session times out, which a wait for a stable group sees as a member too many."""
        return [f"{member} crashed {f'{ts - since:.1f} s into this wait ' if since is not None else ''}"
                f"({how[:200]}); a program that dies without leaving its group stays in it until its session times "
                "out (the client's session.timeout.ms)" for ts, member, how in self._crashes.since(since or 0.0)]

    def wait_stable(self, members: int | None = None, timeout_s: float = 120.0) -> GroupView | None:
        """Wait until the group is stable as its kind tells it (``stable_wait``, which the scenario's group kind
        chose once): a consumer group's assignment agreed on (``wait_group_stable``), every share member
        acquiring (``wait_share_active``), every Streams instance on the streams protocol RUNNING
        (``wait_streams_stable``). The moment goes to the harness log (``group_stable``): the analysis ends the
        rebalance episode open then, so that a change right after the wait is an episode of its own."""
        waits: dict[StableWait, Callable[[int | None, float], GroupView | None]] = {
            "group": self.wait_group_stable, "share": self.wait_share_active, "streams": self.wait_streams_stable}
        view = waits[self.stable_wait](members, timeout_s)
        self.harness.record(Action.GROUP_STABLE, None, members=len(self.live()) if members is None else members)
        return view

    def wait_group_stable(self, members: int | None = None, timeout_s: float = 120.0) -> GroupView | None:
        """Wait until the group is stable with every live member in it (or ``members`` members) and every
        partition owned once, in the broker's view and in the members' own histories alike: the broker's
        assignment runs ahead of the members' callbacks (testbed.fleet.ownership), and a partition is not
        being consumed until its member's callback has run. A Kafka Streams instance on the classic protocol (its
        history shows its KafkaStreams state) must also be RUNNING. A team's Kafka Streams program that chose the
        streams protocol itself (its ``started`` says so) is judged as ``wait_streams_stable`` judges (None then).

        Ends at once (WaitAborted) when a member process that was live at the start exits.
        """
        watched, began = self.live(), time.monotonic()
        expected = len(watched) if members is None else members
        partitions = self.admin.partitions_of(self.topics)
        problems: list[str] = []
        streams_stable = self._streams_stable(expected, partitions, problems)
        self.programs_left_out = []  # this wait's, should it give up

        def check() -> GroupView | bool | None:
            if any(self._streams_states.on_streams_protocol(m.config.history_path) for m in self.live()):
                return streams_stable()
            view = self.describe()
            # A crashed program left the group, and its restart joins it: the live members are the group now.
            wanted = len(self.live()) if members is None else members
            if members is None and wanted == 0 and self._programs_gone():
                log.warning("group %s: no member left to be stable (every program crashed for good)", self.group_id)
                return view
            if not stable_with(view, wanted, partitions):
                problems[:] = []
                return None
            # the members the broker lists (a frozen member it dropped still holds its partitions by its history)
            live = {m.member_id: m for m in self.live()}
            names = self._broker_names(view, live)
            held = {name: self._ownership.owned(live[name].config.history_path)
                    for name in names.values() if name in live}
            problems[:] = disagreements(view, held, partitions, names)
            # A Streams instance on the classic protocol processes only once RUNNING: its group can be stable while
            # it still initialises its tasks (exactly-once producers, state stores).
            problems.extend(not_running({name: self._streams_states.state(m.config.history_path)
                                         for name, m in live.items()}))
            return None if problems else view

        stable = wait_until(check, timeout_s=timeout_s, interval_s=0.5,
                            what=f"group {self.group_id} stable with {expected} members owning {len(partitions)} "
                                 f"partitions, in the broker's view and the members' histories",
                            diagnostics=lambda: self.stuck_diagnostics([*self.crash_lines(began), *problems]),
                            abort=lambda: runner_exit(watched))
        return stable if isinstance(stable, GroupView) else None

    def wait_streams_stable(self, members: int | None = None, timeout_s: float = 120.0) -> None:
        """A Kafka Streams group on the streams protocol, which the consumer-group admin API does not list: stable
        when every live instance's history says RUNNING, every partition is held once, and, with at least as many
        partitions as instances, every instance holds one (the broker's task assignor spreads active tasks
        evenly, so an instance with none is still waiting for its share).

        Ends at once (WaitAborted) when a member process that was live at the start exits."""
        watched = self.live()
        expected = len(watched) if members is None else members
        partitions = self.admin.partitions_of(self.topics)
        problems: list[str] = []
        wait_until(self._streams_stable(expected, partitions, problems), timeout_s=timeout_s,
                   interval_s=0.5,
                   what=f"Streams group {self.group_id} (streams protocol): {expected} instances RUNNING, holding "
                        f"{len(partitions)} partitions once each, by their histories",
                   diagnostics=lambda: self.stuck_diagnostics(problems),
                   abort=lambda: runner_exit(watched))

    def _broker_names(self, view: GroupView, live: dict[str, Member]) -> dict[str, str]:
        """The fleet's name of each member the broker lists (``fleet_names``), by what the live members' histories
        reported up to now (the broker member ids the user's programs joined with) and their instance ids."""
        for m in live.values():  # read each history up to now: the broker member ids they reported
            self._ownership.owned(m.config.history_path)
        reported = {self._ownership.kafka_member_id(m.config.history_path): name for name, m in live.items()}
        return fleet_names(view, {m.config.group_instance_id: m.member_id
                                  for m in live.values() if m.config.group_instance_id},
                           {k: v for k, v in reported.items() if k})

    def stuck_diagnostics(self, problems: list[str]) -> str:
        """A stable wait's diagnostics: what it found wanting, where each Streams instance not RUNNING stands and
        where each live member the broker does not list waits, then the group and each member's log tail (read
        first: a thread dump asked after would fill the tails)."""
        tails = self.diagnostics()
        return "\n".join([*problems, *self.streams_accounts(), *self.absent_accounts(), tails])

    def absent_accounts(self) -> list[str]:
        """For each live member of a consumer group that the broker does not list in it: that it is missing, and
        where its client's threads stand (a thread dump asked now). A member whose client hangs (its heartbeats
        stop, the coordinator drops it) says what it waits on, not only that the group lacks it. The user's
        programs among them are kept (``programs_left_out``): a run that ends on this wait reports them as its
        finding."""
        live = {m.member_id: m for m in self.live()}
        # the admin API lists no member of a streams group: a team's Streams program may have chosen that protocol
        if self.stable_wait != "group" or any(self._streams_states.on_streams_protocol(m.config.history_path)
                                              for m in live.values()):
            return []
        try:
            view = self.describe()
        except Exception:  # noqa: BLE001 - the group's own line in the diagnostics says why it is not describable
            return []
        listed = set(self._broker_names(view, live).values())
        # a Streams instance not RUNNING has its own account (streams_accounts)
        absent = [(name, member) for name, member in live.items() if name not in listed
                  and self._streams_states.state(member.config.history_path) in (None, "RUNNING")]
        self.programs_left_out = [self._named.get(name, name) for name, m in absent if m.config.spec.is_command]
        lines, dumped = [], 0
        for name, member in absent:
            lines.append(f"{name}: its process is alive, but the broker does not list it in the group")
            if dumped < STACKS_AT_MOST:  # each dump may take seconds: a large stuck group gets the first few
                dumped += 1
                lines += indented(client_stacks(member))
        return lines

    def streams_accounts(self) -> list[str]:
        """For each live Streams instance not RUNNING by its history: where it is (its state and since when, its
        tasks, its open restorations) and where its stream threads stand (a thread dump asked now): what a wait
        that timed out on it can say of why."""
        now, lines, dumped = now_ms(), [], 0
        for member in self.live():
            path = member.config.history_path
            if self._streams_states.state(path) in (None, "RUNNING"):
                continue
            lines.append(f"{member.member_id}: {self._streams_states.account(path, now)}")
            if status := last_group_status(member.log_tail(STATUS_LOG_LINES)):
                lines.append(f"    the streams group's last status to it: {status}")
            if dumped < STACKS_AT_MOST:  # each dump may take seconds: a large stuck group gets the first few
                dumped += 1
                lines += indented(stacks_now(member, stream_threads))
        return lines

    def _streams_stable(self, expected: int, partitions: set[TopicPartition],
                        problems: list[str]) -> Callable[[], bool]:
        """The check of a Streams group on the streams protocol (``wait_streams_stable``), by the histories alone;
        ``problems`` holds what it found wanting."""
        def check() -> bool:
            live = {m.member_id: m for m in self.live()}
            states = {name: self._streams_states.state(m.config.history_path) for name, m in live.items()}
            held = {name: self._ownership.owned(m.config.history_path) for name, m in live.items()}
            problems[:] = not_running(states, unknown="not started")
            problems.extend(held_once(held, partitions))
            if len(partitions) >= len(live) and (idle := sorted(n for n, owned in held.items() if not owned)):
                problems.append(f"instances holding nothing yet: {', '.join(idle)}")
            if len(live) < expected:
                problems.append(f"{len(live)} live instances, {expected} expected")
            return not problems

        return check

    def wait_share_active(self, members: int | None = None, timeout_s: float = 120.0) -> None:
        """Wait until every live share member (at least ``members`` of them, if given) acquired records after this
        wait began: each is in the group and being lent records. Needs records flowing (a load); a share group
        has no assignment the broker and the members could agree on (testbed.fleet.share).

        Ends at once (WaitAborted) when a member process that was live at the start exits."""
        watched = self.live()
        expected = len(watched) if members is None else members
        since = now_ms()
        idle: list[str] = []

        def check() -> bool:
            live = self.live()
            idle[:] = [p.member_id for p in live
                       if (self._share_activity.last_acquired_ms(p.config.history_path) or 0) < since]
            return len(live) - len(idle) >= expected and not idle

        wait_until(check, timeout_s=timeout_s, interval_s=0.5,
                   what=f"share group {self.group_id}: {expected} live members each acquiring records",
                   diagnostics=lambda: "\n".join([f"no acquisition since the wait began: {', '.join(idle) or '-'}",
                                                   self.diagnostics()]),
                   abort=lambda: runner_exit(watched))

    def diagnostics(self) -> str:
        lines = []
        # A group on the streams protocol is not a consumer group: the consumer-group admin API shows it as an empty
        # DEAD classic group, and says only whether its coordinator answers.
        blind = " (the consumer-group admin API: a streams group is not one of its groups)" \
            if self.stable_wait == "streams" else ""
        try:
            lines.append(self.describe().summary() + blind)
        except Exception as exc:  # noqa: BLE001
            lines.append(f"(group not describable: {exc}){blind}")
        for proc in self.members.values():
            alive = proc.alive()
            tail = " | ".join(proc.log_tail(3))
            lines.append(f"  process {proc.member_id} pid={proc.pid} state={proc.state} alive={alive} "
                         f"exit={proc.exit_code} log: {tail[-400:]}")
            if error := last_client_error(proc.config.history_path):
                lines.append(f"    last client error: {error[:300]}")
        return "\n".join(lines)


def stable_with(view: GroupView, members: int, partitions: set[tuple[str, int]]) -> bool:
    """Stable, exactly ``members`` members, and every partition owned by exactly one of them."""
    if view.state != "STABLE" or len(view.members) != members:
        return False
    owners = view.owners()
    return set(owners) == partitions and all(len(o) == 1 for o in owners.values())


def runner_exit(members: list[Member]) -> str | None:
    """How the first of testbed's own runners among ``members`` that is no longer alive ended (a wait's reason
    to give up: testbed's defect); a user's program that ended is a member leaving, not a reason."""
    return first_exit([m for m in members if not m.config.spec.is_command])


def first_exit(members: list[Member]) -> str | None:
    """How the first of ``members`` that is no longer alive ended, with its log's last lines; None if all live."""
    for proc in members:
        if not proc.alive() and proc.ended_how is not None:
            tail = "\n    ".join(proc.log_tail(15)) or "(empty)"
            return (f"member {proc.member_id} (pid {proc.pid}) exited: {proc.ended_how}; "
                    f"last lines of {proc.config.log_path}:\n    {tail}")
    return None
