"""Coalescing of processed records into per-partition runs (testbed.instrument.runs)."""

from __future__ import annotations

from testbed.instrument.runs import WINDOW_NS, ProcessedRuns, Run

MS = 1_000_000


def written(runs_out: list[Run]) -> list[tuple]:
    return [(r.topic, r.partition, r.first, r.last, r.count, r.produce_ts_min, r.produce_ts_max) for r in runs_out]


def make() -> tuple[ProcessedRuns, list[Run]]:
    out: list[Run] = []
    return ProcessedRuns(out.extend), out


def test_consecutive_records_of_a_partition_are_one_run_written_on_flush() -> None:
    runs, out = make()
    for offset in range(5, 10):
        runs.add("t", 0, offset, 1000 + offset, offset * MS)
    assert out == []
    runs.flush()
    assert written(out) == [("t", 0, 5, 9, 5, 1005, 1009)]
    assert out[0].last_ns == 9 * MS  # when the last record became processed


def test_other_partitions_in_between_do_not_break_a_run() -> None:
    runs, out = make()
    for offset in range(3):
        runs.add("t", 0, offset, None, 0)
        runs.add("t", 1, 100 + offset, None, 0)
        runs.add("u", 0, 50 + offset, None, 0)
    runs.flush()
    assert sorted(written(out)) == [("t", 0, 0, 2, 3, None, None), ("t", 1, 100, 102, 3, None, None),
                                    ("u", 0, 50, 52, 3, None, None)]


def test_a_gap_or_a_step_back_breaks_the_run_and_writes_it_at_once() -> None:
    runs, out = make()
    runs.add("t", 0, 0, None, 0)
    runs.add("t", 0, 1, None, 0)
    runs.add("t", 0, 3, None, 0)  # a gap: offset 2 was not processed
    assert written(out) == [("t", 0, 0, 1, 2, None, None)]
    runs.add("t", 0, 1, None, 0)  # redelivered after a rebalance: processed again
    assert written(out)[1:] == [("t", 0, 3, 3, 1, None, None)]
    runs.flush()
    assert written(out)[2:] == [("t", 0, 1, 1, 1, None, None)]


def test_produce_times_are_the_min_and_max_whatever_their_order_and_none_is_skipped() -> None:
    runs, out = make()
    for offset, ts in enumerate([50, None, 20, 90, 40]):
        runs.add("t", 0, offset, ts, 0)
    runs.flush()
    assert written(out) == [("t", 0, 0, 4, 5, 20, 90)]


def test_runs_are_written_once_the_oldest_has_waited_its_window() -> None:
    runs, out = make()
    runs.add("t", 0, 0, None, 0)
    runs.add("t", 1, 0, None, 5 * MS)
    runs.flush_due(WINDOW_NS - 1)
    assert out == []
    runs.add("t", 0, 1, None, 10 * MS)
    runs.flush_due(WINDOW_NS)
    assert sorted(written(out)) == [("t", 0, 0, 1, 2, None, None), ("t", 1, 0, 0, 1, None, None)]
    runs.add("t", 0, 2, None, 30 * MS)  # a new window starts with the next record
    runs.flush_due(30 * MS + WINDOW_NS - 1)
    assert len(out) == 2
    runs.flush_due(30 * MS + WINDOW_NS)
    assert written(out)[2:] == [("t", 0, 2, 2, 1, None, None)]


def test_flushing_some_partitions_leaves_the_others_open() -> None:
    runs, out = make()
    runs.add("t", 0, 0, None, 0)
    runs.add("t", 1, 0, None, 0)
    runs.flush([("t", 1), ("t", 7)])
    assert written(out) == [("t", 1, 0, 0, 1, None, None)]
    assert [(r.topic, r.partition) for r in runs.open_runs()] == [("t", 0)]
    runs.add("t", 0, 1, None, 0)  # still the same run
    runs.flush()
    assert written(out)[1:] == [("t", 0, 0, 1, 2, None, None)]


def test_a_flush_writes_oldest_last_record_first() -> None:
    runs, out = make()
    runs.add("t", 0, 0, None, 9)
    runs.add("t", 1, 0, None, 3)
    runs.add("t", 2, 0, None, 6)
    runs.flush()
    assert [r.partition for r in out] == [1, 2, 0]


def test_last_offsets_cover_written_and_open_runs_until_forgotten() -> None:
    runs, _ = make()
    runs.add("t", 0, 4, None, 0)
    runs.flush()
    runs.add("t", 1, 8, None, 0)
    assert runs.last_offsets() == {("t", 0): 4, ("t", 1): 8}
    runs.forget([("t", 0)])
    assert runs.last_offsets() == {("t", 1): 8}
