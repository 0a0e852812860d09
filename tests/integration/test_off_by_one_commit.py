"""A service whose commits point at the last processed record instead of the next one: the report must say so.

Two instrumented instances of ``programs/confluent_off_by_one_commit.py`` (a commit after each batch and in the
revoke callback, each one record short) under load, a rolling bounce of both, the drain. Every hand-over of a
partition re-delivers exactly its committed record: every duplicate processing has the cause
``commit_below_record`` with a gap of one, and the report's headline names the off-by-one commit and its fix.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testbed.report.headline import headlines
from testbed.report.inputs import load_run
from testbed.scenario.loader import load

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).parent / "programs" / "confluent_off_by_one_commit.py"
SCENARIO = f"""
name: off-by-one-commit
topics: [{{name: events, partitions: 4}}]
load: {{topic: events, rate: 100, users: 1}}
members:
  app: {{client: confluent-kafka, command: [{sys.executable}, {PROGRAM}], env: {{BOOTSTRAP: '{{bootstrap_servers}}',
        GROUP: '{{group_id}}', TOPIC: '{{topic:events}}'}}}}
fleet: [{{spec: app, count: 2}}]
steps: [{{wait_stable: {{timeout_s: 60}}}}, {{rolling_bounce: {{interval_s: 1}}}}, {{drain: {{timeout_s: 60}}}}]
expect: [lost_records == 0]
"""


def test_commits_of_the_last_processed_record_are_named_with_their_fix(run_scenario, kafka_cluster, tmp_path: Path) -> None:
    path = tmp_path / "off-by-one-commit.yaml"
    path.write_text(SCENARIO)
    result = run_scenario(load(path), tmp_path / "reports", cluster=kafka_cluster)
    run_dir = Path(result.run_dir)
    metrics = {k: m["value"] for k, m in json.loads((run_dir / "analysis" / "metrics.json").read_text())["metrics"].items()}
    assert metrics["lost_records"] == 0
    assert metrics["duplicates_total"] >= 2, "the bounces moved no partition with records processed"
    assert metrics["duplicates_commit_below_record"] == metrics["duplicates_total"]
    assert metrics["duplicates_commit_gap_max"] == 1
    said = next(h.sentence for h in headlines(load_run(run_dir)) if h.key == "headline-duplicates")
    assert "commit the offset after the last processed record (offset + 1), not the record's own" in said
