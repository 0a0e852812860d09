"""Labels on everything testbed starts, and the reaping of what an earlier crashed run left.

Ryuk (testcontainers' reaper) stays off: its image cannot be pulled. Instead every container
carries the project label and its owner's pid and process start time; a container whose owner
is gone is a leftover and is removed. Containers of a live owner (a concurrent run) are kept.
"""

from __future__ import annotations

import os

import docker
import psutil
from docker.errors import DockerException, NotFound

from .settings import PROJECT_LABEL, PROJECT_NAME

OWNER_PID = "io.testbed.owner-pid"
OWNER_STARTED = "io.testbed.owner-started"
ROLE = "io.testbed.role"


def owner_labels(role: str) -> dict[str, str]:
    me = psutil.Process()
    return {
        PROJECT_LABEL: PROJECT_NAME,
        OWNER_PID: str(me.pid),
        OWNER_STARTED: f"{me.create_time():.3f}",
        ROLE: role,
    }


def owner_alive(labels: dict[str, str]) -> bool:
    try:
        proc = psutil.Process(int(labels.get(OWNER_PID, "0")))
        return f"{proc.create_time():.3f}" == labels.get(OWNER_STARTED)
    except (psutil.Error, ValueError):
        return False


def reap_leftover_containers(*, everything: bool = False) -> list[str]:
    """Remove project containers whose owner process is gone (all of them with ``everything``).

    Returns the names removed. Errors on one container do not stop the others.
    """
    client = docker.from_env()
    removed: list[str] = []
    try:
        for container in client.containers.list(all=True, filters={"label": f"{PROJECT_LABEL}={PROJECT_NAME}"}):
            if not everything and owner_alive(container.labels):
                continue
            if container.labels.get(OWNER_PID) == str(os.getpid()) and not everything:
                continue
            try:
                container.remove(force=True, v=True)
                removed.append(container.name)
            except NotFound:
                pass
            except DockerException as exc:  # keep reaping the rest; report at the end
                removed.append(f"{container.name} (failed: {exc})")
    finally:
        client.close()
    return removed
