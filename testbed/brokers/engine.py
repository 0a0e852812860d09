"""A Docker engine that answers: use the running one, or install and start one (docs/machine.md).

dockerd is started with ``--bridge=none --iptables=false``: containers use host networking only,
so nothing the project sends leaves loopback.

``broker_cpu_options`` places broker containers in the host's CPU scheduling (docs/cluster.md): under the engine's
cgroupfs driver every container sits in the engine's one cgroup (``/docker``), which the kernel weighs as much as a
single process of the host. Members run each in a session of their own, and with the kernel's autogroups (Debian's
default) each session weighs as one process too: thirty busy members left a broker 1/31 of the CPU, its controller
stalled 20 s and fenced its own broker (CI, 2026-12-04). A container of its own beside the host's processes, with a
weight of its own, keeps the cluster standing for machines of its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from typing import Any

import docker
from docker.errors import DockerException

from ..errors import EngineError
from ..settings import settings
from ..waits import file_tail, wait_until

APT_PACKAGES = ("docker.io", "debootstrap", "iptables")  # iptables: the network fault steps


def engine_answers() -> bool:
    try:
        client = docker.from_env(timeout=5)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except DockerException:
        return False


def _install_packages() -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *APT_PACKAGES]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise EngineError(
                f"could not install {' '.join(APT_PACKAGES)} ({' '.join(cmd)} exited {proc.returncode}):\n"
                f"{proc.stderr[-2000:]}\nInstall Docker yourself and start it, then run again."
            )


def ensure_engine() -> None:
    """Make sure `docker info` answers; raise EngineError saying what to do when impossible."""
    if engine_answers():
        return
    if os.geteuid() != 0:
        raise EngineError(
            "no Docker engine answers and testbed can only start one as root. Either start Docker yourself "
            "(e.g. `sudo dockerd --bridge=none --iptables=false &`) and make its socket usable by this user "
            "(DOCKER_HOST or the docker group), or run the setup as root."
        )
    if any(shutil.which(tool) is None for tool in ("dockerd", "debootstrap", "iptables")):
        if shutil.which("apt-get") is None:
            raise EngineError("no Docker engine answers, dockerd is not installed and apt-get is missing: "
                              "install Docker (docker.io) and start it, then run again.")
        _install_packages()
    log = settings().cache_dir / "dockerd.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        # Detached on purpose: the engine outlives this process and is reused by the next run.
        subprocess.Popen(
            ["dockerd", "--bridge=none", "--iptables=false"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
    wait_until(
        engine_answers,
        timeout_s=settings().engine_start_timeout_s,
        what="dockerd to answer",
        diagnostics=lambda: "dockerd log tail:\n" + file_tail(log),
        interval_s=0.5,
    )


def cpu_options(cgroup_driver: str, shares: int, can_weigh: bool = True) -> dict[str, Any]:
    """Container options for a weight of ``shares`` (0: none, the engine's default placement). Under the cgroupfs
    driver the container's cgroup goes at the root of the hierarchy, beside the host's processes and sessions,
    rather than in the engine's cgroup shared by every container; the systemd driver already gives each container
    a scope in ``system.slice``, which weighs as much as the users' slice, so only the weight is set there. An
    engine that cannot weigh containers (``can_weigh``: docker info's CPUShares, false e.g. for a rootless engine
    without the cpu controller delegated) would refuse to start them with a weight: none is asked of it."""
    if shares == 0 or not can_weigh:
        return {}
    if cgroup_driver == "cgroupfs":
        return {"cpu_shares": shares, "cgroup_parent": "/"}
    return {"cpu_shares": shares}


@cache
def _cgroups() -> tuple[str, bool]:
    """The engine's cgroup driver, and whether it can weigh a container's CPU."""
    client = docker.from_env(timeout=10)
    try:
        info = client.info()
    finally:
        client.close()
    return str(info.get("CgroupDriver", "")), bool(info.get("CPUShares", True))


def broker_cpu_options() -> dict[str, Any]:
    """The CPU options of a broker container on this engine (``TESTBED_BROKER_CPU_SHARES``)."""
    shares = settings().broker_cpu_shares
    if not shares:
        return {}
    driver, can_weigh = _cgroups()
    return cpu_options(driver, shares, can_weigh)
