"""What testbed adds around a scenario: ``testbed run <scenario>``'s wall time against the scenario's own span
(its first step's start to its last step's end, from the run's harness history), split into the part before the
first step (the command's start, the cluster, the fleet, the load) and the part after the last (members stopped,
the analysis, the checkers, the report).

Runs, in order: one with the analysis in the run's own process (``TESTBED_ANALYSIS_SERVICE=false``), one that starts
the analysis service (a service of its own: nothing warm from earlier), then ``--repeat`` on that warm service. The
service is ended at the end. The image and the client installations are assumed built (``./setup.sh``).

    .venv/bin/python benchmarks/run_overhead.py --repeat 3
    .venv/bin/python benchmarks/run_overhead.py --scenario scenarios/zombie-member.yaml --repeat 2

With ``--against CHECKOUT`` it compares this checkout with another (a worktree of an earlier revision, say) on a
machine whose speed drifts: each on a warm service of its own (one warm-up run each), then ``--repeat`` rounds
of one run each, the order alternating; it prints every pair and the medians.

    .venv/bin/python benchmarks/run_overhead.py --against /tmp/before-worktree --repeat 4

Last line: one JSON object (the warm runs' medians, and the machine's speed then: benchmarks/machine_speed.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from testbed.analysis.service import stop_services  # noqa: E402
from testbed.analysis.service.place import SESSION_ENV  # noqa: E402
from testbed.history.events import Action  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_speed import reference  # noqa: E402

TESTBED = Path(sys.executable).with_name("testbed")


def one(scenario: Path, reports: Path, env: dict[str, str], cwd: Path | None = None) -> dict:
    """One run; ``cwd``: the checkout whose code it runs (the analysis service is started with ``python -m``, which
    puts its working directory first on its path, ahead of ``PYTHONPATH``)."""
    t0 = time.time()
    done = subprocess.run([str(TESTBED), "run", str(scenario), "--reports", str(reports)], env=env, cwd=cwd,
                          capture_output=True, text=True)
    t1 = time.time()
    (harness,) = [p for p in reports.glob("*/history/harness.jsonl") if p.stat().st_mtime >= t0]
    actions = [json.loads(line) for line in harness.read_text().splitlines()]
    steps = [a["ts_ms"] / 1000 for a in actions if a["kind"] in (Action.STEP_START, Action.STEP_END)]
    status = json.loads((harness.parent.parent / "result.json").read_text())["status"]
    wall, span = t1 - t0, max(steps) - min(steps)
    return {"status": status, "exit": done.returncode, "wall_s": round(wall, 1), "scenario_s": round(span, 1),
            "overhead_s": round(wall - span, 1), "before_first_step_s": round(min(steps) - t0, 1),
            "after_last_step_s": round(t1 - max(steps), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=Path("scenarios/rolling-upgrade.yaml"),
                        help="the scenario (default: the README's main job)")
    parser.add_argument("--repeat", type=int, default=3, help="runs on the warm service (rounds with --against)")
    parser.add_argument("--against", type=Path, help="another checkout to alternate with, each on its own service")
    args = parser.parse_args()
    machine = reference()
    if args.against is not None:
        alternate(args.scenario.resolve(),
                  {"this": Path(__file__).resolve().parents[1], "against": args.against.resolve()},
                  args.repeat, machine)
        return
    session = f"benchmark:{uuid.uuid4().hex}"
    base = {**os.environ, SESSION_ENV: session, "TESTBED_ANALYSIS_SERVICE_IDLE_S": f"{600 + os.getpid() % 1000 / 1000}"}
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="run-overhead-") as tmp:
            reports = Path(tmp)
            rows.append(("own process", one(args.scenario, reports, {**base, "TESTBED_ANALYSIS_SERVICE": "false"})))
            rows.append(("service, first", one(args.scenario, reports, base)))
            rows += [("service, warm", one(args.scenario, reports, base)) for _ in range(args.repeat)]
    finally:
        stop_services(session=session)
    for name, row in rows:
        print(name, row)
    warm = [row for name, row in rows if name == "service, warm"]
    print(json.dumps({
        "scenario": str(args.scenario), "machine": machine,
        "own_process": rows[0][1], "service_first": rows[1][1],
        "service_warm_median": {k: statistics.median(r[k] for r in warm) for k in
                                ("wall_s", "scenario_s", "overhead_s", "before_first_step_s", "after_last_step_s")},
    }))


def alternate(scenario: Path, checkouts: dict[str, Path], rounds: int, machine: dict) -> None:
    """Runs of each checkout (``PYTHONPATH``), each on its own warm service, in alternating order; ``machine``: the
    machine's speed, printed with the medians."""
    session = f"benchmark:{uuid.uuid4().hex}"
    base = {**os.environ, SESSION_ENV: session, "TESTBED_ANALYSIS_SERVICE_IDLE_S": f"{600 + os.getpid() % 1000 / 1000}"}
    envs = {name: {**base, "PYTHONPATH": str(path.resolve())} for name, path in checkouts.items()}
    rows: dict[str, list[dict]] = {name: [] for name in checkouts}
    try:
        with tempfile.TemporaryDirectory(prefix="run-overhead-") as tmp:
            for name, env in envs.items():  # each code version has a service of its own: warmed here
                print("warm-up", name, one(scenario, Path(tmp) / f"warm-{name}", env, checkouts[name]), flush=True)
            for i in range(rounds):
                for name in (list(envs) if i % 2 == 0 else list(reversed(envs))):
                    rows[name].append(one(scenario, Path(tmp) / f"{name}-{i}", envs[name], checkouts[name]))
                    print(i, name, rows[name][-1], flush=True)
    finally:
        stop_services(session=session)
    print(json.dumps({"machine": machine, **{name: {k: statistics.median(r[k] for r in runs) for k in
                                                    ("overhead_s", "before_first_step_s", "after_last_step_s")}
                                             for name, runs in rows.items()}}))


if __name__ == "__main__":
    main()
