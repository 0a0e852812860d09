"""Every line the instrumentation can write is a typed event of testbed.history.events, with the fields meant.

The instrumentation writes its JSON lines with the stdlib (it runs in the program's interpreter, without
pydantic); these tests hold its lines against the models so the two stay in step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.history.events import (
    Assigned,
    ClientError,
    Committed,
    Lost,
    Processed,
    Revoked,
    Started,
    Stopped,
    UnknownEvent,
    parse_event,
)
from testbed.instrument.history import ProgramHistory
from testbed.instrument.started import confluent_started, kafka_python_started, program_fields
from testbed.instrument.state import FAILURE_CODE


def lines(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_text().splitlines()]


@pytest.fixture
def history(tmp_path: Path) -> ProgramHistory:
    return ProgramHistory(str(tmp_path / "members" / "m0.jsonl"), "m0")


def parsed(history: ProgramHistory) -> list:
    events = [parse_event(obj) for obj in lines(Path(history.path))]
    assert not [e for e in events if isinstance(e, UnknownEvent)]
    return events


def test_every_line_has_the_fields_every_event_has(history: ProgramHistory) -> None:
    history.stopped("clean")
    (obj,) = lines(Path(history.path))
    assert set(obj) == {"ts_ms", "mono_ms", "source", "name", "reason"}
    assert obj["source"] == "m0" and obj["name"] == "stopped"
    assert obj["ts_ms"] > 1_600_000_000_000 and isinstance(obj["mono_ms"], int)


def test_started_of_either_client_is_a_started_event(history: ProgramHistory) -> None:
    program = program_fields("orders", [".venv/bin/python", "-m", "orders"], 4242)
    conf = {"bootstrap.servers": "b:9092", "group.id": "g", "enable.auto.commit": "false",
            "partition.assignment.strategy": "cooperative-sticky", "sasl.password": "hunter2",
            "on_commit": print, "logger": object()}
    history.started({**confluent_started(conf, ["orders", "^audit-.*"], "2.16.1", "2.16.0"), **program})
    kp_config = {"group_id": "g2", "enable_auto_commit": True, "session_timeout_ms": 45000,
                 "max_poll_interval_ms": 300000, "heartbeat_interval_ms": 3000,
                 "partition_assignment_strategy": ()}
    history.started({**kafka_python_started(kp_config, {"group_id": "g2"}, ["t"], "3.0.12", "eager", "io"),
                     **program})
    confluent, kafka_python = parsed(history)
    assert isinstance(confluent, Started) and isinstance(kafka_python, Started)
    assert confluent.client == "confluent-kafka" and confluent.client_version == "2.16.1"
    assert confluent.topics == ["orders", "^audit-.*"]
    assert confluent.assignors == ["cooperative-sticky"] and confluent.rebalance_protocol == "cooperative"
    assert confluent.commit_mode == "manual" and confluent.pid == 4242 and confluent.spec == "orders"
    assert (confluent.session_timeout_ms, confluent.max_poll_interval_ms, confluent.heartbeat_interval_ms) == (
        45000, 300000, 3000)
    assert confluent.command == [".venv/bin/python", "-m", "orders"]
    assert confluent.settings["sasl.password"] == "***" and "on_commit" not in confluent.settings
    assert confluent.model_extra["instrumented"] is True and confluent.model_extra["librdkafka_version"] == "2.16.0"
    assert kafka_python.client == "kafka-python" and kafka_python.commit_mode == "auto"
    assert kafka_python.model_extra["listener_thread"] == "io"


def test_partition_events_are_typed_and_empty_revokes_are_not_written(history: ProgramHistory) -> None:
    history.partitions("assigned", [("t", 1), ("t", 0)], generation=3, kafka_member_id="m-1")
    history.partitions("assigned", [])
    history.partitions("revoked", [])
    history.partitions("lost", [])
    history.partitions("revoked", [("t", 0)], kafka_member_id="m-1")
    history.partitions("lost", [("t", 1)])
    assigned, empty, revoked, lost = parsed(history)
    assert isinstance(assigned, Assigned) and assigned.partitions == [("t", 0), ("t", 1)]
    assert assigned.generation == 3 and assigned.member_epoch is None
    assert assigned.model_extra["kafka_member_id"] == "m-1"
    assert isinstance(empty, Assigned) and empty.partitions == []
    assert isinstance(revoked, Revoked) and revoked.partitions == [("t", 0)]
    assert isinstance(lost, Lost) and lost.partitions == [("t", 1)]


def test_processed_lines_are_json_dumps_of_their_fields(history: ProgramHistory) -> None:
    """The processed lines are formatted by hand for speed: byte for byte what json.dumps writes, odd topic
    names included."""
    runs = [("t", 2, 10, 19, 10, 1_700_000_000_000, 1_700_000_000_050, 1_700_000_001_000, 5_000),
            ('or"ders\\é\n', 0, 0, 0, 1, None, None, 1_700_000_001_001, 5_001),
            ("t", 11, 2**40, 2**40 + 5, 6, 7, None, 1_700_000_001_002, 5_002)]
    history.processed(runs)
    history.processed([])  # nothing to write: no line
    keys = ("topic", "partition", "first_offset", "last_offset", "count", "produce_ts_min_ms", "produce_ts_max_ms")
    expected = "".join(
        json.dumps({"ts_ms": run[7], "mono_ms": run[8], "source": "m0", "name": "processed",
                    **dict(zip(keys, run[:7]))}, separators=(",", ":")) + "\n" for run in runs)
    assert Path(history.path).read_text() == expected


def test_processed_committed_error_and_stopped_are_typed(history: ProgramHistory) -> None:
    history.processed([("t", 2, 10, 19, 10, 1_700_000_000_000, 1_700_000_000_050, 1_700_000_001_000, 5_000),
                       ("t", 2, 20, 20, 1, None, None, 1_700_000_001_001, 5_001)])
    history.committed({("t", 2): 21, ("t", 0): 5}, "revoke")
    history.committed({}, "batch", "REBALANCE_IN_PROGRESS")
    history.error(FAILURE_CODE, "patching kafka failed: ...", fatal=True)
    history.error("_TRANSPORT", "broker down")
    history.stopped("clean")
    processed, no_stamp, committed, failed_commit, instrument_failed, error, stopped = parsed(history)
    assert isinstance(processed, Processed)
    assert (processed.topic, processed.partition, processed.first_offset, processed.last_offset, processed.count) == (
        "t", 2, 10, 19, 10)
    assert (processed.produce_ts_min_ms, processed.produce_ts_max_ms) == (1_700_000_000_000, 1_700_000_000_050)
    assert (processed.ts_ms, processed.mono_ms) == (1_700_000_001_000, 5_000)
    assert no_stamp.produce_ts_min_ms is None and no_stamp.produce_ts_max_ms is None
    assert isinstance(committed, Committed) and committed.trigger == "revoke" and committed.error is None
    assert [(o.topic, o.partition, o.offset) for o in committed.offsets] == [("t", 0, 5), ("t", 2, 21)]
    assert failed_commit.error == "REBALANCE_IN_PROGRESS" and failed_commit.offsets == []
    assert isinstance(instrument_failed, ClientError) and instrument_failed.code == FAILURE_CODE
    assert instrument_failed.fatal is True
    assert isinstance(error, ClientError) and error.fatal is False
    assert isinstance(stopped, Stopped) and stopped.reason == "clean"


def test_a_partition_event_of_another_kind_is_refused(history: ProgramHistory) -> None:
    with pytest.raises(ValueError, match="kind"):
        history.partitions("moved", [("t", 0)])


def test_the_file_is_made_at_the_first_event_not_before(tmp_path: Path) -> None:
    history = ProgramHistory(str(tmp_path / "a" / "b.jsonl"), "m0")
    assert not (tmp_path / "a").exists()
    history.stopped("clean")
    history.close()
    assert (tmp_path / "a" / "b.jsonl").read_text().endswith("\n")
