"""The drains' parts that need no broker: the wait both drains (consumer group and share group) end with, where a
timeout is a finding, not an error; and the tracker of processed offsets."""

from __future__ import annotations

from pathlib import Path

from testbed.run.layout import RunDir
from testbed.scenario.drain import ProcessedTracker, _wait_drained


def test_drained_once_nothing_is_missing() -> None:
    left = [{"t-0": 2}, {"t-0": 1}, {}]
    assert _wait_drained(lambda: left.pop(0) if len(left) > 1 else left[0], 5.0, "records", "behind") == {
        "complete": True, "behind": {}}


def test_a_drain_that_times_out_says_what_is_left() -> None:
    assert _wait_drained(lambda: {"t-0": 3}, 0.3, "records", "behind") == {"complete": False, "behind": {"t-0": 3}}


def test_the_tracker_reads_processed_batches_as_they_are_appended(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path).create()
    log = run_dir.member_log("m1")
    log.write_text('{"name": "assigned", "partitions": [["t", 0]]}\n'
                   '{"name": "processed", "topic": "t", "partition": 0, "last_offset": 4, "count": 5}\n'
                   '{"name": "processed", "topic": "t", "partition": 0, "last_of')  # torn: still being written
    tracker = ProcessedTracker(run_dir)
    tracker.refresh()
    assert (tracker.highest, tracker.records) == ({("t", 0): 4}, 5)
    with log.open("a") as f:
        f.write('fset": 9, "count": 5}\n')
    tracker.refresh()
    assert (tracker.highest, tracker.records) == ({("t", 0): 9}, 10)
