"""The records the producers gave up on, read from their logs (no Spark: a local run is read in plain Python)."""

from __future__ import annotations

from testbed.analysis.records.produce_failures import produce_failures
from testbed.history.events import Action, ProduceFailed
from testbed.run.layout import RunDir

LOAD = [{"kind": Action.LOAD_START, "ts_ms": 0, "target": "producer", "detail": {"producers": ["p-0", "p-1"]}}]


def _failed(seq: int, ts: int, error: str) -> str:
    return ProduceFailed(ts_ms=ts, source="p", topic="t", key="k", seq=seq, produce_ts_ms=ts, error=error).model_dump_json()


def test_every_producers_failures_are_counted_by_error_and_a_torn_line_is_skipped(tmp_path):
    run = RunDir(tmp_path).create()
    run.produce_failures.mkdir(parents=True)
    run.produce_failure_log("p-0").write_text(f"{_failed(1, 5_000, '_MSG_TIMED_OUT')}\n{_failed(2, 7_000, '_PURGE_QUEUE')}\n"
                                             '{"name":"produce_failed","produce_ts')
    run.produce_failure_log("p-1").write_text(f"{_failed(3, 4_000, '_PURGE_QUEUE')}\n")
    found = produce_failures(None, str(tmp_path), LOAD)
    assert (found.count, found.first_produce_ms, found.last_produce_ms) == (3, 4_000, 7_000)
    assert found.errors == {"_MSG_TIMED_OUT": 1, "_PURGE_QUEUE": 2}
    assert "3 records (2 _PURGE_QUEUE, 1 _MSG_TIMED_OUT)" in found.note(0)


def test_a_producer_without_its_log_leaves_the_figure_unknown_never_zero(tmp_path):
    run = RunDir(tmp_path).create()
    run.produce_failures.mkdir(parents=True)
    run.produce_failure_log("p-0").write_text("")
    found = produce_failures(None, str(tmp_path), LOAD)
    assert found.count is None and "p-1" in found.unknown_reason and found.note(0) is None
