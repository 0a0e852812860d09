"""Time from start to ready: brokers in containers (1 and 3) vs the same Kafka as a bare JVM on the host.

Ready means the same thing for both: an admin client sees every broker and a topic can be created.
The bare broker uses the very jars and entry script of the image, but not the class-data archives the image's build
makes (recipes/kafka/class-archive.sh): the ratio compares the image as built with a plain JVM on the same jars.
Run: .venv/bin/python benchmarks/cluster_startup.py [--repeat 3]
Last line: one JSON object {"container_ready_s_1", "container_ready_s_3", "bare_ready_s_1", "ratio_1"}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from testbed.brokers.cluster import KafkaCluster, new_cluster_id, rebalance_defaults
from testbed.brokers.images import _kafka_jars, ensure_kafka_image
from testbed.children import free_ports
from testbed.settings import settings


def container_ready_s(brokers: int) -> float:
    start = time.monotonic()
    with KafkaCluster(brokers=brokers):
        return time.monotonic() - start


@dataclass
class _BareNode:
    """What KafkaCluster's readiness check reads of a node, for a broker that is a host process."""

    node_id: int
    port: int
    log_path: Path
    state: str = "running"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class BareBroker(KafkaCluster):
    """The image's entry script run directly on the host: same jars, same settings, no container."""

    def start(self) -> None:
        jars = _kafka_jars(self.kafka_version)
        self._root = Path(tempfile.mkdtemp(prefix="testbed-bare-"))
        opt = self._root / "opt" / "kafka"
        shutil.copytree(jars, opt / "libs")
        (opt / "config").mkdir()
        shutil.copy(settings().docker_dir / "kafka" / "log4j2.xml", opt / "config" / "log4j2.xml")
        script = (settings().docker_dir / "kafka" / "entrypoint.sh").read_text()
        script = script.replace("/opt/kafka", str(opt)).replace("/var/lib/kafka/data", str(self._root / "data"))
        (self._root / "entrypoint.sh").write_text(script)
        port, cport = free_ports(2)
        env = {**os.environ, "KAFKA_NODE_ID": "1", "KAFKA_CLUSTER_ID": new_cluster_id(), "KAFKA_HOST": "127.0.0.1",
               "KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(cport),
               "KAFKA_QUORUM_VOTERS": f"1@127.0.0.1:{cport}"}
        args = [f"{k}={v}" for k, v in {**rebalance_defaults(1), **self.broker_settings}.items()]
        self._log = (self._root / "server.log").open("wb")
        self._proc = subprocess.Popen(["bash", str(self._root / "entrypoint.sh"), *args], env=env,
                                      stdout=self._log, stderr=subprocess.STDOUT)
        self.nodes = [_BareNode(node_id=1, port=port, log_path=self._root / "server.log")]
        self.wait_ready()

    def close(self) -> None:
        if getattr(self, "_proc", None) is not None:
            self._proc.kill()
            self._proc.wait()
            self._log.close()
        if getattr(self, "_root", None) is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self.nodes = []


def bare_ready_s() -> float:
    start = time.monotonic()
    with BareBroker(brokers=1):
        return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per configuration; the median is reported")
    args = parser.parse_args()
    ensure_kafka_image()  # image build time is not start-up time
    bare_ready_s()  # warm the page cache for both sides alike
    results: dict[str, list[float]] = {"container_ready_s_1": [], "container_ready_s_3": [], "bare_ready_s_1": []}
    for i in range(args.repeat):
        results["bare_ready_s_1"].append(bare_ready_s())
        results["container_ready_s_1"].append(container_ready_s(1))
        results["container_ready_s_3"].append(container_ready_s(3))
        print(f"run {i + 1}: " + ", ".join(f"{k}={v[-1]:.2f}" for k, v in results.items()), flush=True)
    summary = {k: round(statistics.median(v), 2) for k, v in results.items()}
    summary["ratio_1"] = round(summary["container_ready_s_1"] / summary["bare_ready_s_1"], 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
