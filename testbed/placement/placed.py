"""A member process on a node of the cluster, as the fleet sees it: ``MemberProcess``'s interface, each call carried
out by its node's ``NodeHost`` and each end learnt from the node's exits (``Node.sync``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from ..children import describe_exit
from ..fleet.exits import ExitCallback, ExitCause
from ..fleet.process import WATCHER_JOIN_S, ProcessState, output_tail
from ..members.config import MemberConfig


class Node(Protocol):
    """What a placed member needs of its node (``testbed.placement.cluster.Node``)."""

    name: str
    driver_root: Path

    def call(self, method: str, *args: Any, timeout_s: float = ...) -> Any: ...

    def sync(self, method: str = ...) -> None: ...

    def iptables(self, *args: str) -> None: ...


class PlacedMember:
    def __init__(self, config: MemberConfig, config_path: Path, node: Node, on_exit: ExitCallback | None,
                 gid: int | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.node = node
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
    def host(self) -> None:
        return None

    def cohosted(self) -> list[PlacedMember]:
        return [self]

    @property
    def exit_info(self) -> dict[str, Any] | None:
        return self._detail

    def start(self) -> None:
        self.pid = self.node.call("start", self.config.model_dump_json(), str(self.config_path),
                                  str(self.node.driver_root), self.gid)
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
        if self.alive():
            self.node.call("kill", self.member_id, cause)
            self.wait_exit_recorded()
        self.state = "killed"

    def pause(self) -> None:
        self.node.call("pause", self.member_id)
        self.state = "paused"

    def resume(self) -> None:
        self.node.call("resume", self.member_id)
        self.state = "running"

    def stall(self, on: bool) -> None:
        self.node.call("stall", self.member_id, on)
