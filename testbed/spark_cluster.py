"""A Spark standalone cluster on loopback: one master and N workers, from the launch classes the pyspark package
ships (``bin/spark-class``), for tests and benchmarks of the analysis on a real cluster.

    with SparkStandalone(workers=2) as cluster, spark_master(cluster.master_url):
        analyse(run_dir)  # executors in the workers' JVMs, not in the driver

A service (``testbed.service.Service``): the master and the workers are children of this process (they die with
it, and carry its owner mark for ``testbed clean``), everything binds 127.0.0.1, the workers' executors and scratch
files live under one temporary directory that is removed on exit, also on Ctrl-C. Readiness is the master's own status page
(``/json/``: ALIVE, with every worker ALIVE), waited for with the processes' log tails as diagnostics.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

from .children import child_env, die_with_parent, free_ports
from .service import Service
from .waits import wait_until

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
STOP_TIMEOUT_S = 15.0


def spark_home() -> Path:
    """The pyspark package is a Spark distribution: jars, ``bin/spark-class``."""
    return Path(pyspark.__file__).resolve().parent


@dataclass
class _Daemon:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 8) -> str:
        try:
            return "\n    ".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


@dataclass
class SparkStandalone(Service):
    workers: int = 1
    cores_per_worker: int = 1
    memory_per_worker: str = "1500m"  # an executor takes spark.executor.memory (testbed: 1g) plus overhead
    start_timeout_s: float = 120.0
    # A command the workers are started through (it must exec its arguments), e.g. to run them in a mount
    # namespace of their own: how a test makes a worker that does not see a path the driver sees.
    worker_wrapper: list[str] = field(default_factory=list)
    master_url: str = ""
    status_url: str = ""
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="testbed-spark-cluster-")))
    _daemons: list[_Daemon] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.workers < 1 or self.cores_per_worker < 1:
            raise ValueError(f"workers and cores_per_worker must be >= 1, got {self.workers}, "
                             f"{self.cores_per_worker}")

    def _launch(self, name: str, args: list[str], wrapper: list[str] | None = None) -> _Daemon:
        log = self.root / f"{name}.log"
        env = child_env(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP=HOST, SPARK_LOG_DIR=str(self.root),
                        SPARK_WORKER_DIR=str(self.root / "work"), SPARK_NO_DAEMONIZE="1")
        with log.open("ab") as out:
            popen = subprocess.Popen([*(wrapper or []), str(spark_home() / "bin" / "spark-class"), *args], stdout=out,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                     preexec_fn=die_with_parent())
        daemon = _Daemon(name, popen, log)
        self._daemons.append(daemon)
        return daemon

    def start(self) -> None:
        port, ui_port, *worker_ports = free_ports(2 + 2 * self.workers)
        self.master_url = f"spark://{HOST}:{port}"
        self.status_url = f"http://{HOST}:{ui_port}/json/"
        self._launch("master", [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(ui_port)])
        self._wait(lambda status: status.get("status") == "ALIVE", "the Spark master ALIVE")
        for i in range(self.workers):
            rpc, ui = worker_ports[2 * i], worker_ports[2 * i + 1]
            self._launch(f"worker-{i}", [WORKER_CLASS, "--host", HOST, "--port", str(rpc), "--webui-port", str(ui),
                                         "--cores", str(self.cores_per_worker), "--memory", self.memory_per_worker,
                                         "--work-dir", str(self.root / f"work-{i}"), self.master_url],
                         self.worker_wrapper)
        self._wait(lambda status: status.get("aliveworkers", 0) >= self.workers,
                   f"{self.workers} Spark worker(s) registered with the master")

    def status(self) -> dict[str, Any]:
        """The master's status page as JSON (workers, applications, cores)."""
        with urllib.request.urlopen(self.status_url, timeout=2) as response:
            return json.loads(response.read())

    def _wait(self, ready: Any, what: str) -> None:
        def abort() -> str | None:
            for daemon in self._daemons:
                if daemon.popen.poll() is not None:
                    return f"spark {daemon.name} exited ({daemon.popen.returncode}):\n    {daemon.tail()}"
            return None

        def diagnostics() -> str:
            return "\n".join(f"spark {d.name} ({d.log}):\n    {d.tail()}" for d in self._daemons)

        wait_until(lambda: ready(self.status()), timeout_s=self.start_timeout_s, interval_s=0.5, what=what,
                   diagnostics=diagnostics, abort=abort)

    def close(self) -> None:
        """Workers first (their executors end with them), then the master; then the scratch directory."""
        for daemon in reversed(self._daemons):
            daemon.stop()
        self._daemons.clear()
        shutil.rmtree(self.root, ignore_errors=True)
