"""What the report and the analysis say of a run the end cut short: no bounce blamed for the fleet's close, no drain
named that never ran, no loss left unknown when nothing was left to process."""

from __future__ import annotations

import json
from pathlib import Path

from report_fixtures import materialise

from testbed.analysis.view.harness import undrained
from testbed.history.events import Action
from testbed.report.cause_words import _bounced
from testbed.report.inputs import HarnessMark, load_run
from testbed.run.metrics import Windows


def test_the_fleets_close_inside_a_bounce_cut_short_is_no_bounce_stop() -> None:
    marks = [HarnessMark(Action.BOUNCE_START, None, 1_000),  # no bounce_end: the run was interrupted
             HarnessMark(Action.MEMBER_STOP, "m0", 1_100),
             HarnessMark(Action.MEMBER_STOP, "m2", 9_000, reason="fleet_close")]
    assert _bounced("m0", marks)
    assert not _bounced("m2", marks)


def test_a_run_without_its_drain_has_a_loss_only_when_something_was_left() -> None:
    cut = Windows(run_start_ms=0, run_end_ms=9_000, drain_end_ms=None, bounces=[])
    assert undrained(cut, 0, "acknowledged records") is None  # everything acked was processed: no loss
    assert "3 acknowledged records not processed" in undrained(cut, 3, "acknowledged records")
    drained = cut.model_copy(update={"drain_end_ms": 8_000})
    assert undrained(drained, 3, "acknowledged records") is None
    assert undrained(Windows(run_start_ms=None, run_end_ms=None, drain_end_ms=None, bounces=[]), 3, "x") is None


def test_the_report_names_the_runs_end_when_there_was_no_drain(tmp_path: Path) -> None:
    run = materialise(tmp_path)
    assert load_run(run).cutoff_words() == "the drain ended"
    path = run / "analysis" / "metrics.json"
    metrics = json.loads(path.read_text())
    metrics["windows"]["drain_end_ms"] = None
    path.write_text(json.dumps(metrics))
    assert load_run(run).cutoff_words() == "the run ended"
