"""Benchmark of LoadGenerator: highest sustained produce rate and rate error at fixed targets.

    .venv/bin/python benchmarks/load_rate.py [--duration 10] [--bootstrap 127.0.0.1:PORT]

Without --bootstrap it starts a 1-broker KafkaCluster (testbed.brokers.cluster) for the duration.
Records are 200 bytes. The highest sustained rate is the achieved rate (acks / active time)
of a run asked for far more than the machine can do; the rate error is |achieved - target| /
target in %. The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from testbed.brokers.cluster import given_or_started
from testbed.run.layout import RunDir
from testbed.load import LoadGenerator, LoadSummary

PAYLOAD_BYTES = 200
PARTITIONS = 6
SATURATING_RATE = 40_000
ERROR_TARGETS = (1000, 5000, 10000)



def run_load(bootstrap: str, root: Path, rate: float, users: int, workers: int, duration_s: float) -> LoadSummary:
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
    try:
        run_dir = RunDir(root / topic)
        with LoadGenerator(run_dir, bootstrap_servers=bootstrap, topic=topic, rate=rate, users=users,
                           workers=workers, duration_s=duration_s, payload_bytes=PAYLOAD_BYTES,
                           key_space=10_000) as load:
            load.wait()
        summary = load.summary()
    finally:
        admin.delete_topics([topic])[topic].result(timeout=30)
    print(f"target {rate:>8.0f}/s users {users:>2} workers {workers}: achieved "
          f"{summary.achieved_rate or float('nan'):>8.0f}/s, acked {summary.acked}, failures {summary.failures}, "
          f"shortfall {summary.shortfall_pct if summary.shortfall_pct is not None else float('nan'):.2f}%",
          flush=True)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per run")
    parser.add_argument("--bootstrap", default=None, help="use this 127.x broker instead of starting one")
    args = parser.parse_args()
    with given_or_started(args.bootstrap) as bootstrap, tempfile.TemporaryDirectory(prefix="load-bench-") as tmp:
        root = Path(tmp)
        max_1 = run_load(bootstrap, root, SATURATING_RATE, 20, 0, args.duration)
        max_2 = run_load(bootstrap, root, SATURATING_RATE, 20, 2, args.duration)
        errors = {}
        for target in ERROR_TARGETS:
            errors[str(target)] = run_load(bootstrap, root, target, 10, 0, args.duration).rate_error_pct
    print(json.dumps({
        "max_rate_1proc": round(max_1.achieved_rate) if max_1.achieved_rate else None,
        "max_rate_2workers": round(max_2.achieved_rate) if max_2.achieved_rate else None,
        "rate_error_pct": {k: None if v is None else round(v, 2) for k, v in errors.items()},
    }))


if __name__ == "__main__":
    main()
