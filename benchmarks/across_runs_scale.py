"""How `testbed analyse <folder>` scales with the number of runs: the one Spark job that builds the runs table,
the changes between revisions, and the trends page, over N synthetic runs.

Each synthetic run holds what a real analysed run holds for this job (result.json, scenario.yaml and
analysis/metrics.json with every metric of the catalog and a members block of --members members), spread over
10 configurations, 5 revisions and 3 trials each; one revision in one configuration pauses twice as long, so
that the changes are not trivially empty.

    .venv/bin/python benchmarks/across_runs_scale.py [--runs 100 1000] [--members 50] [--keep DIR] [--open]

Last line: {"runs", "collect_s", "changes_s", "render_s", "page_mb", "changes"} for the largest size (open_s too
with --open: headless Chromium loading the page).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from pathlib import Path

from testbed.analysis.runs.across_runs import changes, collect_runs
from testbed.analysis.spark.session import get_spark, stop_spark
from testbed.report.browser import check_page
from testbed.report.trends import render_trends
from testbed.analysis.catalog import CATALOG

CONFIGURATIONS, REVISIONS, TRIALS = 10, 5, 3


def write_runs(root: Path, runs: int, members: int) -> None:
    rng = random.Random(7)
    member_block = {f"m{i}": {"client": "confluent-kafka", "client_version": "2.16.1", "group_protocol": "classic"}
                    for i in range(members)}
    for i in range(runs):
        configuration, revision, trial = i % CONFIGURATIONS, (i // CONFIGURATIONS) % REVISIONS, i % TRIALS + 1
        run = root / f"run-{i:05d}"
        (run / "analysis").mkdir(parents=True)
        slow = 2.0 if (configuration, revision) == (0, REVISIONS - 1) else 1.0
        (run / "result.json").write_text(json.dumps({
            "scenario": f"scenario-{configuration}", "run_dir": str(run), "status": "pass",
            "started_ms": 1_790_000_000_000 + i * 60_000,
            "parameters": {"assignor": "cooperative-sticky", "trial": trial}, "testbed_revision": f"rev{revision}"}))
        (run / "scenario.yaml").write_text("name: s\ncluster:\n  kafka_version: 4.3.1\n")
        metrics = {name: {"value": rng.uniform(900, 1100) * (slow if "pause" in name else 1.0), "unit": unit}
                   for name, unit in CATALOG.items()}
        (run / "analysis" / "metrics.json").write_text(json.dumps({
            "config": {"protocol": "cooperative", "members": member_block}, "metrics": metrics}))


def measure(runs: int, members: int, keep: Path | None, open_page: bool) -> dict:
    root = keep / f"runs-{runs}" if keep else Path(tempfile.mkdtemp(prefix="testbed-across-runs-"))
    try:
        write_runs(root, runs, members)
        spark = get_spark()
        started = time.monotonic()
        table = collect_runs(spark, root)
        collect_s = time.monotonic() - started
        started = time.monotonic()
        found = changes(table)
        changes_s = time.monotonic() - started
        started = time.monotonic()
        page = render_trends(table, found, root / "trends.html", f"{runs} runs")
        result = {"runs": len(table), "collect_s": round(collect_s, 2), "changes_s": round(changes_s, 2),
                  "render_s": round(time.monotonic() - started, 2), "page_mb": round(page.stat().st_size / 1e6, 2),
                  "changes": len(found)}
        if open_page:
            started = time.monotonic()
            check = check_page(page)
            result.update(open_s=round(time.monotonic() - started, 2), charts=check.charts, drawn=check.drawn,
                          script_errors=len(check.errors))
        return result
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--members", type=int, default=50)
    ap.add_argument("--keep", type=Path)
    ap.add_argument("--open", action="store_true")
    args = ap.parse_args()
    try:
        results = [measure(n, args.members, args.keep, args.open) for n in args.runs]
    finally:
        stop_spark()
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
