"""Large groups: time to stable, and what each member costs (memory, CPU, threads, sockets), by fleet size.

For each fleet size, one group of that many members on one topic (its own 1-broker KafkaCluster):
- stable_s: from ``Fleet.start`` to the admin API showing the group STABLE with every member in it
  and every partition owned once (``Fleet.wait_stable``, polled every 0.5 s);
- per member, over every member process and host process (and a Java runner's JVM), once stable (or at
  the timeout): rss_mb (psutil RSS), cpu_s_to_stable (CPU seconds spent from start to stable), idle_cpu_pct
  (CPU over the next --idle seconds with no load, % of one core), threads, fds (open descriptors: sockets,
  history files, pipes);
- the broker's CPU over the same idle window (% of one core) and its RSS.
``--per-process N`` runs N members per process (confluent-kafka: threads of ``testbed.members.host``; aiokafka:
consumers on the host's one event loop; Java: KafkaConsumers in one JVM, ``testbed.members.java.host``), the way a
1,000-member group fits one machine. A size that does not become stable reports stable_s null with the
reason, and its costs at the timeout: they show what limits it.
Run: .venv/bin/python benchmarks/fleet_scale.py [--python 10,25,50] [--aiokafka 100] [--java 10,25] [--partitions 100]
     [--per-process 1] [--assignor range|cooperative-sticky|consumer] [--timeout 240] [--idle 10]
Last line: one JSON object {"members", "stable_s", "rss_mb_per_member", "java_rss_mb_per_member", "java_members",
"aiokafka_rss_mb_per_member", "aiokafka_members"} for the largest confluent-kafka fleet that became stable; Java and
aiokafka at that size if measured, else at their largest measured size.
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

from testbed.children import terminate_as_interrupt
from testbed.brokers.cluster import KafkaCluster
from testbed.errors import WaitTimeout
from testbed.fleet import Fleet
from testbed.fleet.usage import tree, usage
from testbed.run.layout import RunDir
from testbed.members.spec import MemberSpec


def spec_for(client: str, assignor: str) -> MemberSpec:
    protocol = {"group_protocol": "consumer"} if assignor == "consumer" else {"assignors": [assignor]}
    return MemberSpec(name=f"bench-{client}", client=client, **protocol)


def tree_rss_mb(pid: int) -> float | None:
    """RSS of a process and all its descendants, in MB (10^6 bytes); None if it is gone."""
    procs = tree(pid)
    try:
        return sum(p.memory_info().rss for p in procs) / 1e6 if procs else None
    except psutil.NoSuchProcess:
        return None


def broker_process(cluster: KafkaCluster) -> psutil.Process | None:
    pid = cluster.nodes[0].docker_state().get("Pid")
    try:
        return psutil.Process(int(pid)) if pid else None
    except (psutil.NoSuchProcess, ValueError):
        return None


def measure(cluster: KafkaCluster, client: str, members: int, partitions: int, root: Path,
            timeout_s: float, per_process: int = 1, assignor: str = "range", idle_s: float = 10.0) -> dict:
    topic = cluster.create_topic(f"fleet-scale-{client}-{members}-{uuid.uuid4().hex[:6]}", partitions,
                                 timeout_s=max(30.0, partitions / 100))
    run_dir = RunDir(root / f"{client}-{members}")
    spec = spec_for(client, assignor)
    result: dict = {"client": client, "members": members, "partitions": partitions, "assignor": assignor,
                    "members_per_process": per_process}
    with Fleet(cluster.bootstrap_servers, f"g-scale-{uuid.uuid4().hex[:6]}", [topic], run_dir) as fleet:
        fleet.prepare(spec)  # client installs are not start-up time
        start = time.monotonic()
        fleet.start(spec, members, per_process)
        try:
            fleet.wait_stable(timeout_s=timeout_s)
            result["stable_s"] = round(time.monotonic() - start, 2)
        except WaitTimeout as exc:
            result["stable_s"] = None
            result["unstable_reason"] = str(exc).splitlines()[0]
        procs = [p for proc in fleet.processes() for p in tree(proc.pid)]
        at_stable = usage(procs)
        broker = broker_process(cluster)
        broker_before = usage([broker]) if broker else None
        time.sleep(idle_s)  # the idle window is the measurement, not a wait for something
        after = usage(procs)
        broker_after = usage([broker]) if broker else None
        alive = len(fleet.live())
        result["alive"] = alive
        result["processes"] = len(fleet.processes())
        per = lambda value, digits=1: round(value / alive, digits) if alive else None  # noqa: E731
        result["rss_mb_per_member"] = per(after["rss_mb"])
        result["cpu_s_to_stable_per_member"] = per(at_stable["cpu_s"], 2)
        result["idle_cpu_pct_per_member"] = per((after["cpu_s"] - at_stable["cpu_s"]) / idle_s * 100, 2)
        result["idle_cpu_cores"] = round((after["cpu_s"] - at_stable["cpu_s"]) / idle_s, 2)
        result["threads_per_member"] = per(after["threads"])
        result["fds_per_member"] = per(after["fds"])
        if broker_before and broker_after:
            result["broker_idle_cpu_pct"] = round((broker_after["cpu_s"] - broker_before["cpu_s"]) / idle_s * 100)
            result["broker_rss_mb"] = round(broker_after["rss_mb"])
        # kept under their old names (earlier results compare against them): RSS of each member's process tree
        rss = [r for r in (tree_rss_mb(p.pid) for p in fleet.live() if p.pid) if r is not None]
        result["rss_mb_mean"] = result["rss_mb_per_member"] if per_process > 1 else (
            round(statistics.fmean(rss), 1) if rss else None)
        result["rss_mb_max"] = None if per_process > 1 else (round(max(rss), 1) if rss else None)
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
    """The largest stable confluent-kafka fleet; Java and aiokafka beside it at the same size, else at their largest
    measured size."""
    python = [r for r in results if r["client"] == "confluent-kafka" and r["stable_s"] is not None]
    if not python:
        return {"members": "unknown", "stable_s": "unknown", "rss_mb_per_member": "unknown",
                "java_rss_mb_per_member": "unknown", "reason": "no Python fleet became stable"}
    best = max(python, key=lambda r: r["members"])
    out = {"members": best["members"], "stable_s": best["stable_s"], "rss_mb_per_member": best["rss_mb_mean"]}
    for client, prefix, flag in (("java", "java", "--java"), ("aiokafka", "aiokafka", "--aiokafka")):
        measured = [r for r in results if r["client"] == client and r["rss_mb_mean"] is not None]
        if not measured:
            out[f"{prefix}_rss_mb_per_member"] = "unknown"
            out[f"{prefix}_reason"] = f"no {client} fleet measured ({flag})"
            continue
        same = [r for r in measured if r["members"] == best["members"]]
        beside = same[0] if same else max(measured, key=lambda r: r["members"])
        out[f"{prefix}_rss_mb_per_member"] = beside["rss_mb_mean"]
        out[f"{prefix}_members"] = beside["members"]  # says when it was measured at another size
        out[f"{prefix}_stable_s"] = beside["stable_s"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=counts, default=counts("10,25,50"), help="confluent-kafka fleet sizes")
    parser.add_argument("--aiokafka", type=counts, default=[], help="aiokafka fleet sizes (default: none)")
    parser.add_argument("--java", type=counts, default=counts("10,25"),
                        help="Java VerifiableConsumer fleet sizes (each member is a JVM; '' for none)")
    parser.add_argument("--partitions", type=int, default=100, help="partitions of each fleet's topic")
    parser.add_argument("--timeout", type=float, default=240.0, help="seconds to wait for a fleet to be stable")
    parser.add_argument("--per-process", type=int, default=1, help="members per process")
    parser.add_argument("--assignor", choices=("range", "cooperative-sticky", "consumer"), default="range",
                        help="classic assignor, or 'consumer' for the KIP-848 protocol")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of the idle window once stable")
    args = parser.parse_args()
    if args.per_process < 1:
        parser.error(f"--per-process must be at least 1, got {args.per_process}")
    terminate_as_interrupt()  # SIGTERM unwinds like Ctrl-C: fleet and cluster are cleaned up
    results = []
    with tempfile.TemporaryDirectory(prefix="fleet-scale-") as tmp, KafkaCluster(brokers=1) as cluster:
        plan = ([("confluent-kafka", n) for n in args.python] + [("aiokafka", n) for n in args.aiokafka]
                + [("java", n) for n in args.java])
        for client, members in plan:
            result = measure(cluster, client, members, args.partitions, Path(tmp), args.timeout,
                             args.per_process, args.assignor, args.idle)
            results.append(result)
            print(json.dumps(result), flush=True)
    print(json.dumps(summary(results)))


if __name__ == "__main__":
    main()
