"""What placing members on a Ray cluster costs: the same fleet started on this machine and over a local Ray cluster
(a head and ``--workers`` worker nodes on loopback, ``LocalRayCluster``), spread.

For each: ``--members`` confluent-kafka members of one group on one topic (a 1-broker KafkaCluster of its own),
``--per-process`` of them in each process (members hosted many per process, ``members_per_process``),
- start_s: from ``Fleet.start`` until every member's history (as it reached the run directory) holds its
  ``started``; members_per_s is members / start_s;
- stable_s: from the start until the group is stable (``Fleet.wait_stable``);
- harness_cpu_s: this process's CPU seconds from the start until stable, and idle_harness_cpu_pct over the
  ``--idle`` seconds after (with Ray: the pump that brings the nodes' files over every 0.2 s);
- ray_rss_mb (with Ray): the resident memory of Ray's processes (GCS, raylets, agents, the NodeHost actors),
  idle before the fleet and with the fleet up; members_rss_mb: the member processes'.
The cluster start itself is printed apart (cluster_start_s).

    .venv/bin/python benchmarks/placement_cost.py --members 30 --workers 2
    .venv/bin/python benchmarks/placement_cost.py --members 1000 --per-process 100 --partitions 1000

Last line: one JSON object {"members", "here", "ray"}.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import uuid
from pathlib import Path

import psutil

from testbed.brokers.cluster import KafkaCluster
from testbed.children import terminate_as_interrupt
from testbed.fleet import Fleet
from testbed.history.harness import HarnessLog
from testbed.members.spec import MemberSpec
from testbed.placement.cluster import PlacedEntry, RayPlacer
from testbed.placement.local import LocalRayCluster
from testbed.run.layout import RunDir
from testbed.waits import wait_until

SPEC = MemberSpec(name="bench", client="confluent-kafka", assignors=["range"])


def ray_rss_mb() -> float:
    total = 0
    for proc in psutil.process_iter(["cmdline", "memory_info"]):
        line = " ".join(proc.info["cmdline"] or [])
        if "ray/core/src" in line or "ray::" in line or "/ray/_private/" in line or "ray/dashboard" in line \
                or "ray/autoscaler" in line:
            total += proc.info["memory_info"].rss if proc.info["memory_info"] else 0
    return round(total / 1e6, 1)


def members_rss_mb() -> float:
    total = 0
    for proc in psutil.process_iter(["cmdline", "memory_info"]):
        if any(a.startswith("testbed.members.") for a in proc.info["cmdline"] or []):
            total += proc.info["memory_info"].rss if proc.info["memory_info"] else 0
    return round(total / 1e6, 1)


def started(run_dir: RunDir, count: int) -> bool:
    logs = list(run_dir.members.glob("*.jsonl"))
    return len(logs) == count and all(p.stat().st_size and '"started"' in p.read_text() for p in logs)


def one_fleet(cluster: KafkaCluster, members: int, per_process: int, partitions: int, idle_s: float,
              address: str | None) -> dict:
    topic = f"bench-{uuid.uuid4().hex[:6]}"
    cluster.admin().create_topic(topic, partitions, 1)
    me = psutil.Process()
    with tempfile.TemporaryDirectory(prefix="placement-cost-") as tmp:
        run_dir = RunDir(Path(tmp)).create()
        harness = HarnessLog(run_dir.harness_log)
        placer = None
        out: dict = {}
        try:
            if address is not None:
                placer = RayPlacer.connect(address)
                entries = [PlacedEntry("fleet.0", "spread")]
                placer.check(entries, brokers_on_loopback=True)
                placer.prepare(entries, [SPEC])
                placer.begin(run_dir, harness)
                out["ray_rss_mb_idle"] = ray_rss_mb()
            with Fleet(cluster.bootstrap_servers, f"g-{topic}", [topic], run_dir, harness, placer=placer) as fleet:
                cpu0, t0 = sum(me.cpu_times()[:2]), time.monotonic()
                fleet.start(SPEC, members, per_process)
                wait_until(lambda: started(run_dir, members), timeout_s=600, interval_s=0.1,
                           what=f"{members} members' started events")
                out["start_s"] = round(time.monotonic() - t0, 2)
                out["members_per_s"] = round(members / out["start_s"], 1)
                fleet.wait_stable(members, timeout_s=600)
                out["stable_s"] = round(time.monotonic() - t0, 2)
                out["harness_cpu_s"] = round(sum(me.cpu_times()[:2]) - cpu0, 2)
                cpu1 = sum(me.cpu_times()[:2])
                time.sleep(idle_s)
                out["idle_harness_cpu_pct"] = round(100 * (sum(me.cpu_times()[:2]) - cpu1) / idle_s, 1)
                out["members_rss_mb"] = members_rss_mb()
                if placer is not None:
                    out["ray_rss_mb_with_fleet"] = ray_rss_mb()
        finally:
            if placer is not None:
                placer.close()
            harness.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2, help="worker nodes beside the head")
    parser.add_argument("--per-process", type=int, default=1, help="members hosted in each process")
    parser.add_argument("--partitions", type=int, default=60)
    parser.add_argument("--idle", type=float, default=10.0)
    args = parser.parse_args()
    terminate_as_interrupt()
    with KafkaCluster(brokers=1) as cluster:
        here = one_fleet(cluster, args.members, args.per_process, args.partitions, args.idle, None)
        print("here", here, flush=True)
        t0 = time.monotonic()
        with LocalRayCluster(labels=[{"worker": str(i)} for i in range(args.workers)]) as ray_cluster:
            cluster_start_s = round(time.monotonic() - t0, 1)
            on_ray = one_fleet(cluster, args.members, args.per_process, args.partitions, args.idle,
                               ray_cluster.address)
        on_ray["cluster_start_s"] = cluster_start_s
        print("ray", on_ray, flush=True)
    print(json.dumps({"members": args.members, "per_process": args.per_process, "workers": args.workers,
                      "here": here, "ray": on_ray}))


if __name__ == "__main__":
    main()
