"""Members on a node of the cluster, as the fleet sees them: ``PlacedMember`` has ``MemberProcess``'s interface (and
``HostedMember``'s, when it is one of many in a ``PlacedHost``), each call carried out by its node's ``NodeHost`` and
each end learnt from the node's exits (``Node.sync``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from ..children import describe_exit
from ..fleet.exits import ExitCallback, ExitCause
from ..fleet.host import HOST_END_TIMEOUT_S
from ..fleet.process import WATCHER_JOIN_S, ProcessState, output_tail
from ..members.config import MemberConfig


class Node(Protocol):
    """What a placed member needs of its node (``testbed.placement.cluster.Node``)."""

    name: str
    driver_root: Path

    def call(self, method: str, *args: Any, timeout_s: float = ...) -> Any: ...

    def sync(self, method: str = ...) -> None: ...

    def iptables(self, *args: str) -> None: ...


class PlacedHost:
    """A member host process (``testbed.fleet.host.HostProcess``) on a node; its members are ``PlacedMember``s."""

    def __init__(self, name: str, node: Node, log_path: Path, gid: int | None) -> None:
        self.name = name
        self.node = node
        self.log_path = log_path  # in the driver's run directory: the node's output comes over to it
        self.gid = gid
        self.members: list[PlacedMember] = []

    def start(self, spec_json: str) -> None:
        self.node.call("open_host", self.name, spec_json, str(self.log_path), str(self.node.driver_root), self.gid)

    def alive(self) -> bool:
        return bool(self.node.call("host_alive", self.name))  # None: its node is lost

    def close(self, timeout_s: float = HOST_END_TIMEOUT_S) -> None:
        self.node.call("close_host", self.name, timeout_s, timeout_s=timeout_s + 30)


class PlacedMember:
    def __init__(self, config: MemberConfig, config_path: Path, node: Node, on_exit: ExitCallback | None,
                 gid: int | None = None, host: PlacedHost | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.node = node
        self._host = host
        self.on_exit = on_exit
        self.state: ProcessState = "stopped"
        self.exit_code: int | None = None
        self.pid: int | None = None  # on its node
        self.gid = gid  # its own gid on its node when the run cuts members off (testbed.faults.network.member_gid)
        self._started = False
        self._detail: dict[str, Any] | None = None
        self._ended = threading.Event()
        self._lock = threading.Lock()

    @property
    def member_id(self) -> str:
        return self.config.member_id

    @property
    def node_name(self) -> str:
        return self.node.name

    @property
    def network_rules(self) -> Node:
        """A network cut of it is made on its node."""
        return self.node

    @property
    def host(self) -> PlacedHost | None:
        return self._host

    def cohosted(self) -> list[PlacedMember]:
        """The live members a signal to its process reaches: itself, or every member of its host."""
        if self._host is None:
            return [self]
        return [m for m in self._host.members if m.alive()] or [self]

    @property
    def exit_info(self) -> dict[str, Any] | None:
        return self._detail

    def start(self) -> None:
        self.pid = self.node.call("start", self.config.model_dump_json(), str(self.config_path),
                                  str(self.node.driver_root), self.gid, self._host.name if self._host else None)
        if self._host is not None:
            self._host.members.append(self)
        self._started = True
        self.state = "running"

    def ended(self, detail: dict[str, Any]) -> None:
        """Its node reported its end (its files handed back up to it): recorded once, then told to the fleet."""
        with self._lock:
            if self._detail is not None:
                return
            self._detail = {**detail, "node": self.node.name}
        code = detail.get("exit_code")
        self.exit_code = code
        if detail.get("cause") == "exited" and self.state in ("running", "paused"):
            self.state = "exited"
        try:
            if self.on_exit is not None:
                self.on_exit(self, self._detail)
        finally:
            self._ended.set()

    @property
    def ended_how(self) -> str | None:
        if self._detail is None:
            return None
        if self._detail.get("node_lost"):
            return f"its node {self.node.name} was lost"
        if self._detail.get("signal"):
            return f"killed by {self._detail['signal']}"
        return describe_exit(self._detail.get("exit_code") or 0)

    def log_tail(self, lines: int) -> list[str]:
        return output_tail(self.config.log_path, lines)  # its node's output, as far as it came over

    def wait_exit_recorded(self, timeout_s: float = WATCHER_JOIN_S) -> bool:
        if not self._started:
            return self._detail is not None
        if not self._ended.is_set():
            self.node.sync()
        return self._ended.wait(timeout_s)

    def alive(self) -> bool:
        return self._started and not self._ended.is_set()

    def request_stop(self) -> None:
        if self.alive():
            self.node.call("request_stop", self.member_id)
            self.state = "running"

    def stop(self, timeout_s: float = 30.0) -> int | None:
        if self.alive():
            self.node.call("stop", self.member_id, timeout_s, timeout_s=timeout_s + 30)
            self.wait_exit_recorded()
            self.state = "stopped"
        return self.exit_code

    def kill(self, cause: ExitCause = "killed") -> None:
        """SIGKILL its process: a hosted member's whole host, every member in it (their exits come with the next
        sync)."""
        if self.alive():
            self.node.call("kill", self.member_id, cause)
            self.wait_exit_recorded()
        self.state = "killed"

    def pause(self) -> None:
        self.node.call("pause", self.member_id)
        for member in self.cohosted():
            member.state = "paused"

    def resume(self) -> None:
        self.node.call("resume", self.member_id)
        for member in self.cohosted():
            member.state = "running"

    def stall(self, on: bool) -> None:
        self.node.call("stall", self.member_id, on)
