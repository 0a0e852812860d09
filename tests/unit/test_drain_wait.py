"""The drains' parts that need no broker: the wait both drains (consumer group and share group) end with, where a
timeout is a finding, not an error; and the tracker of processed offsets."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import KafkaError, KafkaException

from testbed.run.layout import RunDir
from testbed.scenario import drain as drain_module
from testbed.scenario.drain import ProcessedTracker, _wait_drained, share_drain


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


class _Ends:
    def __init__(self, _bootstrap: str) -> None:
        pass

    def __enter__(self) -> _Ends:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def end_offsets(self, _topics: list[str]) -> dict[tuple[str, int], int]:
        return {("t", 0): 4, ("t", 1): 2}


def _share_history(run_dir: RunDir) -> None:
    """t-0: 0-1 accepted; 2-3 acquired, their accept sent, never answered (the member was killed). t-1: 0-1
    accepted."""
    run_dir.member_log("m0").write_text(
        '{"name": "share_acquired", "ts_ms": 1000, "topic": "t", "partition": 0, "acquired": [[0,1],[1,1],[2,1],[3,1]]}\n'
        '{"name": "share_acknowledged", "ts_ms": 1010, "topic": "t", "partition": 0, "acknowledged": [0, 1], '
        '"type": "accept", "error": null}\n'
        '{"name": "share_ack_sent", "ts_ms": 1020, "topic": "t", "partition": 0, "acknowledged": [2, 3], '
        '"type": "accept", "mode": "explicit"}\n'
        '{"name": "share_acknowledged", "ts_ms": 1010, "topic": "t", "partition": 1, "acknowledged": [0, 1], '
        '"type": "accept", "error": null}\n')


def test_a_share_drain_takes_the_brokers_word_for_records_below_the_start_offset(tmp_path: Path, monkeypatch) -> None:
    """Records whose accept a killed member sent never settle in the histories: the brokers' start offset past
    the partition's end settles them (every record below it is acknowledged or archived)."""
    monkeypatch.setattr(drain_module, "KafkaAdmin", _Ends)
    monkeypatch.setattr(drain_module, "BROKER_ASK_EVERY_S", 0.0)
    run_dir = RunDir(tmp_path).create()
    _share_history(run_dir)
    asked = []
    # the persisted start offset lags the last state write (4 at most here): 3 open records below 4 is enough
    result = share_drain(run_dir, "127.0.0.1:1", ["t"], 5.0, 5, 3000,
                         lambda: asked.append(1) or {("t", 0): 4, ("t", 1): 1})
    assert result == {"complete": True, "behind": {}, "settled_by_brokers": ["t-0"]} and asked


def test_a_share_drain_waits_on_while_the_brokers_still_track_a_record(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(drain_module, "KafkaAdmin", _Ends)
    monkeypatch.setattr(drain_module, "BROKER_ASK_EVERY_S", 0.0)
    run_dir = RunDir(tmp_path).create()
    _share_history(run_dir)
    result = share_drain(run_dir, "127.0.0.1:1", ["t"], 0.5, 5, 3000, lambda: {("t", 0): 3, ("t", 1): 2})
    assert result == {"complete": False, "behind": {"t-0": 2}}
    failing = share_drain(run_dir, "127.0.0.1:1", ["t"], 0.5, 5, 3000, lambda: 1 / 0)  # the histories decide
    assert failing == {"complete": False, "behind": {"t-0": 2}}


def test_a_drain_with_nobody_left_ends_at_once_and_says_so() -> None:
    gone = iter([None, "no member is left to process the records (none runs, and no restart is coming)"])
    result = _wait_drained(lambda: {"t-0": 3}, 30.0, "records", "behind", lambda: next(gone))
    assert result["complete"] is False and result["behind"] == {"t-0": 3}
    assert "no member is left" in str(result["ended"])


def test_a_drain_waits_for_the_brokers_to_answer_and_ends_incomplete_saying_why_when_they_never_do(
        tmp_path: Path, monkeypatch) -> None:
    run_dir = RunDir(tmp_path).create()
    run_dir.member_log("m1").write_text('{"name": "processed", "topic": "t", "partition": 0, "last_offset": 3, '
                                        '"count": 4}\n')
    refusals = [2]  # how many more times the brokers do not answer

    def end_offsets(_bootstrap: str, _topics: list[str]) -> dict[tuple[str, int], int]:
        if refusals[0] > 0:
            refusals[0] -= 1
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, "Failed to get metadata"))
        return {("t", 0): 4}

    monkeypatch.setattr(drain_module, "_end_offsets", end_offsets)
    # The broker came back within the drain's timeout: drained as usual.
    assert drain_module.drain(run_dir, "b", ["t"], 5.0) == {"complete": True, "behind": {}}
    refusals[0] = 1_000  # never again within the timeout: incomplete, a finding, not the run's error
    out = drain_module.drain(run_dir, "b", ["t"], 0.6)
    assert out["complete"] is False and out["behind"] == {}
    assert out["ended"].startswith("the brokers did not answer for the topics' end offsets within the drain's 0.6 s")
    assert "Failed to get metadata" in out["ended"]
