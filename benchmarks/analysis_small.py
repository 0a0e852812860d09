"""What the analysis of one small run costs: wall time, CPU (this process and the Spark JVM), py4j round trips
and Spark jobs, for the first analysis in a new process (the session started just before) and the warm ones after.

Each analysis reads a fresh copy of the run, so none finds the outputs of another. The run is a saved run directory
(``--run reports/<run>``), or by default a synthetic one of ``--records`` processed records by ``--members`` members
(the generator of ``analysis_scale.py``: twice as many partitions as members, a re-delivered batch and a lost
tail). The defaults are issue 45's small run: about 10,000 records, 3 members (50 members: the synthetic run of
the figures before 2026-12-05). Several ``--records`` sizes (issue 45's small and medium runs: ``--records 10000
1000000``) are measured one after the other, each in a process of its own, so that each first analysis is a new
process's; the session is the one the analysis service starts (``get_spark()``), which analyses every run below
``LARGE_INPUT_BYTES`` of histories.

    .venv/bin/python benchmarks/analysis_small.py --repeat 5
    .venv/bin/python benchmarks/analysis_small.py --records 10000 1000000 --repeat 3
    .venv/bin/python benchmarks/analysis_small.py --run reports/<run> --repeat 5

Last line: one JSON object with the first analysis and the median of the warm ones (with several sizes: one
such object per size, under ``sizes``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import py4j.clientserver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_scale import write_history  # noqa: E402
from machine_speed import reference  # noqa: E402

from testbed.analysis import analyse  # noqa: E402
from testbed.analysis.spark.session import get_spark  # noqa: E402

ROUND_TRIPS = [0]
_send = py4j.clientserver.ClientServerConnection.send_command


def _counted(self, command):  # every py4j call of any thread
    ROUND_TRIPS[0] += 1
    return _send(self, command)


py4j.clientserver.ClientServerConnection.send_command = _counted


def cpu_s() -> float:
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        try:
            total += sum(child.cpu_times()[:2])
        except psutil.Error:
            pass
    return total


def jobs() -> int:
    return len(get_spark().sparkContext.statusTracker().getJobIdsForGroup())


def measure(source: Path, work: Path, i: int) -> dict:
    run = work / f"run-{i}"
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("analysis", "report.html", "result.json"))
    trips, job0, cpu0, t0 = ROUND_TRIPS[0], jobs(), cpu_s(), time.perf_counter()
    analyse(run)
    wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu_s() - cpu0, 2), "py4j_round_trips": ROUND_TRIPS[0] - trips,
            "spark_jobs": jobs() - job0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="a saved run directory (default: a synthetic one)")
    parser.add_argument("--records", type=int, nargs="+", default=[10_000],
                        help="the synthetic run's processed records (several: one process per size)")
    parser.add_argument("--members", type=int, default=3, help="the synthetic run's members (twice as many partitions)")
    parser.add_argument("--repeat", type=int, default=5, help="warm analyses after the first")
    args = parser.parse_args()
    if args.run is None and len(args.records) > 1:
        print(json.dumps({"sizes": [each_size(n, args) for n in args.records]}))
        return
    machine = reference()
    with tempfile.TemporaryDirectory(prefix="analysis-small-") as tmp:
        work = Path(tmp)
        source = args.run
        if source is None:
            source = work / "source"
            write_history(source, args.records[0], args.members)
        t0 = time.perf_counter()
        get_spark()
        session_s = time.perf_counter() - t0
        first = measure(source, work, 0)
        warm = [measure(source, work, i + 1) for i in range(args.repeat)]
    for i, m in enumerate([first, *warm]):
        print(("first" if i == 0 else f"warm {i}"), m)
    synthetic = f"synthetic, {args.records[0]} records, {args.members} members"
    summary = {"run": str(args.run) if args.run else synthetic, "machine": machine,
               "session_start_s": round(session_s, 2), "first": first,
               "warm_median": {k: statistics.median(m[k] for m in warm) for k in first} if warm else None}
    print(json.dumps(summary))


def each_size(records: int, args: argparse.Namespace) -> dict:
    """One size measured by this script in a process of its own (its lines shown once it ends); its summary."""
    command = [sys.executable, __file__, "--records", str(records), "--members", str(args.members),
               "--repeat", str(args.repeat)]
    child = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    print(child.stdout, end="", flush=True)
    return json.loads(child.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
