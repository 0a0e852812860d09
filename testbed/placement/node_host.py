"""What runs on each node of the cluster: one ``NodeHost`` per node and run, a Ray actor placed there.

It starts the member processes placed on its node exactly as the fleet starts them on this machine
(``testbed.fleet.process.MemberProcess``: the same launch, process group, exit books), signals and reaps them, and
hands back, on each ``collect``, the member exits since the last one and every byte its members' files gained.
The members' files live under a directory of the node's own (``root``) laid out as the run directory: a member's
config names paths in the driver's run directory, and each is moved there.

Nothing it starts outlives it: every process is started from one long-lived thread of the actor's process
(``PR_SET_PDEATHSIG`` is tied to the thread that started a child), and the actor lives only as long as the run that
made it holds its handle (Ray ends an actor whose owner is gone, a ``kill -9``'d testbed too).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..cache import pythonpath_with_testbed
from ..children import LOCUST_MAIN, child_env, die_with_parent, is_alive, owner_mark, parse_owner_mark
from ..errors import TestbedError
from ..fleet.host import HostedMember, HostProcess
from ..fleet.process import MemberProcess
from ..members.config import MemberConfig
from ..members.launch import host_command, prepare_spec
from ..members.spec import MemberSpec
from ..run.revision import testbed_revision

MAX_BYTES_PER_COLLECT = 8 << 20  # one answer's file bytes: the rest comes with the next collect
NODES_DIR = Path(tempfile.gettempdir()) / "testbed-nodes"  # on each node: one directory per NodeHost


def remove_orphans(nodes_dir: Path) -> list[Path]:
    """Remove the member directories whose NodeHost is gone; returns them."""
    removed = []
    for folder in nodes_dir.glob("*@*") if nodes_dir.is_dir() else []:
        owner = parse_owner_mark(folder.name.partition("@")[2])
        if owner is not None and not is_alive(*owner):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def moved(path: Path, driver_root: Path, node_root: Path) -> Path:
    """``path``, if inside the driver's run directory, at the same place under ``node_root``."""
    try:
        return node_root / path.relative_to(driver_root)
    except ValueError:  # outside the run directory (a user's path): the same on every node
        return path


def relocate(config: MemberConfig, driver_root: Path, node_root: Path) -> MemberConfig:
    """``config`` with each path inside the driver's run directory moved to the same place under ``node_root``."""
    return config.model_copy(update={
        key: moved(path, driver_root, node_root) if path is not None else None
        for key, path in (("history_path", config.history_path), ("log_path", config.log_path),
                          ("run_dir", config.run_dir))})


class NodeHost:
    """The members of one run on one node (a Ray actor: ``ray.remote(NodeHost)``, placed on its node)."""

    def __init__(self, run_id: str) -> None:
        # Named with its owner (this actor's process): the directories of actors that are gone (their run was
        # killed before it could end them) are removed by the next NodeHost on this node.
        remove_orphans(NODES_DIR)
        self.root = NODES_DIR / f"{run_id}@{owner_mark()}"
        self.root.mkdir(parents=True, exist_ok=True)
        self.members: dict[str, MemberProcess | HostedMember] = {}
        self.hosts: dict[str, HostProcess] = {}  # member hosts (members_per_process > 1) by name
        self._exits: list[tuple[str, dict[str, Any]]] = []
        self._sent: dict[str, int] = {}  # file (relative to root) -> bytes handed back so far
        self._lock = threading.Lock()
        self._launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="member-launcher")
        self._rules: list[list[str]] = []  # network cuts' rules in place (chain first)
        self.processes: dict[str, subprocess.Popen] = {}  # the run's other processes here (Locust workers)

    # ---- the node ----------------------------------------------------------------------------

    def describe(self) -> dict[str, Any]:
        """What the driver checks before a member is placed here."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(), "hostname": socket.gethostname(),
                "pid": os.getpid(), "folder": str(self.root), "testbed_revision": testbed_revision(),
                "python": platform.python_version(), "java": shutil.which("java"), "is_root": os.geteuid() == 0,
                "iptables": shutil.which("iptables")}

    def clock(self) -> float:
        return time.time()

    def prepare(self, spec_json: str) -> str | None:
        """Refuse a spec that cannot run here and build its client install (the fleet's prepare, on this node):
        None, or why not."""
        try:
            prepare_spec(MemberSpec.model_validate_json(spec_json))
        except (TestbedError, ValueError) as exc:
            return str(exc)
        return None

    # ---- members -----------------------------------------------------------------------------

    def open_host(self, name: str, spec_json: str, log_path: str, driver_root: str, gid: int | None = None) -> int:
        """Start an empty member host for members of the spec (``testbed.fleet.host.HostProcess``), as the fleet
        does on its own machine; its pid."""
        log = moved(Path(log_path), Path(driver_root), self.root)
        host = HostProcess(name, host_command(MemberSpec.model_validate_json(spec_json)), log, gid=gid)
        self.hosts[name] = host
        self._launcher.submit(host.start).result()
        return host.pid

    def host_alive(self, name: str) -> bool:
        return self.hosts[name].alive()

    def close_host(self, name: str, timeout_s: float) -> None:
        self.hosts[name].close(timeout_s)

    def start(self, config_json: str, config_path: str, driver_root: str, gid: int | None = None,
              host: str | None = None) -> int | None:
        """Start a member from its config (paths of the driver's run directory): in its own process, under its own
        ``gid`` when the run cuts members off, or in the member host named ``host``; its (host's) pid here."""
        config = relocate(MemberConfig.model_validate_json(config_json), Path(driver_root), self.root)
        local_config = moved(Path(config_path), Path(driver_root), self.root)
        for path in (config.history_path, config.log_path, local_config):
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
        proc: MemberProcess | HostedMember
        if host is not None:
            proc = HostedMember(config, local_config, self.hosts[host], on_exit=self._exited)
            self.members[config.member_id] = proc
            proc.start()  # a line on the host's channel
        else:
            proc = MemberProcess(config, local_config, on_exit=self._exited, gid=gid)
            self.members[config.member_id] = proc
            self._launcher.submit(proc.start).result()
        return proc.pid

    def _exited(self, proc: MemberProcess | HostedMember, detail: dict[str, Any]) -> None:
        with self._lock:
            self._exits.append((proc.member_id, dict(detail)))

    def request_stop(self, member_id: str) -> None:
        self.members[member_id].request_stop()

    def stop(self, member_id: str, timeout_s: float) -> int | None:
        return self.members[member_id].stop(timeout_s)

    def kill(self, member_id: str, cause: str) -> None:
        self.members[member_id].kill(cause)  # type: ignore[arg-type]

    def pause(self, member_id: str) -> None:
        self.members[member_id].pause()

    def resume(self, member_id: str) -> None:
        self.members[member_id].resume()

    def stall(self, member_id: str, on: bool) -> None:
        self.members[member_id].stall(on)

    # ---- other processes: the load's Locust workers ------------------------------------------

    def spawn(self, key: str, locust_args: list[str], env: dict[str, str], log_path: str, driver_root: str,
              driver_package: str) -> int:
        """Start a Locust worker of the run (``python -m testbed.load.locust_main <locust_args>`` in this node's
        interpreter) in its own session, its output to ``log_path``; every path of the driver's run directory in its
        arguments and ``env`` moved to this node's, and every path of the driver's testbed package (the locustfile)
        to this node's."""
        prefix, mine = f"{driver_root.rstrip('/')}/", f"{self.root}/"
        package, own = f"{driver_package.rstrip('/')}/", f"{Path(__file__).resolve().parents[1]}/"

        def here(value: str) -> str:
            return value.replace(prefix, mine).replace(package, own)

        log = Path(here(log_path))
        log.parent.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", LOCUST_MAIN, *(here(a) for a in locust_args)]
        child = child_env(**{k: here(v) for k, v in env.items()},
                          PYTHONPATH=pythonpath_with_testbed(os.environ.get("PYTHONPATH")))

        def launch() -> subprocess.Popen:
            with log.open("ab") as out:
                return subprocess.Popen(command, env=child, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent())

        popen = self._launcher.submit(launch).result()
        self.processes[key] = popen
        return popen.pid

    def process_poll(self, key: str) -> int | None:
        return self.processes[key].poll()

    def process_wait(self, key: str, timeout_s: float) -> int | None:
        """Its exit code once it ended within ``timeout_s``; None if it still runs."""
        try:
            return self.processes[key].wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def process_signal(self, key: str, signum: int) -> None:
        if self.processes[key].poll() is None:
            self.processes[key].send_signal(signum)

    def touch(self, relative: str) -> None:
        """Make the file ``relative`` (to the run directory) here: a request the driver makes of the run's processes
        on this node (the load's finish request)."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def iptables(self, *args: str) -> None:
        """A network cut's rule inserted or deleted on this node (``testbed.faults.network.NetworkFaults``); the
        rules still in place when the run ends go with ``close``."""
        from ..faults.network import _iptables

        _iptables(*args)
        rule = list(args[1:])
        if args[0] == "-I":
            self._rules.append(rule)
        elif args[0] == "-D" and rule in self._rules:
            self._rules.remove(rule)

    # ---- handing back ------------------------------------------------------------------------

    def collect(self) -> dict[str, list]:
        """The member exits since the last collect, then what every file gained since: (path relative to the run
        directory, offset, bytes). Exits first: a member's files are whole once its exit is known."""
        with self._lock:
            exits, self._exits = self._exits, []
            files: list[tuple[str, int, bytes]] = []
            budget = MAX_BYTES_PER_COLLECT
            for path in sorted(p for p in self.root.rglob("*") if p.is_file()):
                relative = path.relative_to(self.root).as_posix()
                size, sent = path.stat().st_size, self._sent.get(relative)
                if size == sent or budget <= 0:  # an empty file is sent once too: a marker is its existence
                    continue
                start = 0 if sent is None or size < sent else sent  # shorter: written anew, sent whole again
                with path.open("rb") as f:
                    f.seek(start)
                    data = f.read(min(size - start, budget))
                budget -= len(data)
                files.append((relative, start, data))
                self._sent[relative] = start + len(data)
            return {"exits": exits, "files": files}

    def close(self) -> dict[str, list]:
        """End whatever still runs (the fleet stopped its members already), remove any cut left in place, hand back
        the rest, remove the files."""
        from ..faults.network import _iptables

        for rule in self._rules:
            try:
                _iptables("-D", *rule)
            except TestbedError:
                pass
        for proc in self.members.values():
            if proc.alive():
                proc.kill()
        for host in self.hosts.values():
            host.close()
        for popen in self.processes.values():
            if popen.poll() is None:
                popen.kill()
                popen.wait()
        for proc in self.members.values():
            proc.wait_exit_recorded()
        last = self.collect()
        while self._pending():  # files beyond one answer's bytes
            more = self.collect()
            last["files"] += more["files"]
        self._launcher.shutdown(wait=False)
        shutil.rmtree(self.root, ignore_errors=True)
        return last

    def _pending(self) -> bool:
        return any(p.is_file() and p.stat().st_size != self._sent.get(p.relative_to(self.root).as_posix())
                   for p in self.root.rglob("*"))
