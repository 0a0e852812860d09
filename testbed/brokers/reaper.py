"""Owner marks on everything testbed starts, and the reaping of what an earlier crashed run left.

Ryuk (testcontainers' reaper) stays off: its image cannot be pulled. Instead every container and
data volume carries the project label and its owner's pid and process start time, and every child
process the same owner in its environment (``testbed.children``); a container, volume or process
whose owner is gone is a leftover and is ended. Those of a live owner (a concurrent run) are kept.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import docker
import psutil
from docker.errors import DockerException, NotFound

from ..children import OWNER_ENV, is_alive, owner_identity, parse_owner_mark
from ..errors import WaitTimeout
from ..settings import PROJECT_LABEL, PROJECT_NAME
from ..waits import wait_until

OWNER_PID = "io.testbed.owner-pid"
OWNER_STARTED = "io.testbed.owner-started"
ROLE = "io.testbed.role"
PROCESS_END_TIMEOUT_S = 5.0


def owner_labels(role: str) -> dict[str, str]:
    pid, started = owner_identity()
    return {PROJECT_LABEL: PROJECT_NAME, OWNER_PID: str(pid), OWNER_STARTED: started, ROLE: role}


def owner_alive(labels: dict[str, str]) -> bool:
    try:
        return is_alive(int(labels.get(OWNER_PID, "0")), labels.get(OWNER_STARTED))
    except ValueError:
        return False


def reap_leftovers(*, owner_pid: int | None = None) -> list[str]:
    """End the processes, then remove the containers and their data volumes, whose owner is gone (only
    ``owner_pid``'s, if given), and the network cuts whose owner is gone (a machine left partitioned breaks
    every later run). Each part runs on its own: an engine that does not answer still leaves the processes
    ended, and says so in its entry."""
    from ..faults.network import reap_leftover_rules  # it marks its rules with this module's owner identity

    parts: dict[str, Callable[[], list[str]]] = {
        "processes": lambda: reap_leftover_processes(owner_pid=owner_pid),
        "containers": lambda: reap_leftover_containers(owner_pid=owner_pid),
        "volumes": lambda: reap_leftover_volumes(owner_pid=owner_pid),
        "network cuts": lambda: reap_leftover_rules(owner_pid=owner_pid),
    }
    reaped: list[str] = []
    for what, reap in parts.items():
        try:
            reaped += reap()
        except Exception as exc:  # noqa: BLE001 - each part runs independently and reports its error
            reaped.append(f"{what} (failed: {exc})")
    return reaped


def create_volume(name: str) -> str:
    """A Docker volume marked with this process as its owner; returns its name."""
    client = docker.from_env()
    try:
        return client.volumes.create(name=name, labels=owner_labels("broker-data")).name
    finally:
        client.close()


def remove_volume(name: str) -> None:
    client = docker.from_env()
    try:
        client.volumes.get(name).remove(force=True)
    except NotFound:
        pass
    finally:
        client.close()


def reap_leftover_volumes(*, everything: bool = False, owner_pid: int | None = None) -> list[str]:
    """Remove project data volumes whose owner process is gone (all of them with ``everything``); after the
    containers, which hold them in use. Returns the names removed."""
    return _reap_docker(lambda client, labels: client.volumes.list(filters={"label": labels}),
                        lambda volume: volume.attrs.get("Labels") or {}, lambda volume: volume.remove(force=True),
                        lambda volume: f"volume {volume.name}", everything=everything, owner_pid=owner_pid)


def reap_leftover_containers(*, everything: bool = False, owner_pid: int | None = None) -> list[str]:
    """Remove project containers whose owner process is gone (all of them with ``everything``).

    Returns the names removed. Errors on one container do not stop the others.
    """
    return _reap_docker(lambda client, labels: client.containers.list(all=True, filters={"label": labels}),
                        lambda container: container.labels, lambda container: container.remove(force=True, v=True),
                        lambda container: container.name, everything=everything, owner_pid=owner_pid)


def _reap_docker(listing: Callable[[docker.DockerClient, list[str]], list[Any]],
                 labels_of: Callable[[Any], dict[str, str]], remove: Callable[[Any], None], name_of: Callable[[Any], str],
                 *, everything: bool, owner_pid: int | None) -> list[str]:
    """Remove the project's Docker objects listed whose owner is gone (never this process's, unless
    ``everything``); an error on one is reported in its entry and the rest are still reaped."""
    client = docker.from_env()
    removed: list[str] = []
    labels = [f"{PROJECT_LABEL}={PROJECT_NAME}"] + ([f"{OWNER_PID}={owner_pid}"] if owner_pid is not None else [])
    try:
        for item in listing(client, labels):
            marks = labels_of(item)
            if not everything and (marks.get(OWNER_PID) == str(os.getpid()) or owner_alive(marks)):
                continue
            try:
                remove(item)
                removed.append(name_of(item))
            except NotFound:
                pass
            except DockerException as exc:
                removed.append(f"{name_of(item)} (failed: {exc})")
    finally:
        client.close()
    return removed


def leftover_processes(*, owner_pid: int | None = None) -> Iterator[psutil.Process]:
    """Processes marked with an owner that is gone (only ``owner_pid``'s, if given); never this one."""
    for proc in psutil.process_iter():
        if proc.pid == os.getpid():
            continue
        try:
            owner = parse_owner_mark(proc.environ().get(OWNER_ENV, ""))
        except psutil.Error:  # ended meanwhile, a zombie, or another user's: not ours to judge
            continue
        if owner is None or (owner_pid is not None and owner[0] != owner_pid):
            continue
        if not owner_alive({OWNER_PID: str(owner[0]), OWNER_STARTED: owner[1]}):
            yield proc


def reap_leftover_processes(*, owner_pid: int | None = None) -> list[str]:
    """SIGKILL every leftover process (its owner, who would have stopped it gently, is gone).

    Returns a description of each one ended. Errors on one process do not stop the others.
    """
    killed: dict[psutil.Process, str] = {}
    failed: list[str] = []
    for proc in leftover_processes(owner_pid=owner_pid):
        try:
            killed[proc] = f"{proc.name()} (pid {proc.pid})"
            proc.kill()
        except psutil.NoSuchProcess:
            killed.pop(proc, None)
        except psutil.Error as exc:
            killed.pop(proc, None)
            failed.append(f"pid {proc.pid} (failed: {exc})")
    try:
        wait_until(lambda: all(_ended(p) for p in killed), timeout_s=PROCESS_END_TIMEOUT_S,
                   what="the leftover processes to end", interval_s=0.05)
    except WaitTimeout:
        pass  # named below
    return [what if _ended(proc) else f"{what} (still running after SIGKILL)"
            for proc, what in killed.items()] + failed


def _ended(proc: psutil.Process) -> bool:
    """Gone, or a zombie: dead, waiting only for whichever parent it was handed to to collect it."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
