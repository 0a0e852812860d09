"""A broker's answers beside a busy fleet: produce round trips (acks=all, one record, flushed) to a one-broker cluster
while N busy processes run beside it, each in a session of its own as testbed starts members, for each CPU placement
of the broker's container (``TESTBED_BROKER_CPU_SHARES``; 0 is the engine's default placement, docs/cluster.md).

    .venv/bin/python benchmarks/broker_cpu.py [--busy 30] [--seconds 25] [--shares 32768 0]

One line per placement: round trips made, median, 90th percentile and longest round trip in ms (a round trip
still open at the end of the window counts with the time it had waited). Last line: all of them as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def busy(until: float) -> None:
    """One member's worth of CPU demand: a session of its own, spinning until ``until``."""
    os.setsid()
    while time.time() < until:
        pass


def measure(seconds: float, busy_processes: int) -> dict[str, float]:
    """Round trips to a new one-broker cluster with ``busy_processes`` spinning beside it (this process's settings)."""
    import multiprocessing

    from confluent_kafka import Producer

    from testbed.brokers.cluster import KafkaCluster

    with KafkaCluster(brokers=1) as cluster:
        cluster.create_topic("round-trips", 1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 0})
        producer.produce("round-trips", b"warm-up")
        producer.flush(30)
        until = time.time() + seconds + 5
        spinners = [multiprocessing.Process(target=busy, args=(until,)) for _ in range(busy_processes)]
        for p in spinners:
            p.start()
        time.sleep(3)  # every spinner running
        trips: list[float] = []
        end = time.monotonic() + seconds
        while (now := time.monotonic()) < end:
            producer.produce("round-trips", b"x")
            producer.flush(max(0.1, end - now))
            trips.append((time.monotonic() - now) * 1000)
            time.sleep(0.2)
        for p in spinners:
            p.join()
    trips.sort()
    return {"round_trips": len(trips), "median_ms": round(statistics.median(trips), 1),
            "p90_ms": round(trips[int(0.9 * (len(trips) - 1))], 1), "max_ms": round(trips[-1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", type=int, default=30, help="busy processes beside the broker")
    parser.add_argument("--seconds", type=float, default=25.0, help="how long to measure each placement")
    parser.add_argument("--shares", type=int, nargs="+", default=[32768, 0],
                        help="TESTBED_BROKER_CPU_SHARES values to compare (0: the engine's default placement)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: one placement, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.seconds, args.busy)))
        return
    results = {}
    for shares in args.shares:
        # A process per placement: settings are read once per process.
        proc = subprocess.run([sys.executable, __file__, "--one", "--busy", str(args.busy), "--seconds",
                               str(args.seconds)], env={**os.environ, "TESTBED_BROKER_CPU_SHARES": str(shares)},
                              capture_output=True, text=True, check=True)
        results[shares] = json.loads(proc.stdout.strip().splitlines()[-1])
        r = results[shares]
        print(f"shares={shares:>6} busy={args.busy}: {r['round_trips']} round trips, median {r['median_ms']} ms, "
              f"p90 {r['p90_ms']} ms, longest {r['max_ms']} ms", flush=True)
    print(json.dumps({"busy": args.busy, "seconds": args.seconds, "by_shares": results}))


if __name__ == "__main__":
    main()
