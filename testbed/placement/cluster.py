"""A run's members on a Ray cluster: connect, check the placements against the cluster's nodes before anything
starts, put one ``NodeHost`` on each node that gets members, and bring their files and exits back while the run goes.

``RayPlacer.connect(address)``, ``check(entries)`` and ``prepare(entries, specs)`` refuse what cannot work (nothing
answering at the address, a placement that names no node or label the cluster has, a node whose testbed differs or
that cannot build a spec's client);
``begin(run_dir, harness)`` measures each node's clock and starts the pump that hands the nodes' files and exits
over every ``SYNC_INTERVAL_S``; ``close()`` measures the clocks again, takes the last files and ends every actor.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, TestbedError
from ..history.events import Action
from ..fleet.exits import ExitCallback
from ..history.harness import HarnessLog
from ..members.config import MemberConfig
from ..members.spec import MemberSpec
from ..run.layout import RunDir
from ..run.revision import testbed_revision
from .clocks import measure_offset
from .model import LabelPlacement, NodePlacement, Placement, describe
from .placed import PlacedHost, PlacedMember
from .workers import NodeWorkers, RemoteProcess

log = logging.getLogger(__name__)

# Ray replaces a loopback address by the machine's own one, then talks to that (ray._private.services
# resolve_ip_for_localhost) unless multi-node clusters count as unsupported here; everything testbed sends stays
# on loopback, so a cluster at a loopback address is reached with this set (its nodes were started with it).
LOOPBACK_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
SYNC_INTERVAL_S = 0.2  # how often the nodes' new history lines reach the run directory (the waits read them)
CALL_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 5.0


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"ray_address: host:port of the cluster's head (its GCS port, 6379 by default), "
                          f"got {address!r}")
    return host, int(port)


# A Ray driver replaces the process's fatal-signal handlers with Ray's, which write a crash's stack to Ray's session
# logs and nothing to stderr: after a run placed members once, a crash in C code of that process (a pytest worker's,
# where such runs are tests) ended it without a word. Python's faulthandler keeps them; a user's setting wins.
KEEP_SIGNAL_HANDLERS_ENV = "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"


def import_ray(host: str) -> Any:
    """Ray, imported for a driver of a cluster whose head is at ``host`` (the first import reads the settings above)."""
    if is_loopback(host):
        os.environ.setdefault(LOOPBACK_ENV, "0")
    os.environ.setdefault(KEEP_SIGNAL_HANDLERS_ENV, "1")
    import ray

    return ray


@dataclass(frozen=True)
class PlacedEntry:
    """A part of a scenario that starts members (a fleet entry, a scale-out): its field path and placement."""

    where: str
    placement: Placement


@dataclass
class NodeInfo:
    node_id: str
    address: str
    hostname: str
    labels: dict[str, str]

    @property
    def name(self) -> str:
        """How runs name it: its host and the start of its id (nodes of one machine share the host)."""
        return f"{self.hostname}/{self.node_id[:8]}"

    def matches(self, placement: Placement) -> bool:
        if isinstance(placement, NodePlacement):
            wanted = placement.node
            return wanted in (self.address, self.hostname, self.name) or (len(wanted) >= 6 and
                                                                          self.node_id.startswith(wanted))
        if isinstance(placement, LabelPlacement):
            return all(self.labels.get(k) == v for k, v in placement.labels.items())
        return True


@dataclass
class Node:
    """One node's ``NodeHost`` as this run holds it."""

    info: NodeInfo
    actor: Any
    ray: Any = field(repr=False)
    placer: RayPlacer = field(repr=False)
    members: list[PlacedMember] = field(default_factory=list)
    processes: list[RemoteProcess] = field(default_factory=list)  # the load's workers here
    lost: str | None = None
    folder: str | None = None  # where its NodeHost keeps the members' files during the run
    offset_ms: float | None = None  # its clock minus the driver's, as measured at the start
    _sync: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def name(self) -> str:
        return self.info.name

    @property
    def driver_root(self) -> Path:
        return self.placer.driver_root

    def call(self, method: str, *args: Any, timeout_s: float = CALL_TIMEOUT_S) -> Any:
        """``method`` of the node's NodeHost, waited for; a node gone meanwhile is recorded as lost (its members
        with it) and the call answers None."""
        if self.lost is not None:
            if method == "start":
                raise TestbedError(f"node {self.name} is lost ({self.lost}): no member starts there")
            return None
        try:
            return self.ray.get(getattr(self.actor, method).remote(*args), timeout=timeout_s)
        except self.ray.exceptions.RayTaskError as exc:  # the method itself failed there: its own error, briefly
            cause = getattr(exc, "cause", None) or exc
            raise TestbedError(f"node {self.name}: {method} failed: {type(cause).__name__}: {cause}") from None
        except self.ray.exceptions.RayActorError as exc:
            self.placer.node_lost(self, f"{type(exc).__name__}: {str(exc).splitlines()[0]}")
            if method == "start":
                raise TestbedError(f"node {self.name} was lost while a member started there") from exc
            return None

    def iptables(self, *args: str) -> None:
        """A network cut's rule on this node (``testbed.faults.network.RuleTable``)."""
        self.call("iptables", *args)

    def sync(self, method: str = "collect") -> None:
        """The node's new file bytes into the run directory, then its members' ends (whole files first);
        ``method`` "close": the last ones, the NodeHost ending its members and removing its files."""
        with self._sync:
            answer = self.call(method)
            if answer is None:
                return
            for relative, offset, data in answer["files"]:
                write_at(self.driver_root / relative, offset, data)
            by_id = {mem.member_id: mem for mem in self.members}
            for member_id, detail in answer["exits"]:
                if member_id in by_id:
                    by_id[member_id].ended(detail)


def write_at(path: Path, offset: int, data: bytes) -> None:
    """``data`` into ``path`` at ``offset``; a file sent from 0 again was written anew on its node: cut it there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        if offset == 0:
            os.ftruncate(fd, 0)
        os.pwrite(fd, data, offset)
    finally:
        os.close(fd)


def reachable(host: str, port: int) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return str(exc)


class RayPlacer:
    """The cluster one run places its members on (see the module's docstring)."""

    def __init__(self, address: str, ray: Any, nodes: list[NodeInfo], owns_connection: bool) -> None:
        self.address = address
        self.ray = ray
        self.nodes = nodes
        self.run_id = uuid.uuid4().hex[:12]
        self.hosts: dict[str, Node] = {}  # node id -> its NodeHost, for the nodes that get members
        self._slot_nodes: dict[int, Node] = {}  # the node of each fleet slot's member
        self.harness: HarnessLog | None = None
        self._driver_root: Path | None = None
        self._owns_connection = owns_connection
        self._stop = threading.Event()
        self._closed = False
        self._pump: threading.Thread | None = None
        self._lock = threading.Lock()

    # ---- before the run ----------------------------------------------------------------------

    @classmethod
    def connect(cls, address: str) -> RayPlacer:
        host, port = split_address(address)
        if why := reachable(host, port):
            raise ConfigError(f"ray_address: nothing answers at {host}:{port} ({why}); give the address of a Ray "
                              f"cluster's head (`ray start --head` prints it)")
        ray = import_ray(host)
        owns = not ray.is_initialized()
        if owns:
            try:
                ray.init(address=f"{host}:{port}", namespace="testbed", log_to_driver=False,
                         logging_level=logging.WARNING, configure_logging=False)
            except Exception as exc:  # noqa: BLE001 - whatever Ray says, the address is the user's to fix
                raise ConfigError(f"ray_address: {host}:{port} answers but Ray could not join it as a cluster "
                                  f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})") from None
        nodes = [NodeInfo(n["NodeID"], n["NodeManagerAddress"], n.get("NodeManagerHostname", n["NodeManagerAddress"]),
                          {k: v for k, v in (n.get("Labels") or {}).items() if not k.startswith("ray.io/")})
                 for n in ray.nodes() if n.get("Alive")]
        return cls(address, ray, sorted(nodes, key=lambda n: n.name), owns)

    def check(self, entries: list[PlacedEntry], *, brokers_on_loopback: bool) -> None:
        """Refuse, naming the field, a placement no node of the cluster answers, and what cannot run on a node."""
        for entry in entries:
            if not self.candidates(entry.placement):
                raise ConfigError(f"{entry.where}.placement: no node of the Ray cluster at {self.address} matches "
                                  f"{describe(entry.placement)}; its nodes: {self.describe_nodes()}")
            far = [n for n in self.candidates(entry.placement) if not is_loopback(n.address)]
            if brokers_on_loopback and far:
                raise ConfigError(f"{entry.where}.placement: the brokers testbed starts listen on this machine's "
                                  f"loopback, which node {far[0].name} at {far[0].address} cannot reach: run against "
                                  "brokers every node reaches (cluster.bootstrap_servers, docs/placement.md)")

    def describe_nodes(self) -> str:
        return "; ".join(f"{n.name} at {n.address} labels {n.labels or '{}'}" for n in self.nodes)

    def candidates(self, placement: Placement) -> list[NodeInfo]:
        return [n for n in self.nodes if n.matches(placement)]

    def prepare(self, entries: list[PlacedEntry], specs: list[MemberSpec], *, member_cut: str | None = None) -> None:
        """A NodeHost on every node a member may be placed on, its testbed checked against this one's, and every
        spec readied there (client installs built, programs checked), the nodes side by side; ``member_cut``: the
        field of a step that cuts a member off the network, which needs root and iptables on each node."""
        nodes = {n.node_id: n for entry in entries for n in self.candidates(entry.placement)}
        hosts = [self._host(n) for n in nodes.values()]
        asked = [h.actor.describe.remote() for h in hosts]  # side by side: each node's actor starts at once
        ours = testbed_revision()
        for host, answer in zip(hosts, asked):
            try:
                seen = self.ray.get(answer, timeout=CALL_TIMEOUT_S)
            except self.ray.exceptions.RayError as exc:  # the actor died starting, or never answered
                first = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                raise ConfigError(f"ray_address: testbed's NodeHost did not start on node {host.name} ({first}): "
                                  "is testbed installed in the Python that runs `ray start` there?") from None
            host.folder = seen["folder"]
            if seen["testbed_revision"] != ours:
                raise ConfigError(f"ray_address: node {host.name} runs testbed {seen['testbed_revision']}, this run "
                                  f"{ours}: install the same testbed in the Python that runs `ray start` on each node")
            if member_cut and not (seen["is_root"] and seen["iptables"]):
                raise ConfigError(f"{member_cut}: node {host.name} cannot cut a member off the network: "
                                  f"{'iptables is missing' if seen['is_root'] else 'Ray runs there without root'}"
                                  " (a member cut is an iptables rule on the member's node)")
        answers = self.ray.get([h.actor.prepare.remote(spec.model_dump_json()) for h in hosts for spec in specs],
                               timeout=3600)
        for (host, spec), problem in zip([(h, s) for h in hosts for s in specs], answers):
            if problem is not None:
                raise ConfigError(f"members.{spec.name}: cannot run on node {host.name}: {problem}")

    def _host(self, info: NodeInfo) -> Node:
        with self._lock:
            if info.node_id not in self.hosts:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                from .node_host import NodeHost

                actor = self.ray.remote(NodeHost).options(
                    num_cpus=0, max_concurrency=64, name=f"testbed-{self.run_id}-{info.node_id[:8]}",
                    scheduling_strategy=NodeAffinitySchedulingStrategy(info.node_id, soft=False),
                ).remote(self.run_id)
                self.hosts[info.node_id] = Node(info, actor, self.ray, self)
            return self.hosts[info.node_id]

    # ---- during the run ----------------------------------------------------------------------

    @property
    def driver_root(self) -> Path:
        if self._driver_root is None:
            raise TestbedError("RayPlacer.begin() was not called")
        return self._driver_root

    def begin(self, run_dir: RunDir, harness: HarnessLog) -> None:
        self._driver_root, self.harness = run_dir.root, harness
        self._record_clocks("start")
        self._pump = threading.Thread(target=self._pump_files, name="ray-placement-pump", daemon=True)
        self._pump.start()

    def choose(self, placement: Placement) -> Node:
        """The node for a new member or load worker: of the nodes ``placement`` allows and not lost, the one with the
        fewest live members and workers (spread)."""
        nodes = [self._host(n) for n in self.candidates(placement)]
        nodes = [n for n in nodes if n.lost is None]
        if not nodes:
            raise TestbedError(f"no node left for {describe(placement)}: every one that matches was lost")
        return min(nodes, key=lambda n: sum(1 for mem in n.members if mem.alive())
                   + sum(1 for p in n.processes if p.returncode is None))

    def workers(self, placement: Placement) -> NodeWorkers:
        """Where a load's Locust workers run (``testbed.load.generator.WorkerHosts``)."""
        return NodeWorkers(self, placement)

    def new_member(self, config: MemberConfig, config_path: Path, on_exit: ExitCallback, *, gid: int | None,
                   placement: object, host: object = None) -> PlacedMember:
        """The fleet's member in ``config``'s slot: in ``host`` (a ``PlacedHost``), on its node; else on the slot's
        node again while it answers and fits ``placement`` (a bounce or a restart comes back where its slot ran),
        else on the node ``choose`` gives."""
        if host is not None:
            if not isinstance(host, PlacedHost):
                raise TestbedError(f"a placed member's host must be a PlacedHost, got {host!r}")
            node = self._slot_nodes[config.slot] = host.node  # type: ignore[assignment]
            gid = host.gid
        else:
            wanted = self._placement(placement)
            node = self._slot_nodes.get(config.slot)
            if node is None or node.lost is not None or not node.info.matches(wanted):
                node = self._slot_nodes[config.slot] = self.choose(wanted)
        member = PlacedMember(config, config_path, node, on_exit, gid=gid, host=host)
        node.members.append(member)
        return member

    def new_host(self, name: str, spec: MemberSpec, log_path: Path, *, gid: int | None,
                 placement: object) -> PlacedHost:
        """A started, empty member host on the node ``choose`` gives for ``placement``: its members go with it."""
        host = PlacedHost(name, self.choose(self._placement(placement)), log_path, gid)
        host.start(spec.model_dump_json())
        return host

    @staticmethod
    def _placement(placement: object) -> Placement:
        if not isinstance(placement, (str, NodePlacement, LabelPlacement)):
            raise TestbedError(f"placement must be spread, a NodePlacement or a LabelPlacement, got {placement!r}")
        return placement

    def node_lost(self, node: Node, reason: str) -> None:
        """Recorded once; its members end as lost (their files as far as they came)."""
        with self._lock:
            if node.lost is not None:
                return
            node.lost = reason
        log.error("node %s of the Ray cluster lost: %s", node.name, reason)
        if self.harness is not None:
            self.harness.record(Action.NODE_LOST, node.name, reason=reason,
                                members=[mem.member_id for mem in node.members if mem.alive()])
        for mem in node.members:
            if mem.alive():
                mem.ended({"exit_code": None, "signal": None, "cause": "exited", "requested": False, "pid": mem.pid,
                           "node_lost": True})

    def _pump_files(self) -> None:
        while not self._stop.wait(SYNC_INTERVAL_S):
            for node in list(self.hosts.values()):
                try:
                    node.sync()
                except Exception as exc:  # noqa: BLE001 - the next round tries again
                    log.warning("handing over the files of node %s failed: %s", node.name, exc)

    def _record_clocks(self, moment: str) -> None:
        for node in list(self.hosts.values()):
            self._record_clock(node, moment)

    def _record_clock(self, node: Node, moment: str) -> None:
        if node.lost is not None or self.harness is None:
            return
        try:
            offset = measure_offset(lambda: node.call("clock"))
        except (TypeError, TestbedError):  # lost meanwhile: call answered None
            return
        if moment == "start":
            node.offset_ms = offset.offset_ms
        self.harness.record(Action.NODE_CLOCK, node.name, moment=moment, node_id=node.info.node_id,
                            address=node.info.address, folder=node.folder, **offset.detail())

    def clock_correction_ms(self, node: Node) -> int:
        """What a producer on ``node`` adds to its clock to stamp by the driver's (its offset negated, whole ms); the
        offset measured now if the run's start did not (a node that only gets load workers)."""
        if node.offset_ms is None:
            self._record_clock(node, "start")
        return -round(node.offset_ms or 0.0)

    def master_address(self, placement: Placement) -> str:
        """Where the load's Locust master listens: loopback when every node ``placement`` allows is on this machine,
        else this machine's address as the cluster knows it (the one its nodes reach the driver at)."""
        if all(is_loopback(n.address) for n in self.candidates(placement)):
            return "127.0.0.1"
        return str(self.ray.util.get_node_ip_address())

    # ---- after the run -----------------------------------------------------------------------

    def close(self) -> None:
        """Clocks again, the last files and exits, every NodeHost ended; disconnects if it connected. Once."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._pump is not None:
            self._pump.join(CALL_TIMEOUT_S)
        try:
            if self._driver_root is not None:
                self._record_clocks("end")
            for node in list(self.hosts.values()):
                if self._driver_root is not None:
                    node.sync("close")
                try:
                    self.ray.kill(node.actor)
                except Exception:  # noqa: BLE001 - gone already
                    pass
        finally:
            self.hosts.clear()
            if self._owns_connection and self.ray.is_initialized():
                self.ray.shutdown()
