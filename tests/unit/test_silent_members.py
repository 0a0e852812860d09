"""A run whose members wrote nothing says how each ended and quotes its output (testbed.history.silence), and
judging it says so instead of Spark's "no member histories" (hand-built run directories, no brokers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.errors import NoMemberHistory
from testbed.history.events import Action
from testbed.history.harness import HarnessLog
from testbed.history.silence import silent_members
from testbed.run.layout import RunDir
from testbed.run.result import RunResult
from testbed.scenario.evaluate import evaluate, failure_summary
from testbed.scenario.model import Scenario

TRACEBACK = "Traceback (most recent call last):\n  File \"runner.py\", line 1\nImportError: no module named confluent_kafka\n"
SCENARIO = Scenario.model_validate({
    "name": "silent", "topics": [{"name": "t", "partitions": 2}],
    "members": {"a": {"client": "confluent-kafka"}}, "fleet": [{"spec": "a", "count": 3}],
    "expect": ["lost_records == 0"],
})


def died_at_start(root: Path) -> RunDir:
    """Three members that each exited with code 1: two printed the same traceback, the third something else."""
    run = RunDir(root).create()
    harness = HarnessLog(run.harness_log)
    harness.record(Action.RUN_START, "silent")
    for member, output in (("m0", TRACEBACK), ("m1", TRACEBACK), ("m2", "KafkaException: bad setting\n")):
        harness.record(Action.MEMBER_START, member, slot=int(member[1]), spec="a")
        run.member_output(member).write_text("starting\n" + output)
        harness.record(Action.MEMBER_EXIT, member, exit_code=1, signal=None, cause="exited", requested=False)
    harness.close()
    return run


def test_members_that_died_at_start_are_named_with_how_they_ended_and_their_output(tmp_path: Path) -> None:
    silent = silent_members(died_at_start(tmp_path / "run"))
    assert silent is not None
    assert silent.headline == ("no member wrote to its history: the run's 3 members ended before their first event, "
                               "each by itself (they died at start: their output is below)")
    lines = silent.message.splitlines()
    assert lines[1] == "m0 (exit code 1, by itself), m1 (exit code 1, by itself); last lines of logs/m0.log, logs/m1.log:"
    assert "    ImportError: no module named confluent_kafka" in lines
    assert "m2 (exit code 1, by itself); last lines of logs/m2.log:" in lines
    assert "    KafkaException: bad setting" in lines


def test_members_the_run_stopped_before_they_were_up_point_at_wait_stable(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run").create()
    harness = HarnessLog(run.harness_log)
    harness.record(Action.MEMBER_START, "h-m0", slot=0, spec="a", host="host-m0")  # hosted: the host's output
    run.member_output("host-m0").write_text("loading the client\n")
    harness.record(Action.MEMBER_STOP, "h-m0", reason="fleet_close")
    harness.record(Action.MEMBER_EXIT, "h-m0", exit_code=None, signal="SIGTERM", cause="stopped", requested=True)
    harness.close()
    silent = silent_members(run)
    assert silent is not None and "the run stopped them at its end before they were up" in silent.headline
    assert "a wait_stable step does" in silent.headline
    assert "h-m0 (killed by SIGTERM, asked to stop at the run's end); last lines of logs/host-m0.log:" in silent.message


def test_one_whole_line_of_any_member_is_enough_and_a_torn_one_is_not(tmp_path: Path) -> None:
    run = died_at_start(tmp_path / "run")
    run.member_log("m0").write_text('{"name": "started"')  # killed mid-write: no whole line
    assert silent_members(run) is not None
    run.member_log("m1").write_text('{"name": "started"}\n')
    assert silent_members(run) is None


def test_a_directory_without_a_harness_log_is_left_to_the_callers_message(tmp_path: Path) -> None:
    assert silent_members(RunDir(tmp_path / "not-a-run").create()) is None


def test_judging_a_silent_run_is_an_error_that_says_so_without_starting_the_analysis(tmp_path: Path, monkeypatch) -> None:
    import testbed.analysis

    def no_analysis(*args, **kwargs):
        raise AssertionError("the analysis must not run: it would only say it found no member history")

    monkeypatch.setattr(testbed.analysis, "analyse", no_analysis)
    run = died_at_start(tmp_path / "run")
    result = evaluate(run, SCENARIO, RunResult(scenario="silent", run_dir=str(run.root), status="pass", started_ms=0))
    assert result.status == "error"
    assert result.analysis_error == "not analysed: no member wrote to its history"
    assert [e.unknown for e in result.expectations] == [result.analysis_error]
    assert "no member histories" not in failure_summary(result)


def test_the_analysis_refuses_a_silent_run_with_the_members_story(tmp_path: Path) -> None:
    from testbed.analysis import analyse

    run = died_at_start(tmp_path / "run")
    with pytest.raises(NoMemberHistory, match=r"(?s)each by itself.*ImportError: no module named confluent_kafka"):
        analyse(run.root, spark=object())  # refused before Spark is asked anything
