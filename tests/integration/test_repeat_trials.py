"""`testbed run --repeat 2`: two full runs on real brokers, a trials summary with medians and intervals.

The trials run on the session's broker (``cluster: {bootstrap_servers: ...}``): what is tested is the series and
its summary, not a cluster start, which other tests cover."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]

TINY = """
name: tiny-trials
cluster: {bootstrap_servers: "BOOTSTRAP"}
topics: [{name: events, partitions: 2}]
load: {topic: events, rate: 100, users: 1}
members:
  main: {client: confluent-kafka, assignors: [range], commit_mode: on_revoke}
fleet: [{spec: main, count: 2}]
steps:
  - wait_stable: {timeout_s: 60}
  - wait: {seconds: 2}
  - drain: {timeout_s: 60}
expect: [lost_records == 0]
"""


def test_repeat_runs_every_trial_and_summarises_them(kafka_cluster, tmp_path: Path) -> None:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(TINY.replace("BOOTSTRAP", kafka_cluster.bootstrap_servers))
    reports = tmp_path / "reports"
    proc = subprocess.run([sys.executable, "-m", "testbed.cli", "run", str(scenario), "--repeat", "2", "--judge",
                           "median", "--reports", str(reports)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [json.loads(p.read_text()) for p in sorted(reports.glob("*tiny-trials*/result.json"))]
    assert sorted(r["parameters"]["trial"] for r in results) == [1, 2]
    assert all((Path(r["run_dir"]) / "report.html").is_file() for r in results), "every trial gets its report"
    (summary_path,) = reports.glob("trials-tiny-trials-*/summary.json")
    summary = json.loads(summary_path.read_text())
    (group,) = summary["groups"]
    acked = group["metrics"]["records_acked"]
    assert acked["n"] == 2 and acked["unknown"] == 0 and acked["low"] <= acked["median"] <= acked["high"]
    assert group["metrics"]["lost_records"]["values"] == [0.0, 0.0]
    assert (summary_path.parent / "summary.html").is_file()
