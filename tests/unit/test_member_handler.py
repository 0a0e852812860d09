"""The user's batch handler in testbed's runners: called with the batch, its failures recorded, skip or stop."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from testbed.history.events import HandlerError, Processed
from testbed.history.writer import read_events
from testbed.members.batches import RecordView
from testbed.members.config import MemberConfig
from testbed.members.runtime import BatchProcessor, MemberHistory, ProcessedOffsets
from testbed.members.spec import MemberSpec, SpecError

HANDLERS = """
seen = []

def keep(records):
    seen.append([(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp) for r in records])

def fail_on_poison(records):
    for r in records:
        if r.value == b"poison":
            raise ValueError(f"cannot store offset {r.offset}")
    seen.append(len(records))

not_callable = 3
"""


@pytest.fixture
def handler_dir(tmp_path: Path) -> Path:
    d = tmp_path / "userpkg"
    d.mkdir()
    (d / "user_handlers.py").write_text(textwrap.dedent(HANDLERS))
    return d


def _processor(tmp_path: Path, handler_dir: Path, handler: str, on_error: str = "skip") -> BatchProcessor:
    spec = MemberSpec(client="confluent-kafka", handler=f"user_handlers:{handler}", handler_path=str(handler_dir),
                      on_handler_error=on_error)
    config = MemberConfig(member_id="m0", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:9092", spec=spec,
                          history_path=tmp_path / "m0.jsonl")
    return BatchProcessor(MemberHistory(config), ProcessedOffsets())


def _records(*values: bytes, partition: int = 0, first: int = 10) -> list[RecordView]:
    return [RecordView("t", partition, first + i, None, 1000 + i, key=b"k", value=v) for i, v in enumerate(values)]


def test_the_handler_gets_each_batch_and_it_counts_as_processed_when_it_returns(tmp_path, handler_dir) -> None:
    proc = _processor(tmp_path, handler_dir, "keep")
    assert proc.process(_records(b"a", b"b")) == 2
    import user_handlers

    assert user_handlers.seen[-1] == [("t", 0, 10, b"k", b"a", 1000), ("t", 0, 11, b"k", b"b", 1001)]
    events = list(read_events(tmp_path / "m0.jsonl"))
    assert [(e.first_offset, e.last_offset, e.count) for e in events if isinstance(e, Processed)] == [(10, 11, 2)]
    assert proc.offsets.pending() == {("t", 0): 12}


@pytest.mark.parametrize("on_error", ["skip", "stop"])
def test_a_failing_handler_is_recorded_and_its_batch_not_processed(tmp_path, handler_dir, on_error) -> None:
    proc = _processor(tmp_path, handler_dir, "fail_on_poison", on_error)
    assert proc.process(_records(b"ok", b"poison", first=5)) == 0
    assert proc.stop_requested is (on_error == "stop")
    assert proc.offsets.pending() == {}
    if on_error == "skip":
        assert proc.process(_records(b"fine", first=7)) == 1
    events = list(read_events(tmp_path / "m0.jsonl"))
    errors = [e for e in events if isinstance(e, HandlerError)]
    assert len(errors) == 1
    err = errors[0]
    assert (err.error_type, err.message, err.records, err.action) == ("ValueError", "cannot store offset 6", 2, on_error)
    assert [(r.topic, r.partition, r.first_offset, r.last_offset) for r in err.ranges] == [("t", 0, 5, 6)]
    assert [e.first_offset for e in events if isinstance(e, Processed)] == ([7] if on_error == "skip" else [])


def test_a_handler_that_is_not_callable_fails_the_start(tmp_path, handler_dir) -> None:
    with pytest.raises(TypeError, match="not callable"):
        _processor(tmp_path, handler_dir, "not_callable")


@pytest.mark.parametrize("fields, message", [
    ({"client": "java", "handler": "m:f"}, "handler: runs in the Python runners"),
    ({"client": "confluent-kafka", "handler": "not a path"}, "is not 'pkg.module:function'"),
    ({"client": "confluent-kafka", "handler": "m:f", "processing_ms_per_record": 1}, "replaces the simulated"),
    ({"client": "kafka-python", "on_handler_error": "stop"}, "only with a handler"),
    ({"client": "confluent-kafka", "group_protocol": "share", "handler": "m:f"}, "handler: runs in the Python"),
])
def test_handler_specs_that_cannot_work_are_refused(fields, message) -> None:
    with pytest.raises(ValueError, match=message):
        MemberSpec(**fields)
    assert issubclass(SpecError, ValueError)
