"""End to end on the session's broker: every run samples its host, and a pause says what happened.

Two static members (range, commits on revoke, session 6 s); m1 is stopped cleanly under load and not replaced.
A static member leaves no LeaveGroup behind, so its partitions wait for its session to expire and the rebalance
that follows: their pauses are m1's stop first, the rebalance contributing; m0's own partitions never blame
the stop. The host is sampled all along, so every pause knows whether the machine was saturated across it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from testbed.scenario.loader import expand

pytestmark = pytest.mark.integration

SCENARIO = """
name: stop-under-load
topics: [{name: events, partitions: 4}]
load: {topic: events, rate: 200, users: 2}
members:
  static: {client: confluent-kafka, assignors: [range], static: true, session_timeout_ms: 6000, commit_mode: on_revoke}
fleet: [{spec: static, count: 2}]
steps: [{wait_stable: {timeout_s: 60}}, {wait: {seconds: 2}}, {stop: {member: m1}}, {wait: {seconds: 9}},
        {drain: {timeout_s: 30}}]
expect: [lost_records == 0]
"""


def test_a_clean_stop_is_its_partitions_cause_and_the_host_is_sampled_throughout(tmp_path: Path, kafka_cluster,
                                                                               run_scenario) -> None:
    path = tmp_path / "stop-under-load.yaml"
    path.write_text(SCENARIO)
    (run,) = expand(path)
    result = run_scenario(run, tmp_path / "reports", cluster=kafka_cluster)
    assert result.status == "pass", result.reason
    run_dir = Path(result.run_dir)

    samples = [json.loads(line) for line in (run_dir / "history/host.jsonl").read_text().splitlines()]
    harness = [json.loads(line) for line in (run_dir / "history/harness.jsonl").read_text().splitlines()]
    start, end = harness[0]["ts_ms"], harness[-1]["ts_ms"]
    assert {s["name"] for s in samples} == {"host_sample"}
    # From the services' start to their end (run_start and run_end frame them, a few seconds apart at most).
    assert samples[0]["ts_ms"] - start < 5_000 and end - samples[-1]["ts_ms"] < 5_000
    assert len(samples) >= 2 * (end - start) / 1000, "fewer than two samples a second"
    for role in ("brokers", "members", "load"):  # each role's processes found (10 ms ticks: not every sample)
        assert any(s[f"{role}_cpu_pct"] > 0 for s in samples), f"no CPU of the {role} in any sample"

    metrics = json.loads((run_dir / "analysis/metrics.json").read_text())["metrics"]
    assert metrics["host_samples"]["value"] == len(samples)
    pauses = pd.read_parquet(run_dir / "analysis/tables/partition_pauses.parquet").query("kind == 'pause'")
    stop_ms = next(a["ts_ms"] for a in harness if a["kind"] == "member_stop" and a["target"] == "m1")
    stopped = pauses[(pauses["last_member"] == "m1") & (pauses["end_ms"] > stop_ms)]
    assert len(stopped), f"no pause of m1's partitions:\n{pauses}"
    assert stopped["pause_ms"].min() >= 4_000, "m1's partitions waited for its session to expire"
    assert set(stopped["cause"]) == {"member_stop"} and set(stopped["cause_target"]) == {"m1"}
    assert stopped["contributing"].fillna("").str.contains("rebalance:").all(), stopped[["cause", "contributing"]]
    assert "member_stop" not in set(pauses[pauses["last_member"] == "m0"]["cause"]), "m0 never stopped"
    assert pauses["host_saturated"].notna().all(), "a pause inside a sampled run with its host unknown"
    assert metrics["max_stop_pause_ms"]["value"] == int(stopped["pause_ms"].max())
    html = (run_dir / "report.html").read_text()
    assert "host CPU busy" in html  # the host's row of the report's time axis
