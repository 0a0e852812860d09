"""A Docker engine that answers: use the running one, or install and start one (docs/machine.md).

dockerd is started with ``--bridge=none --iptables=false``: containers use host networking only,
so nothing the project sends leaves loopback.
"""

from __future__ import annotations

import os
import shutil
import subprocess

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

