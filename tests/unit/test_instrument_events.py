"""Every line a Python member can write is a typed event of testbed.history.events, with the fields meant.

Runners and instrumented programs write through one stdlib writer (``testbed.instrument.history``: it runs in the
program's interpreter, without pydantic); these tests hold its lines against the models, byte for byte, so the
two stay in step.
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
    MEMBER_EVENTS,
    Started,
    Stopped,
    StreamsRestore,
    StreamsState,
    StreamsTasks,
    UnknownEvent,
    parse_event,
)
from testbed.instrument.history import MEMBER_FIELDS, REQUIRED, MemberHistoryFile
from testbed.instrument.started import confluent_started, kafka_python_started, program_fields
from testbed.instrument.state import FAILURE_CODE
from testbed.members.batches import PartitionBatch
from testbed.members.config import MemberConfig
from testbed.members.runtime import MemberHistory
from testbed.members.spec import MemberSpec


def lines(path: Path) -> list[dict]:
    return [json.loads(raw) for raw in path.read_text().splitlines()]


@pytest.fixture
def history(tmp_path: Path) -> MemberHistoryFile:
    return MemberHistoryFile(str(tmp_path / "members" / "m0.jsonl"), "m0")


def parsed(history: MemberHistoryFile) -> list:
    events = [parse_event(obj) for obj in lines(Path(history.path))]
    assert not [e for e in events if isinstance(e, UnknownEvent)]
    return events


def test_every_line_has_the_fields_every_event_has(history: MemberHistoryFile) -> None:
    history.stopped("clean")
    (obj,) = lines(Path(history.path))
    assert set(obj) == {"ts_ms", "mono_ms", "source", "name", "reason"}
    assert obj["source"] == "m0" and obj["name"] == "stopped"
    assert obj["ts_ms"] > 1_600_000_000_000 and isinstance(obj["mono_ms"], int)


def test_started_of_either_client_is_a_started_event(history: MemberHistoryFile) -> None:
    program = program_fields("orders", [".venv/bin/python", "-m", "orders"], 4242)
    conf = {"bootstrap.servers": "b:9092", "group.id": "g", "enable.auto.commit": "false",
            "partition.assignment.strategy": "cooperative-sticky", "sasl.password": "hunter2",
            "on_commit": print, "logger": object()}
    history.event("started", {**confluent_started(conf, ["orders", "^audit-.*"], "2.16.1", "2.16.0"), **program})
    kp_config = {"group_id": "g2", "enable_auto_commit": True, "session_timeout_ms": 45000,
                 "max_poll_interval_ms": 300000, "heartbeat_interval_ms": 3000,
                 "partition_assignment_strategy": ()}
    history.event("started", {**kafka_python_started(kp_config, {"group_id": "g2"}, ["t"], "3.0.12", "eager", "io"),
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


def test_partition_events_are_typed_and_empty_revokes_are_not_written(history: MemberHistoryFile) -> None:
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


def test_processed_lines_are_json_dumps_of_their_fields(history: MemberHistoryFile) -> None:
    """The processed lines are formatted by hand for speed: byte for byte what json.dumps writes, odd topic
    names included."""
    runs = [("t", 2, 10, 19, 10, 1_700_000_000_000, 1_700_000_000_050, 1_700_000_001_000, 5_000),
            ('or"ders\\é\n', 0, 0, 0, 1, None, None, 1_700_000_001_001, 5_001),
            ("t", 11, 2**40, 2**40 + 5, 6, 7, None, 1_700_000_001_002, 5_002)]
    history.processed_runs(runs)
    history.processed_runs([])  # nothing to write: no line
    keys = ("topic", "partition", "first_offset", "last_offset", "count", "produce_ts_min_ms", "produce_ts_max_ms")
    expected = "".join(
        json.dumps({"ts_ms": run[7], "mono_ms": run[8], "source": "m0", "name": "processed",
                    **dict(zip(keys, run[:7]))}, separators=(",", ":")) + "\n" for run in runs)
    assert Path(history.path).read_text() == expected


def test_processed_committed_error_and_stopped_are_typed(history: MemberHistoryFile) -> None:
    history.processed_runs([("t", 2, 10, 19, 10, 1_700_000_000_000, 1_700_000_000_050, 1_700_000_001_000, 5_000),
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


def test_a_partition_event_of_another_kind_is_refused(history: MemberHistoryFile) -> None:
    with pytest.raises(ValueError, match="kind"):
        history.partitions("moved", [("t", 0)])


def test_the_file_is_made_at_the_first_event_not_before(tmp_path: Path) -> None:
    history = MemberHistoryFile(str(tmp_path / "a" / "b.jsonl"), "m0")
    assert not (tmp_path / "a").exists()
    history.stopped("clean")
    history.close()
    assert (tmp_path / "a" / "b.jsonl").read_text().endswith("\n")


# ---- one writer for runners and programs: every line is its model's JSON, byte for byte ---------------------

def model_json(line: str) -> str:
    """The line the event's model writes for the same event (``model_dump`` then compact ``json.dumps``, as
    ``HistoryWriter`` did for the runners before they wrote through ``MemberHistoryFile``)."""
    return json.dumps(parse_event(json.loads(line)).model_dump(mode="json"), separators=(",", ":")) + "\n"


def test_the_table_of_fields_is_the_models_fields_in_their_order_with_their_defaults() -> None:
    written_as_models = {StreamsState, StreamsTasks, StreamsRestore}  # the JVM's lines: MemberHistory.write
    models = {m.model_fields["name"].default: m for m in MEMBER_EVENTS if m not in written_as_models}
    assert set(MEMBER_FIELDS) == set(models)
    for name, model in models.items():
        expected = [(key, REQUIRED if info.is_required() else info.get_default(call_default_factory=True))
                    for key, info in model.model_fields.items() if key not in ("ts_ms", "mono_ms", "source")]
        assert list(MEMBER_FIELDS[name]) == expected, name


def test_a_runners_lines_and_a_programs_are_their_models_json_byte_for_byte(tmp_path: Path) -> None:
    config = MemberConfig(member_id="m1", group_id="g", topics=["orders"], bootstrap_servers="b:1",
                          spec=MemberSpec(client="kafka-python", handler="x:y"), history_path=tmp_path / "r.jsonl")
    runner = MemberHistory(config)
    runner.started("2.3.0", listener_thread="poll", settings={"fetch_max_wait_ms": 100, "client_id": "m1"})
    runner.started("3.0.0", ts_ms=1_700_000_000_000, session_timeout_ms=6000)
    runner.partitions("assigned", [("orders", 1), ("orders", 0)], generation=4, kafka_member_id="k-1")
    runner.partitions("revoked", [("orders", 1)], ts_ms=1_700_000_000_001)
    runner.processed(PartitionBatch('or"ders\\é', 0, 3, 9, 7, 1_700_000_000_000, 1_700_000_000_009))
    runner.processed(PartitionBatch("orders", 1, 0, 0, 1, None, None), ts_ms=1_700_000_000_002)
    runner.committed({("orders", 1): 10, ("orders", 0): 4}, "revoke", "REBALANCE_IN_PROGRESS")
    runner.share_acquired("orders", 0, [(5, 1), (6, None)], [1_700_000_000_000, 1_700_000_000_005])
    runner.share_acquired("orders", 0, [(7, 2)], [])
    runner.share_ack_sent("orders", 0, [6, 5], "accept", "explicit", ts_ms=1_700_000_000_003)
    runner.share_acknowledged("orders", 0, [6, 5], "release", "implicit", 1_700_000_000_003, None)
    runner.handler_error("ValueError", "x" * 3000, 7, [PartitionBatch("orders", 0, 3, 9, 7, None, None)], "skip")
    runner.error("_TRANSPORT", "down", ts_ms=1_700_000_000_004)
    runner.write(StreamsState, ts_ms=1_700_000_000_005, from_state="CREATED", to_state="REBALANCING")
    runner.write_event(Stopped(source="m1", reason="signal"))
    runner.stopped("max_records")
    runner.close()
    program = MemberHistoryFile(str(tmp_path / "p.jsonl"), "m2")
    program.event("started", {**confluent_started({"group.id": "g"}, ["orders"], "2.16.1", "2.16.0"),
                              **program_fields("orders", ["python", "-m", "orders"], 42)})
    program.partitions("lost", [("orders", 2)], member_epoch=9)
    program.processed_runs([("orders", 2, 0, 4, 5, None, 7, 1_700_000_000_006, 5_000)])
    program.committed({}, "auto")
    program.error("INSTRUMENT_FAILED", "patching failed", fatal=True)
    program.stopped("clean")
    program.close()
    lines = [line for name in ("r.jsonl", "p.jsonl") for line in (tmp_path / name).read_text().splitlines(True)]
    assert len(lines) == 22
    assert [line for line in lines if line != model_json(line)] == []


def test_a_runners_file_is_made_at_its_start(tmp_path: Path) -> None:
    config = MemberConfig(member_id="m1", group_id="g", topics=["t"], bootstrap_servers="b:1",
                          spec=MemberSpec(client="confluent-kafka"), history_path=tmp_path / "a" / "m1.jsonl")
    MemberHistory(config).close()
    assert (tmp_path / "a" / "m1.jsonl").read_text() == ""


def test_an_event_without_a_required_field_is_refused(history: MemberHistoryFile) -> None:
    with pytest.raises(TypeError, match="stopped: field 'reason' missing"):
        history.event("stopped", {})
