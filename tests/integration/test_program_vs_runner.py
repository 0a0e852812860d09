"""An instrumented program and testbed's own runner, in the same scenario shape, count the same.

One shape, run twice on the session's brokers: three members on range (eager) under load, a rolling bounce of
all three, the drain. Once the members are testbed's confluent runner (``commit_mode: sync``: a commit after
each batch and on revoke), once they are ``programs/confluent_batch_commit.py``, the same loop written as a
user would, run unchanged under the instrumentation. A clean bounce of such a loop loses nothing and processes
nothing twice, whoever wrote it: both runs must say so, and so must a recount of each run's raw history in
plain Python (ack logs against processed events), which must also equal every count the analysis reported.
The load runs a few seconds past the bounce: the drain stops it, and a last life assigned just before that may
find its partitions already processed to their end, so without them it would process nothing, rightly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from history_recount import jsonl, recount, reported

from testbed.scenario.loader import load

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).parent / "programs" / "confluent_batch_commit.py"
SHAPE = """
name: {name}
topics: [{{name: events, partitions: 6}}]
load: {{topic: events, rate: 100, users: 2}}
members:
  app: {spec}
fleet: [{{spec: app, count: 3}}]
steps:
  - wait_stable: {{timeout_s: 60}}
  - rolling_bounce: {{interval_s: 1}}
  - wait: {{seconds: 3}}
  - drain: {{timeout_s: 60}}
expect:
  - lost_records == 0
  - duplicates_total == 0
"""
RUNNER = "{client: confluent-kafka, assignors: [range], commit_mode: sync, session_timeout_ms: 10000}"
COMMAND = ("{client: confluent-kafka, command: [%s, %s], env: {BOOTSTRAP: '{bootstrap_servers}', "
           "GROUP: '{group_id}', TOPIC: '{topic:events}'}}" % (sys.executable, PROGRAM))

def run_shape(name: str, spec: str, run_scenario, cluster, tmp_path: Path) -> dict[str, dict[str, int]]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(SHAPE.format(name=name, spec=spec))
    result = run_scenario(load(path), tmp_path / "reports", cluster=cluster)
    run_dir = Path(result.run_dir)
    assert result.status == "pass", f"{name}: {result.status} {result.problems} {result.expectations}"
    members = [jsonl(f) for f in sorted((run_dir / "history" / "members").glob("*.jsonl"))]
    assert len(members) == 6  # three first lives, three after the bounce
    for events in members:
        names = [e["name"] for e in events]
        assert names[0] == "started" and "processed" in names, f"{name}: {names[:10]}"
    assert sum(1 for events in members if events[-1]["name"] == "stopped" and events[-1]["reason"] == "clean") >= 3
    return {"reported": reported(run_dir), "recount": recount(run_dir)}


def test_an_instrumented_program_counts_as_the_runner_does(run_scenario, kafka_cluster, tmp_path: Path) -> None:
    runner = run_shape("shape-runner", RUNNER, run_scenario, kafka_cluster, tmp_path)
    program = run_shape("shape-program", COMMAND, run_scenario, kafka_cluster, tmp_path)
    for name, counts in (("runner", runner), ("program", program)):
        assert counts["reported"] == counts["recount"], f"{name}: the analysis against a recount of its history"
        assert counts["recount"]["records_acked"] > 500, f"{name}: too little load to compare"
        assert counts["recount"]["records_unique_processed"] >= counts["recount"]["records_acked"]
    # What the shape decides is the same for both: nothing lost, nothing processed twice.
    verdict = ("lost_records", "duplicates_total", "duplicate_records")
    assert {k: runner["recount"][k] for k in verdict} == {k: program["recount"][k] for k in verdict} == {
        k: 0 for k in verdict}
