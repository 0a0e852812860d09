"""A run whose members wrote nothing ends as an error that says how they ended and quotes their output, never
as the analysis's "no member histories" (on the session's brokers)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testbed.scenario.loader import load

pytestmark = pytest.mark.integration

# Its members are frozen (SIGSTOP) the moment they start, so that none can write its `started` before the run's end
# stops them: without it, a drain slower than a member's start (0.5 s on a loaded machine) let one write first.
NO_WAIT = """
name: no-wait
topics: [{name: events, partitions: 2}]
members:
  main: {client: confluent-kafka}
fleet: [{spec: main, count: 2}]
steps:
  - pause: {member: m0}
  - pause: {member: m1}
"""
# A program that dies at start, before its consumer is created: the instrumentation never writes its history.
DIES = """
name: dies-at-start
topics: [{name: events, partitions: 2}]
members:
  app: {client: confluent-kafka, command: [%s, -c, "import sys; print('the program fails at start'); sys.exit(3)"]}
fleet: [{spec: app, count: 1}]
steps:
  - wait_stable: {timeout_s: 30}
""" % sys.executable


def run(text: str, name: str, run_scenario, cluster, tmp_path: Path):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return run_scenario(load(path), tmp_path / "reports", cluster=cluster)


def test_members_stopped_before_they_were_up_end_the_run_as_an_error_naming_wait_stable(
        run_scenario, kafka_cluster, tmp_path: Path) -> None:
    result = run(NO_WAIT, "no-wait", run_scenario, kafka_cluster, tmp_path)
    assert result.status == "error" and result.outcome == "error", result
    assert result.reason.startswith("NoMemberHistory: no member wrote to its history: the run's 2 members ended "
                                    "before their first event: the run stopped them at its end"), result.reason
    assert "a wait_stable step does" in result.reason and "last lines of logs/m0.log" in result.reason
    assert result.analysis_error == "not analysed: no member wrote to its history", result.analysis_error
    assert "no member histories" not in result.problems
    assert (Path(result.run_dir) / "report.html").is_file()


def test_a_member_that_dies_at_start_is_quoted_in_the_run_error(run_scenario, kafka_cluster, tmp_path: Path) -> None:
    result = run(DIES, "dies-at-start", run_scenario, kafka_cluster, tmp_path)
    assert result.status == "error", result
    assert "the program fails at start" in result.reason and "exit code 3" in result.reason, result.reason
    assert result.analysis_error == "not analysed: no member wrote to its history", result.analysis_error
    assert "no member histories" not in result.problems
