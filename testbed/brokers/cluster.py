"""KafkaCluster: 1 or 3 KRaft brokers in containers on host networking, bound to 127.0.0.1.

A service in the sense of docs/design.md: a context manager that owns the brokers' lifecycle, cleans up
after a failed start, and offers the broker faults that scenarios drive (stop, kill, pause,
restart, rolling restart, version upgrade). Every node is a combined broker and controller with a
static quorum, so 1 and 3 nodes start the same way. A node's data (KRaft metadata and logs) lives in
a Docker volume of its own, so that a container of another Kafka version can take over the node.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
from testcontainers.core.container import DockerContainer  # noqa: E402 - needs the env above

from ..admin.group_probe import GroupProbe  # noqa: E402
from ..admin.kafka_admin import KafkaAdmin  # noqa: E402
from ..children import free_ports  # noqa: E402
from ..errors import ConfigError, WaitTimeout  # noqa: E402
from ..faults.proxies import ClientProxies  # noqa: E402
from ..history.broker_log import STALL_PHRASES  # noqa: E402
from ..history.events import Action, HarnessAction  # noqa: E402
from ..run.layout import PROXY_LOG_NAME, WATCHDOG_LOG_NAME, broker_log_name  # noqa: E402
from ..service import Service  # noqa: E402
from ..settings import settings  # noqa: E402
from ..waits import wait_until  # noqa: E402
from .engine import broker_cpu_options, ensure_engine  # noqa: E402
from .features import finalized_levels, raise_levels  # noqa: E402
from .images import ensure_kafka_image  # noqa: E402
from .producer_ids import ProducerIdWarmUp  # noqa: E402
from .reaper import create_volume, owner_labels, reap_leftovers, remove_volume  # noqa: E402
from .watchdog import Watchdog  # noqa: E402

log = logging.getLogger(__name__)

ALLOWED_BROKER_COUNTS = (1, 3)
BrokerState = Literal["running", "stopped", "paused"]
ActionRecorder = Callable[[HarnessAction], None]
DATA_DIR = "/var/lib/kafka/data"  # the entry script's log.dirs
LOG_CONFIG = "/opt/kafka/config/log4j2.xml"  # the image's log4j2 configuration (recipes/kafka/log4j2.xml)
LogLevel = Literal["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF"]
LOG_LEVELS: tuple[str, ...] = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF")
_LOGGER_NAME = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$.]*$")


def broker_log_config(base: str, levels: dict[str, str]) -> str:
    """The image's log4j2 XML with ``levels`` (logger name -> level) set: a logger the file names gets its level
    replaced, any other is added before the root logger. Refuses a name that is not a Java logger name and a level
    log4j does not know, so a typo cannot silently log nothing."""
    out = base
    for name, level in sorted(levels.items()):
        if not _LOGGER_NAME.match(name):
            raise ConfigError(f"broker log level: {name!r} is not a logger name (e.g. kafka.server.share.SharePartition)")
        if level not in LOG_LEVELS:
            raise ConfigError(f"broker log level of {name}: {level!r} is not one of {', '.join(LOG_LEVELS)}")
        line = f'<Logger name="{name}" level="{level}"/>'
        existing = re.compile(rf'<Logger name="{re.escape(name)}" level="[A-Z]+"/>')
        if existing.search(out):
            out = existing.sub(line, out)
        else:
            out = out.replace("<Root ", f"{line}\n    <Root ", 1)
    return out


def rebalance_defaults(brokers: int) -> dict[str, str]:
    """Broker settings suited to rebalance experiments; any of them can be overridden."""
    rf = str(min(3, brokers))
    return {
        # Start rebalancing at once: the default 3 s delay would hide join timing from the measurements.
        "group.initial.rebalance.delay.ms": "0",
        "offsets.topic.replication.factor": rf,
        # Fewer offsets partitions make the first group coordinator lookup fast on 2 cores.
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": rf,
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "min.insync.replicas": str(min(2, brokers)),
        # Topics that clients create (Kafka Streams' changelogs and repartition topics, replication.factor -1 by
        # default; auto-created topics) get the replication the cluster can give, as a production cluster's
        # settings would: with Kafka's default of 1, a changelog lives on one broker and a kill of that broker
        # loses it (an unclean leader election when it returns), which no real deployment has.
        "default.replication.factor": rf,
        "num.partitions": "1",
        # Share groups (KIP-932; served from Kafka 4.2, ignored by older brokers): their state topic must fit the
        # cluster (3 replicas by default), and short scenarios need locks and sessions shorter than the brokers'
        # floors (15 s lock, 45 s session, 5 s heartbeat). A group's own values are set per run on the group.
        "share.coordinator.state.topic.replication.factor": rf,
        "share.coordinator.state.topic.min.isr": str(min(2, brokers)),
        "share.coordinator.state.topic.num.partitions": "10",
        "group.share.min.record.lock.duration.ms": "1000",
        "group.share.min.session.timeout.ms": "6000",
        "group.share.min.heartbeat.interval.ms": "1000",
        # Kafka Streams groups on the streams protocol (KIP-1071, from 4.2): the same floors (45 s, 5 s), lowered
        # for a group's own streams.session.timeout.ms and streams.heartbeat.interval.ms (scenario streams_group).
        "group.streams.min.session.timeout.ms": "6000",
        "group.streams.min.heartbeat.interval.ms": "1000",
    }


def new_cluster_id() -> str:
    """A KRaft cluster id; never starting with '-', which the storage tool would read as an option."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if cid[0] != "-":
            return cid


def first_error(log_lines: list[str]) -> list[str]:
    """A broker log's first ERROR line and the line after it (a Kafka error's exception message); [] if none."""
    for i, line in enumerate(log_lines):
        if " ERROR " in line or " FATAL " in line:
            return log_lines[i:i + 2]
    return []


@dataclass
class Broker:
    node_id: int
    port: int
    controller_port: int
    version: str
    volume: str  # the Docker volume holding its data directory
    state: BrokerState = "stopped"
    earlier_logs: list[str] = field(default_factory=list)  # of the containers an upgrade replaced
    internal_port: int | None = None  # with client proxies: the listener brokers replicate over
    proxy_port: int | None = None  # with client proxies: the port it advertises to clients, its proxy's
    container: DockerContainer = field(init=False, repr=False)  # the current one; an upgrade replaces it

    @property
    def client_port(self) -> int:
        """The port clients reach it on: its proxy's, when it has one."""
        return self.proxy_port or self.port

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def ports(self) -> tuple[int, ...]:
        """Every port of the node: its listeners' and its proxy's."""
        return tuple(p for p in (self.port, self.controller_port, self.internal_port, self.proxy_port) if p)

    def logs(self) -> str:
        """The node's whole log: of the containers an upgrade replaced, then of the current one."""
        return "".join(self.earlier_logs) + self.container_logs()

    def container_logs(self) -> str:
        wrapped = self.container.get_wrapped_container()
        return wrapped.logs().decode(errors="replace") if wrapped is not None else ""

    def log_tail(self, lines: int = 15) -> str:
        """The log's last lines, after its first error and the line that follows it (the exception's message): a
        broker that failed its start logs the cause first and then a shutdown's worth of lines and stack frames,
        which a tail alone keeps (seen: a bind failure shown as 15 lines of its stack)."""
        try:
            log_lines = self.logs().splitlines()
        except Exception as exc:  # noqa: BLE001 - a tail is diagnostics; never hide the error it explains
            return f"(no log: {exc})"
        tail = log_lines[-lines:]
        first = first_error(log_lines)
        if first and not set(first) <= set(tail):
            tail = [*first, "..."] + tail
        return "\n    ".join(tail)

    def stall_lines_since(self, since_s: float) -> list[str]:
        """The current container's log lines since ``since_s`` (epoch seconds) that say the broker stalled."""
        wrapped = self.container.get_wrapped_container()
        if wrapped is None:
            return []
        text = wrapped.logs(since=int(since_s)).decode(errors="replace")
        return [line for line in text.splitlines() if any(phrase in line for phrase in STALL_PHRASES)]

    def docker_state(self) -> dict[str, object]:
        """Docker's own view of the container (``State``: Status, ExitCode, Error, OOMKilled, ...), fresh."""
        wrapped = self.container.get_wrapped_container()
        if wrapped is None:
            return {"Status": "not created"}
        wrapped.reload()
        return dict(wrapped.attrs.get("State", {}))


@dataclass
class KafkaCluster(Service):
    """``with KafkaCluster(brokers=3) as cluster: cluster.bootstrap_servers``."""

    brokers: int = 1
    kafka_version: str | None = None
    broker_settings: dict[str, str] = field(default_factory=dict)
    log_dir: Path | None = None
    startup_timeout_s: float = 120.0
    recorder: ActionRecorder | None = None
    host: str = "127.0.0.1"
    client_proxies: bool = False  # a Toxiproxy in front of every broker's clients (for latency)
    log_levels: dict[str, str] = field(default_factory=dict)  # logger -> level, e.g. {"kafka.request.logger": "DEBUG"}

    def __post_init__(self) -> None:
        if self.brokers not in ALLOWED_BROKER_COUNTS:
            raise ConfigError(f"brokers must be one of {ALLOWED_BROKER_COUNTS}, got {self.brokers!r}")
        if not self.host.startswith("127."):
            raise ConfigError(f"host must be a loopback address (127.x), got {self.host!r}")
        self.kafka_version = self.kafka_version or settings().kafka_version
        self.nodes: list[Broker] = []
        self._admin: KafkaAdmin | None = None
        self._proxies: ClientProxies | None = None
        self._watchdog: Watchdog | None = None
        self._log_config: Path | None = None
        self._producer_ids: ProducerIdWarmUp | None = None
        if self.log_levels:
            broker_log_config("<Root ", self.log_levels)  # refuses a bad name or level before anything starts

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        ensure_engine()
        reaped = reap_leftovers()
        if reaped:
            log.warning("reaped what an earlier run left: %s", ", ".join(reaped))
        # Before the first volume: should this process die, even by kill -9, the watchdog removes what it started.
        self._watchdog = Watchdog.start((self.log_dir or settings().cache_dir) / WATCHDOG_LOG_NAME)
        image = ensure_kafka_image(self.kafka_version)
        per_node = 4 if self.client_proxies else 2  # client, controller (, inter-broker, proxy)
        ports = free_ports(per_node * self.brokers + 1, self.host)
        if self.client_proxies:
            self._proxies = ClientProxies(ports[-1], self.log_dir / PROXY_LOG_NAME if self.log_dir else None)
            self._proxies.start()
        self._cluster_id = new_cluster_id()
        if self.log_levels:
            self._log_config = self._write_log_config()
        self._voters = ",".join(f"{i + 1}@{self.host}:{ports[per_node * i + 1]}" for i in range(self.brokers))
        volume_prefix = f"testbed-data-{uuid.uuid4().hex[:10]}"
        for i in range(self.brokers):
            own = ports[per_node * i:per_node * (i + 1)]
            internal, proxy = (own[2], own[3]) if self.client_proxies else (None, None)
            node = Broker(i + 1, own[0], own[1], self.kafka_version, create_volume(f"{volume_prefix}-{i + 1}"),
                          internal_port=internal, proxy_port=proxy)
            node.container = self._container(node, image)
            self.nodes.append(node)
            if self._proxies is not None and proxy is not None:
                self._proxies.add(f"broker-{node.node_id}", proxy, node.port)
        for node in self.nodes:
            node.container.start()
            node.state = "running"
        self.wait_ready(coordinators=True)
        self._watchdog.ready()  # started before the first volume, awaited only now: its start ran beside theirs
        # Beside what the caller starts next (topics, members): the brokers' first producer ids, which the load's
        # first acknowledgement would otherwise wait half a second for.
        self._producer_ids = ProducerIdWarmUp([n.address for n in self.nodes]).start()

    def _container(self, node: Broker, image: str) -> DockerContainer:
        """The node's container of ``image``, on the node's ports and data volume."""
        overrides = {**rebalance_defaults(self.brokers), **self.broker_settings}
        container = (
            DockerContainer(image)
            .with_env("KAFKA_NODE_ID", str(node.node_id))
            .with_env("KAFKA_CLUSTER_ID", self._cluster_id)
            .with_env("KAFKA_HOST", self.host)
            .with_env("KAFKA_PORT", str(node.port))
            .with_env("KAFKA_ADVERTISED_PORT", str(node.client_port))
            .with_env("KAFKA_CONTROLLER_PORT", str(node.controller_port))
            .with_env("KAFKA_QUORUM_VOTERS", self._voters)
            .with_volume_mapping(node.volume, DATA_DIR, "rw")
            .with_command([f"{k}={v}" for k, v in overrides.items()])
            .with_kwargs(network_mode="host", labels=owner_labels("broker"), stop_signal="SIGTERM",
                         **broker_cpu_options())
        )
        if node.internal_port is not None:
            container.with_env("KAFKA_INTERNAL_PORT", str(node.internal_port))
        if java_opts := settings().broker_java_opts:
            container.with_env("KAFKA_JVM_OPTS", java_opts)
        if self._log_config is not None:
            container.with_volume_mapping(str(self._log_config), LOG_CONFIG, "ro")
        return container

    def _write_log_config(self) -> Path:
        """The image's log4j2 configuration with this cluster's ``log_levels``, in a file of its own that every
        node's container mounts over the image's (read at the JVM's start; removed at close)."""
        base = (settings().docker_dir / "kafka" / "log4j2.xml").read_text()
        fd, name = tempfile.mkstemp(prefix="testbed-broker-log4j2-", suffix=".xml")
        with os.fdopen(fd, "w") as f:
            f.write(broker_log_config(base, self.log_levels))
        os.chmod(name, 0o644)
        return Path(name)

    def close(self) -> None:
        """Copy every broker's log (when a log_dir is set), then remove every container and data volume."""
        self._remove(self._copy_logs_for_close())

    def close_beside(self) -> threading.Thread:
        """``close`` with only the logs copied before it returns; the containers, volumes and watchdog are removed
        on the thread it returns (started: join it). What comes next (a run's analysis, which reads the copies)
        need not wait for the engine's removals."""
        errors = self._copy_logs_for_close()
        removal = threading.Thread(target=self._remove, args=(errors,), name="cluster removal")
        removal.start()
        return removal

    def _copy_logs_for_close(self) -> list[str]:
        errors: list[str] = []
        if self._producer_ids is not None:  # its producers end before their brokers do
            self._producer_ids.stop()
            self._producer_ids = None
        if self.log_dir is not None:
            try:
                self.copy_logs(self.log_dir)
            except Exception as exc:  # noqa: BLE001 - removal must still happen
                errors.append(f"copying broker logs: {exc}")
        return errors

    def _remove(self, errors: list[str]) -> None:
        """Every container and data volume removed, then the watchdog released (told to reap what could not be, when
        ``errors`` holds more than the log copies' failures)."""
        copied = len(errors)
        if self._admin is not None:  # while its brokers still answer
            self._admin.close()
            self._admin = None
        for node in self.nodes:
            try:
                node.container.stop(force=True, delete_volume=True)
            except Exception as exc:  # noqa: BLE001 - each teardown step runs independently
                errors.append(f"removing broker {node.node_id}: {exc}")
            try:
                remove_volume(node.volume)
            except Exception as exc:  # noqa: BLE001 - each teardown step runs independently
                errors.append(f"removing broker {node.node_id}'s data volume {node.volume}: {exc}")
        self.nodes = []
        if self._log_config is not None:
            self._log_config.unlink(missing_ok=True)
            self._log_config = None
        if self._proxies is not None:
            self._proxies.close()
            self._proxies = None
        if self._watchdog is not None:  # last: until the containers and volumes are gone, a crash leaves them to it
            try:  # what could not be removed, it reaps when this process ends
                self._watchdog.release(everything_removed=len(errors) == copied)
            except Exception as exc:  # noqa: BLE001 - each teardown step runs independently
                errors.append(f"releasing the watchdog: {exc}")
            self._watchdog = None
        if errors:
            log.error("cluster teardown errors: %s", "; ".join(errors))

    # ---- what clients need -----------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes)

    def admin(self) -> KafkaAdmin:
        """One admin per cluster; its waits end at once when a broker container died."""
        if self._admin is None:
            self._admin = KafkaAdmin(self.bootstrap_servers, replication_factor=min(3, len(self.nodes)),
                                     abort=self.broker_exited, diagnostics=self.diagnostics)
        return self._admin

    def running(self) -> list[Broker]:
        return [n for n in self.nodes if n.state == "running"]

    def node(self, node_id: int) -> Broker:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        raise ConfigError(f"broker id must be one of {[n.node_id for n in self.nodes]}, got {node_id!r}")

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     config: dict[str, str] | None = None, timeout_s: float = 30.0) -> str:
        return self.admin().create_topic(name, partitions, replication_factor, config, timeout_s)

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        self.admin().delete_topic(name, timeout_s)

    # ---- readiness -------------------------------------------------------------------------

    def wait_ready(self, timeout_s: float | None = None, *, coordinators: bool = False) -> None:
        """Ready = an admin client sees every running broker and a topic can be created.

        ``coordinators`` (a new cluster's start): also a group coordinator answers. The first coordinator lookup has
        the brokers make __consumer_offsets (about half a second on one broker), which every group needs: made here
        beside the probe topic rather than after the cluster's start, where the first group would wait for it.
        Asked from a child (``testbed.admin.group_probe``), which ends with the wait: a describe this process's client
        gave up on lives on in librdkafka, and once it met the SIGKILL of a broker seconds later (the next test's
        fault), librdkafka 2.16 aborted the process (``eonce->refcnt > 0``, librdkafka #4605)."""
        expected = {n.node_id for n in self.running()}
        timeout = timeout_s or self.startup_timeout_s
        with contextlib.ExitStack() as children:
            if coordinators:
                group_probe = children.enter_context(contextlib.closing(GroupProbe(self.bootstrap_servers)))
                group_probe.start()  # its imports beside the brokers' start
            wait_until(lambda: expected <= self.admin().broker_ids(), timeout_s=timeout,
                       what=f"brokers {sorted(expected)} in metadata", diagnostics=self.diagnostics,
                       abort=self.broker_exited)
            probe = f"__testbed_ready_{uuid.uuid4().hex[:8]}"
            rf = min(3, len(expected))
            stop = threading.Event()
            with ThreadPoolExecutor(1, thread_name_prefix="offsets-topic") as pool:
                try:
                    coordinator = (pool.submit(self.admin().wait_group_coordinator, probe, timeout_s=timeout, stop=stop,
                                               describe=group_probe.describe) if coordinators else None)
                    wait_until(lambda: self.admin().create_topic(probe, 1, rf, timeout_s=10, exist_ok=True),
                               timeout_s=timeout, what="a probe topic to be created", diagnostics=self.diagnostics,
                               abort=self.broker_exited)
                    if coordinator is not None:
                        coordinator.result()
                finally:
                    stop.set()  # a failed probe topic ends the coordinator's wait at its next poll
        self._delete_probe(probe)

    def _delete_probe(self, probe: str) -> None:
        """A broker that has just (re)joined may not know the probe yet and answers that it does not exist:
        ask again for a while. A probe that stays unknown is left (harmless: no run reads it)."""
        try:
            wait_until(lambda: self.delete_topic(probe, timeout_s=10) or True, timeout_s=20,
                       what=f"the probe topic {probe} to be deleted", interval_s=0.5, abort=self.broker_exited)
        except WaitTimeout as exc:
            log.warning("probe topic left behind: %s", exc)

    def broker_exited(self) -> str | None:
        """Docker's account of the first broker expected to run whose container is not running; None if all run.

        Docker's status, exit code and error and the container's last log lines: what a user needs
        to see why it died (e.g. a broker setting the broker refused).
        """
        for n in self.running():
            state = n.docker_state()
            if state.get("Status") in ("running", "created"):
                continue
            how = f"exit code {state.get('ExitCode')}"
            if state.get("OOMKilled"):
                how += ", killed for lack of memory (OOMKilled)"
            if state.get("Error"):
                how += f", error: {state['Error']}"
            name = n.container.get_wrapped_container().name
            return (f"broker {n.node_id}'s container {name} is {state.get('Status')} ({how}); "
                    f"its last log lines:\n    {n.log_tail()}")
        return None

    def stalls_since(self, since_s: float, at_most: int = 6) -> str | None:
        """What the brokers logged of their stalls since ``since_s`` (epoch seconds), at most ``at_most`` lines a
        broker; None when they logged none. For a failure's report: a test that failed on a stalled cluster."""
        said = []
        for n in self.nodes:
            try:
                lines = n.stall_lines_since(since_s)
            except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the error they explain
                lines = [f"(no log: {exc})"]
            if lines:
                more = f"\n    ... and {len(lines) - at_most} more" if len(lines) > at_most else ""
                said.append(f"broker {n.node_id} ({n.address}), {len(lines)} line(s):\n    "
                            + "\n    ".join(lines[:at_most]) + more)
        return "\n".join(said) or None

    def diagnostics(self) -> str:
        lines = []
        for n in self.nodes:
            try:
                status = n.docker_state().get("Status")
            except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the error they explain
                status = f"unknown: {exc}"
            lines.append(f"broker {n.node_id} (container {status}, {n.address}) last log lines:\n    {n.log_tail()}")
        return "\n".join(lines)

    # ---- broker faults ---------------------------------------------------------------------

    def _record(self, kind: Action, node: Broker, **detail: object) -> None:
        if self.recorder is not None:
            self.recorder(HarnessAction(kind=kind, target=f"broker-{node.node_id}", detail=dict(detail)))

    def stop_broker(self, node_id: int, timeout_s: int = 60, **detail: object) -> None:
        """Clean stop: SIGTERM, controlled shutdown, container kept for a restart."""
        node = self.node(node_id)
        self._record(Action.BROKER_STOP, node, **detail)
        node.container.get_wrapped_container().stop(timeout=timeout_s)
        node.state = "stopped"

    def kill_broker(self, node_id: int, **detail: object) -> None:
        node = self.node(node_id)
        self._record(Action.BROKER_KILL, node, **detail)
        node.container.get_wrapped_container().kill(signal="SIGKILL")
        node.state = "stopped"

    def pause_broker(self, node_id: int, **detail: object) -> None:
        node = self.node(node_id)
        self._record(Action.BROKER_PAUSE, node, **detail)
        node.container.get_wrapped_container().pause()
        node.state = "paused"

    def unpause_broker(self, node_id: int, **detail: object) -> None:
        node = self.node(node_id)
        self._record(Action.BROKER_UNPAUSE, node, **detail)
        node.container.get_wrapped_container().unpause()
        node.state = "running"

    def start_broker(self, node_id: int, wait: bool = True, **detail: object) -> None:
        node = self.node(node_id)
        self._record(Action.BROKER_START, node, **detail)
        node.container.get_wrapped_container().start()
        node.state = "running"
        if wait:
            self.wait_ready()

    def restart_broker(self, node_id: int, hard: bool = False, wait: bool = True, **detail: object) -> None:
        """``detail`` goes into the harness actions (e.g. ``role="coordinator"``)."""
        (self.kill_broker if hard else self.stop_broker)(node_id, **detail)
        self.start_broker(node_id, wait=wait, **detail)

    def rolling_restart(self, hard: bool = False) -> None:
        """Restart each broker in turn, waiting until the cluster is ready again before the next."""
        for node in list(self.nodes):
            self.restart_broker(node.node_id, hard=hard, wait=True)

    def upgrade_broker(self, node_id: int, version: str, stop_timeout_s: int = 60, **detail: object) -> None:
        """Replace one node's container by one of Kafka ``version`` on the same data volume, and wait until
        the cluster is ready again. Recorded as the node's stop and start, with the versions."""
        node = self.node(node_id)
        image = ensure_kafka_image(version)  # built before the run starts; found here
        self.stop_broker(node_id, timeout_s=stop_timeout_s, upgrade_from=node.version, upgrade_to=version, **detail)
        node.earlier_logs.append(node.container_logs())
        node.container.stop(force=True, delete_volume=False)  # removes the container, keeps the data volume
        node.container = self._container(node, image)
        node.version = version
        self._record(Action.BROKER_START, node, version=version, **detail)
        node.container.start()
        node.state = "running"
        self.wait_ready()

    def finalize_features(self, version: str) -> dict[str, object]:
        """Raise the cluster's finalized feature levels (metadata.version, group.version, ...) to the defaults
        of release ``version`` with that release's own tool; recorded with the levels before and after."""
        before = finalized_levels(self.bootstrap_servers, version)
        asked = HarnessAction(kind=Action.FEATURES_UPGRADE, target="cluster", detail={})  # stamped as asked for
        release = raise_levels(self.bootstrap_servers, version)
        change = {"release_version": release, "before": before, "after": finalized_levels(self.bootstrap_servers, version)}
        if self.recorder is not None:
            self.recorder(asked.model_copy(update={"detail": change}))
        return change

    def versions(self) -> dict[int, str]:
        return {n.node_id: n.version for n in self.nodes}

    def add_latency(self, node_id: int, latency_ms: int, jitter_ms: int = 0, **detail: object) -> None:
        """Delay every response of the broker to its clients (not to the other brokers) from now on."""
        node = self.node(node_id)
        self._record(Action.BROKER_LATENCY, node, latency_ms=latency_ms, jitter_ms=jitter_ms, **detail)
        self._proxy_of(node).set_latency(f"broker-{node_id}", latency_ms, jitter_ms)

    def clear_latency(self, node_id: int, **detail: object) -> None:
        node = self.node(node_id)
        self._proxy_of(node).clear_latency(f"broker-{node_id}")
        self._record(Action.BROKER_LATENCY_END, node, **detail)

    def _proxy_of(self, node: Broker) -> ClientProxies:
        if self._proxies is None or node.proxy_port is None:
            raise ConfigError("latency needs a cluster started with client_proxies=True")
        return self._proxies

    def copy_logs(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        paths = []
        for n in self.nodes:
            path = directory / broker_log_name(n.node_id)
            path.write_text(n.logs())
            paths.append(path)
        return paths


@contextlib.contextmanager
def given_or_started(bootstrap_servers: str | None) -> Iterator[str]:
    """The bootstrap servers of the block: those given (a cluster someone else runs), or a 1-broker KafkaCluster's,
    started for the block and removed after it (benchmarks take ``--bootstrap`` this way)."""
    if bootstrap_servers:
        yield bootstrap_servers
        return
    with KafkaCluster(brokers=1) as cluster:
        yield cluster.bootstrap_servers
