"""What a broker's JVM options cost: CPU of one broker from start to ready, and over a while idle after, with the
JVM's defaults and with each ``TESTBED_BROKER_JAVA_OPTS`` given (C1 only, ``-XX:TieredStopAtLevel=1``, is the
setting's default; "" gives the JVM's own).

    .venv/bin/python benchmarks/broker_jvm.py --repeat 3
    .venv/bin/python benchmarks/broker_jvm.py --opts "" "-XX:TieredStopAtLevel=1" --idle-s 30

The options are tried in turn, ``--repeat`` rounds, each a new single-broker cluster. CPU is the broker process's
(its JVM, read from /proc on this host: containers run on host networking and share the host's process table).
Last line: one JSON object, per option set the medians of wall seconds to ready, core-seconds to ready and
core-seconds idle.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import psutil

from testbed.brokers.cluster import KafkaCluster
from testbed.settings import ENV_PREFIX, settings

OPTS_ENV = f"{ENV_PREFIX}BROKER_JAVA_OPTS"


def _brokers() -> dict[int, psutil.Process]:
    found = {}
    for process in psutil.process_iter(["cmdline"]):
        if "kafka.Kafka" in (process.info["cmdline"] or []):
            found[process.pid] = process
    return found


def _cpu(processes: list[psutil.Process]) -> float:
    return sum(sum(p.cpu_times()[:2]) for p in processes)


def measure(opts: str, idle_s: float) -> dict[str, float]:
    os.environ[OPTS_ENV] = opts
    settings.cache_clear()
    before = set(_brokers())
    start = time.monotonic()
    with KafkaCluster(brokers=1):
        ready_s = time.monotonic() - start
        mine = [p for pid, p in _brokers().items() if pid not in before]
        at_ready = _cpu(mine)
        time.sleep(idle_s)
        idle = _cpu(mine) - at_ready
    return {"ready_s": round(ready_s, 2), "cpu_to_ready_s": round(at_ready, 2), "cpu_idle_s": round(idle, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opts", nargs="+", default=["", "-XX:TieredStopAtLevel=1"],
                        help="option sets to compare (\"\": the JVM's defaults)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the option sets")
    parser.add_argument("--idle-s", type=float, default=30.0, help="seconds measured idle after ready")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, float]]] = {opts: [] for opts in args.opts}
    for _ in range(args.repeat):
        for opts in args.opts:  # alternating, so that a change of the machine's load falls on every set
            runs[opts].append(measure(opts, args.idle_s))
            print(repr(opts), runs[opts][-1], flush=True)
    summary = {opts or "(JVM defaults)": {key: statistics.median(m[key] for m in found) for key in found[0]}
               for opts, found in runs.items()}
    print(json.dumps({"idle_s": args.idle_s, "medians": summary}))


if __name__ == "__main__":
    main()
