"""Large groups: time to stable and resident memory per member, confluent-kafka vs Java members.

For each fleet size, one group of that many members on one topic (its own 1-broker KafkaCluster):
- stable_s: from ``Fleet.start`` to the admin API showing the group STABLE with every member in it
  and every partition owned once (``Fleet.wait_stable``, polled every 0.5 s);
- rss_mb: resident memory (psutil RSS) of each member's process tree once stable, i.e. the runner
  and, for Java, the JVM it drives; mean and max over members.
A size that does not become stable within the timeout reports stable_s null with the reason.
Run: .venv/bin/python benchmarks/fleet_scale.py [--python 10,25,50] [--java 10,25] [--partitions 100]
Last line: one JSON object {"members", "stable_s", "rss_mb_per_member", "java_rss_mb_per_member", "java_members"}
for the largest Python fleet that became stable; Java at that size if measured, else at its largest measured size.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from testbed.cluster import KafkaCluster
from testbed.errors import WaitTimeout
from testbed.fleet import Fleet
from testbed.run.layout import RunDir
from testbed.members.spec import MemberSpec

SPECS = {
    "confluent-kafka": MemberSpec(name="bench-confluent", client="confluent-kafka", assignors=["range"]),
    "java": MemberSpec(name="bench-java", client="java", assignors=["range"]),
}


def tree_rss_mb(pid: int) -> float | None:
    """RSS of a process and all its descendants, in MB (10^6 bytes); None if it is gone."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 1e6
    except psutil.NoSuchProcess:
        return None


def measure(cluster: KafkaCluster, client: str, members: int, partitions: int, root: Path,
            timeout_s: float) -> dict:
    topic = cluster.create_topic(f"fleet-scale-{client}-{members}-{uuid.uuid4().hex[:6]}", partitions)
    run_dir = RunDir(root / f"{client}-{members}")
    result: dict = {"client": client, "members": members, "partitions": partitions}
    with Fleet(cluster.bootstrap_servers, f"g-scale-{uuid.uuid4().hex[:6]}", [topic], run_dir) as fleet:
        fleet.prepare(SPECS[client])  # client installs are not start-up time
        start = time.monotonic()
        fleet.start(SPECS[client], members)
        try:
            fleet.wait_stable(timeout_s=timeout_s)
            result["stable_s"] = round(time.monotonic() - start, 2)
        except WaitTimeout as exc:
            result["stable_s"] = None
            result["unstable_reason"] = str(exc).splitlines()[0]
        rss = [r for r in (tree_rss_mb(p.pid) for p in fleet.live() if p.pid) if r is not None]
        result["alive"] = len(rss)
        result["rss_mb_mean"] = round(statistics.fmean(rss), 1) if rss else None
        result["rss_mb_max"] = round(max(rss), 1) if rss else None
        stop_start = time.monotonic()
    result["stop_all_s"] = round(time.monotonic() - stop_start, 2)
    cluster.delete_topic(topic)
    return result


def counts(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"counts must be comma-separated integers, got {text!r}") from None
    if any(v < 1 for v in values):
        raise SystemExit(f"counts must be positive, got {text!r}")
    return sorted(values)


def summary(results: list[dict]) -> dict:
    """The largest stable Python fleet; Java beside it at the same size, else its largest measured size."""
    python = [r for r in results if r["client"] == "confluent-kafka" and r["stable_s"] is not None]
    java = [r for r in results if r["client"] == "java" and r["rss_mb_mean"] is not None]
    if not python:
        return {"members": "unknown", "stable_s": "unknown", "rss_mb_per_member": "unknown",
                "java_rss_mb_per_member": "unknown", "reason": "no Python fleet became stable"}
    best = max(python, key=lambda r: r["members"])
    out = {"members": best["members"], "stable_s": best["stable_s"], "rss_mb_per_member": best["rss_mb_mean"],
           "java_rss_mb_per_member": "unknown"}
    if java:
        same = [r for r in java if r["members"] == best["members"]]
        beside = same[0] if same else max(java, key=lambda r: r["members"])
        out["java_rss_mb_per_member"] = beside["rss_mb_mean"]
        out["java_members"] = beside["members"]  # says when Java was measured at a smaller size
        out["java_stable_s"] = beside["stable_s"]
    else:
        out["java_reason"] = "no Java fleet measured (--java)"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=counts, default=counts("10,25,50"), help="confluent-kafka fleet sizes")
    parser.add_argument("--java", type=counts, default=counts("10,25"),
                        help="Java VerifiableConsumer fleet sizes (each member is a JVM; '' for none)")
    parser.add_argument("--partitions", type=int, default=100, help="partitions of each fleet's topic")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for a fleet to be stable")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="fleet-scale-") as tmp, KafkaCluster(brokers=1) as cluster:
        plan = [("confluent-kafka", n) for n in args.python] + [("java", n) for n in args.java]
        for client, members in plan:
            result = measure(cluster, client, members, args.partitions, Path(tmp), args.timeout)
            results.append(result)
            print(json.dumps(result), flush=True)
    print(json.dumps(summary(results)))


if __name__ == "__main__":
    main()
