"""What the analysis service saves a run: the wall time of a process that has one run analysed, in its own process
(``TESTBED_ANALYSIS_SERVICE=false``: a Spark JVM started for it), on a service it starts (the first run after a
quiet time), and on the warm service (every run after); and the service's resident memory (its Python, its Spark
JVM and Spark's Python workers) right after the first analysis, at its peak during the warm ones, and a while after
the last (``--idle-wait``: what an idle service keeps).

Each process is ``python -c 'analyse_run(copy)'`` on a fresh copy of the run, so it pays what a run's process pays
for its analysis: the interpreter, the imports, Spark or the service, the analysis. The service is one of its own
(a distinct idle time is a distinct place) and is ended at the end. The run is a saved run directory
(``--run reports/<run>``), or by default a synthetic one of ``--records`` processed records (``analysis_scale.py``'s
generator).

    .venv/bin/python benchmarks/analysis_service.py --repeat 5

Last line: one JSON object (medians of the repeated ones).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from analysis_scale import PeakRss, tree_rss_mb, write_history  # noqa: E402
from machine_speed import reference  # noqa: E402

from testbed.analysis.service import stop_services  # noqa: E402
from testbed.analysis.service.place import SESSION_ENV, ServicePlace, services_root  # noqa: E402

ANALYSE = "import sys; from testbed.analysis.service import analyse_run; analyse_run(sys.argv[1])"


def one(source: Path, work: Path, env: dict[str, str], service_pid: int | None = None) -> dict:
    run = work / f"run-{uuid.uuid4().hex[:8]}"
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("analysis", "report.html", "result.json"))
    with PeakRss(service_pid) if service_pid is not None else contextlib.nullcontext() as peak:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", ANALYSE, str(run)], env=env, check=True, capture_output=True)
        wall = time.perf_counter() - t0
    return {"wall_s": round(wall, 2), **({"service_peak_rss_mb": round(peak.peak, 1)} if peak else {})}


def service_of(session: str) -> int | None:
    for folder in services_root().iterdir():
        state = ServicePlace(folder).state()
        if state is not None and state.session == session and state.alive():
            return state.pid
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="a saved run directory (default: a synthetic one)")
    parser.add_argument("--records", type=int, default=10_000, help="the synthetic run's processed records")
    parser.add_argument("--repeat", type=int, default=5, help="repeats of the own-process and warm measurements")
    parser.add_argument("--idle-wait", type=float, default=45.0,
                        help="seconds after the last analysis before the resident memory is read again")
    args = parser.parse_args()
    machine = reference()
    session = f"benchmark:{uuid.uuid4().hex}"
    base = {**os.environ, SESSION_ENV: session, "TESTBED_ANALYSIS_SERVICE_IDLE_S": f"{600 + os.getpid() % 1000 / 1000}"}
    own = {**base, "TESTBED_ANALYSIS_SERVICE": "false"}
    try:
        with tempfile.TemporaryDirectory(prefix="analysis-service-") as tmp:
            work = Path(tmp)
            source = args.run
            if source is None:
                source = work / "source"
                write_history(source, args.records)
            here = [one(source, work, own) for _ in range(args.repeat)]
            first = one(source, work, base)
            pid = service_of(session)
            if pid is None:
                raise SystemExit("no analysis service answered for this benchmark's session")
            idle_mb = round(tree_rss_mb(pid), 1)
            warm = [one(source, work, base, pid) for _ in range(args.repeat)]
            time.sleep(args.idle_wait)
            rested_mb = round(tree_rss_mb(pid), 1)
    finally:
        stop_services(session=session)
    for name, rows in (("own process", here), ("service, first", [first]), ("service, warm", warm)):
        for row in rows:
            print(name, row)
    print(json.dumps({
        "run": str(args.run) if args.run else f"synthetic, {args.records} records", "machine": machine,
        "own_process_s": statistics.median(r["wall_s"] for r in here),
        "service_first_s": first["wall_s"],
        "service_warm_s": statistics.median(r["wall_s"] for r in warm),
        "service_idle_rss_mb": idle_mb,
        "service_peak_rss_mb": max(r["service_peak_rss_mb"] for r in warm),
        f"service_rss_mb_{args.idle_wait:.0f}s_after": rested_mb,
    }))


if __name__ == "__main__":
    main()
