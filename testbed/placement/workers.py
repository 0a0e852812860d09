"""The load's Locust workers on the nodes of a Ray cluster: each started by its node's ``NodeHost``, its files (its
log, ack log, finished marker) brought over with the members', and driven through ``subprocess.Popen``'s interface
as the load drives its processes here (``testbed.load.generator.WorkerHosts``)."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import Any, Protocol

from ..history.events import CLOCK_CORRECTION_ENV
from .model import Placement
from .placed import Node as MemberNode


class Node(MemberNode, Protocol):
    """What a worker needs of its node (``testbed.placement.cluster.Node``)."""

    lost: str | None
    processes: list[Any]


class Chooser(Protocol):
    def choose(self, placement: Placement) -> Node: ...

    def clock_correction_ms(self, node: Node) -> int: ...

    def master_address(self, placement: Placement) -> str: ...

LOST = -signal.SIGKILL  # a worker whose node was lost ended with it, as if killed
PACKAGE = Path(__file__).resolve().parents[1]  # testbed's own files here (the locustfile): a node has its own


class RemoteProcess:
    """A process of the run on a node, with what the load uses of ``Popen``."""

    def __init__(self, node: Node, key: str, pid: int | None) -> None:
        self.node = node
        self.key = key
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.node.call("process_poll", self.key)
            self.returncode = LOST if self.node.lost is not None else code
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            limit = 3600.0 if timeout is None else timeout
            code = self.node.call("process_wait", self.key, limit, timeout_s=limit + 30)
            if self.node.lost is not None:
                code = LOST
            if code is None:
                raise subprocess.TimeoutExpired(self.key, limit)
            self.returncode = code
            self.node.sync()  # its last lines (acks, the finished marker) before anyone reads them
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.node.call("process_signal", self.key, int(sig))

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class NodeWorkers:
    """Where a load's workers go: spread over the nodes ``placement`` allows (``RayPlacer.choose``)."""

    def __init__(self, placer: Chooser, placement: Placement) -> None:
        self.placer = placer
        self.placement = placement
        self.placed: dict[str, Node] = {}  # role -> its node

    def spawn(self, role: str, locust_args: list[str], env: dict[str, str], log_path: Path) -> RemoteProcess:
        """The worker on the node ``choose`` gives, stamping its records and acks by the driver's clock."""
        node = self.placer.choose(self.placement)
        key = f"locust-{role}"
        env = {**env, CLOCK_CORRECTION_ENV: str(self.placer.clock_correction_ms(node))}
        pid = node.call("spawn", key, locust_args, env, str(log_path), str(node.driver_root), str(PACKAGE))
        process = RemoteProcess(node, key, pid)
        node.processes.append(process)
        self.placed[role] = node
        return process

    def touch(self, path: Path) -> None:
        for node in {id(n): n for n in self.placed.values()}.values():
            node.call("touch", path.relative_to(node.driver_root).as_posix())

    def where(self, role: str) -> str:
        return self.placed[role].name

    def master_address(self) -> str:
        return self.placer.master_address(self.placement)
