"""What testbed's Java agent costs a JVM consumer program: ns per record with and without it, paired.

One topic of --records records and 10 % more (100-byte JSON values with the 'ts' header testbed's producers write;
``instrument_overhead.produce``) is produced once into a 1-broker KafkaCluster this script starts (or --bootstrap).
Then ``benchmarks/java/ReadLoop.java`` (compiled once against the project's kafka-clients) reads --records of them in
a fresh group, once plainly and once under the agent (``-javaagent`` in JAVA_TOOL_OPTIONS, as a command member runs),
in pairs whose order alternates (--repeat pairs). A run's time is from its first record to its last (the JVM start,
the join and the close are not counted); each run under the agent must have recorded every record as processed
exactly once (``instrument_overhead.check_history``).

Cases: ``poll`` does nothing with a record (the agent's share of the time is largest); ``parse`` decodes each
value's "order" and commits synchronously after each batch, auto-commit off: the loop a service runs (issue 44's
aim: at most 5 %).

Run: .venv/bin/python benchmarks/java_agent_overhead.py [--records 1000000] [--repeat 5] [--cases poll,parse]
Last line: one JSON object {"records", "repeat", "cases": {case: {"plain_ns_per_record", "agent_ns_per_record",
"ratio", "pairs_ratio", "plain_cpu_ns_per_record", "agent_cpu_ns_per_record"}}} (medians over the pairs; ratio =
agent / plain ns per record).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instrument_overhead import check_history, produce  # noqa: E402

from testbed.brokers.cluster import given_or_started  # noqa: E402
from testbed.children import terminate_as_interrupt  # noqa: E402
from testbed.members.envs import java_classpath  # noqa: E402
from testbed.members.java.agent import agent_env, write_agent_config  # noqa: E402

SOURCE = Path(__file__).resolve().parent / "java" / "ReadLoop.java"
CASES = ("poll", "parse")
PROGRAM_TIMEOUT_S = 600


def run(classpath: str, case: str, bootstrap: str, topic: str, records: int, history: Path | None) -> dict:
    """One run: its ns and CPU ns per record. With ``history`` it runs under the agent and its history is checked."""
    command = ["java", "-cp", classpath, "ReadLoop", case, bootstrap, topic, str(records)]
    env = {k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"}
    if history is not None:
        config = history.with_suffix(".agent.properties")
        write_agent_config(config, member_id="bench", history_path=history, spec=None, command=command)
        env.update(agent_env(config, env))
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S)
    if out.returncode != 0:
        raise SystemExit(f"{case} ({'agent' if history else 'plain'}) failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if history is not None:
        check_history(history, records, case)
    return {"ns": result["seconds"] / result["records"] * 1e9, "cpu_ns": result["cpu_seconds"] / result["records"] * 1e9}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="pairs (plain, agent) per case")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if unknown := sorted(set(cases) - set(CASES)):
        parser.error(f"--cases: unknown {', '.join(unknown)}; known: {', '.join(CASES)}")
    terminate_as_interrupt()
    figures: dict[str, dict] = {}
    with given_or_started(args.bootstrap) as bootstrap, tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
        root = Path(tmp)
        kafka = java_classpath()
        subprocess.run(["javac", "-nowarn", "-cp", kafka, "-d", str(root), str(SOURCE)], check=True)
        classpath = f"{root}:{kafka}"
        topic = produce(bootstrap, args.records + args.records // 10)
        for case in cases:
            pairs = []
            for i in range(args.repeat):
                history = root / f"{case}-{i}.jsonl"
                order = (None, history) if i % 2 == 0 else (history, None)  # alternate which goes first
                runs = {("agent" if h else "plain"): run(classpath, case, bootstrap, topic, args.records, h)
                        for h in order}
                print(f"{case} pair {i + 1}: plain {runs['plain']['ns']:.0f} ns/record, agent {runs['agent']['ns']:.0f} "
                      f"ns/record ({runs['agent']['ns'] / runs['plain']['ns']:.3f})", flush=True)
                pairs.append(runs)

            def median(kind: str, key: str) -> float:
                return statistics.median(p[kind][key] for p in pairs)

            figures[case] = {
                "plain_ns_per_record": round(median("plain", "ns"), 1),
                "agent_ns_per_record": round(median("agent", "ns"), 1),
                "ratio": round(median("agent", "ns") / median("plain", "ns"), 3),
                "pairs_ratio": [round(p["agent"]["ns"] / p["plain"]["ns"], 3) for p in pairs],
                "plain_cpu_ns_per_record": round(median("plain", "cpu_ns"), 1),
                "agent_cpu_ns_per_record": round(median("agent", "cpu_ns"), 1),
            }
            print(f"{case}: {figures[case]}", flush=True)
    print(json.dumps({"records": args.records, "repeat": args.repeat, "cases": figures}))


if __name__ == "__main__":
    main()
