"""The event models are the one schema: harness action kinds, and the Spark schemas derived from the models."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.spark.event_schemas import HARNESS_SCHEMA, HOST_SCHEMA, MEMBER_SCHEMA, spark_type, struct_of
from testbed.analysis.spark.sources import read_harness, read_member_events
from testbed.history import HistoryWriter
from testbed.history import events as ev
from testbed.history.events import FAULTS, MARKS, MEMBER_EVENTS, SPANS, Action, HarnessAction, HostSample

DOCS = Path(__file__).resolve().parents[2] / "docs" / "history.md"


def test_action_kinds_are_the_documented_strings_on_disk() -> None:
    row = next(line for line in DOCS.read_text().splitlines() if line.startswith("| `action` |"))
    documented = re.search(r"`kind` \(([^)]*)\)", row).group(1).split(", ")
    assert [a.value for a in Action] == documented
    assert HarnessAction(kind=Action.MEMBER_KILL).model_dump(mode="json")["kind"] == "member_kill"
    assert HarnessAction.model_validate({"kind": "broker_unpause"}).kind is Action.BROKER_UNPAUSE


def test_action_groups() -> None:
    assert {str(a) for a in FAULTS} == {"member_kill", "member_pause", "member_stall", "member_partition", "node_lost",
                                        "broker_stop",
                                        "broker_kill", "broker_pause", "broker_restart", "broker_partition",
                                        "broker_latency"}
    assert not set(SPANS) & set(SPANS.values()) and not MARKS & set(SPANS.values())
    assert "member_pause" in FAULTS and "run_end" not in FAULTS  # plain strings read from disk match


def test_every_model_field_is_in_the_spark_schema_of_its_file() -> None:
    for schema, models in ((MEMBER_SCHEMA, MEMBER_EVENTS), (HARNESS_SCHEMA, (HarnessAction,)), (HOST_SCHEMA, (HostSample,))):
        fields = {f.name: f.dataType for f in schema.fields}
        for model in models:
            for name, info in model.model_fields.items():
                assert fields.get(name) == spark_type(info.annotation, name), f"{model.__name__}.{name}"
    types = {f.name: f.dataType.simpleString() for f in MEMBER_SCHEMA.fields}
    assert types["partitions"] == "array<array<string>>"  # [topic, partition] pairs, the number as its text
    assert types["partition"] == "int" and types["first_offset"] == "bigint" and types["fatal"] == "boolean"
    assert types["offsets"] == "array<struct<topic:string,partition:int,offset:bigint>>"
    harness = {f.name: f.dataType.simpleString() for f in HARNESS_SCHEMA.fields}
    assert harness["kind"] == "string" and harness["detail"] == "string"  # detail: the JSON text


def test_a_field_spark_cannot_read_or_two_types_for_one_name_is_an_error() -> None:
    class Odd(BaseModel):
        when: complex

    class A(BaseModel):
        count: int

    class B(BaseModel):
        count: str

    with pytest.raises(TypeError, match="field 'when'"):
        struct_of((Odd,))
    with pytest.raises(TypeError, match="B.count is string, another event's count is bigint"):
        struct_of((A, B))


def test_spark_reads_every_field_the_models_write(tmp_path: Path, spark) -> None:  # noqa: F811
    parts = [("t", 0), ("t", 1)]
    members = [
        ev.Started(source="m", client="java", client_version="3.9.0", group_id="g", topics=["t"], assignors=["range"],
                   group_protocol="classic", remote_assignor="uniform", group_instance_id="i-1", commit_mode="sync",
                   pid=7, spec="s", session_timeout_ms=10_000, max_poll_interval_ms=300_000),
        ev.Assigned(source="m", partitions=parts, generation=3, member_epoch=4),
        ev.Revoked(source="m", partitions=parts, generation=3, member_epoch=4),
        ev.Lost(source="m", partitions=parts, generation=3, member_epoch=4),
        ev.Processed(source="m", topic="t", partition=1, first_offset=0, last_offset=9, count=10,
                     produce_ts_min_ms=1, produce_ts_max_ms=2),
        ev.Committed(source="m", offsets=[ev.CommittedOffset(topic="t", partition=1, offset=10)], trigger="batch",
                     error="E"),
        ev.ClientError(source="m", code="C", message="boom", fatal=True),
        ev.Stopped(source="m", reason="clean"),
    ]
    with HistoryWriter(tmp_path / "history" / "members" / "m.jsonl") as w:
        for event in members:
            w.write(event)
    with HistoryWriter(tmp_path / "history" / "harness.jsonl") as w:
        w.write(HarnessAction(kind=Action.MEMBER_PAUSE, target="m", detail={"session_timeout_ms": 10_000}))
    rows = read_member_events(spark, str(tmp_path / "history" / "members" / "*.jsonl")).orderBy("seq").collect()
    assert [r["name"] for r in rows] == [e.name for e in members]
    for event, row in zip(members, rows):
        unread = [k for k, v in event.model_dump().items() if v is not None and row[k] is None]
        assert not unread, f"{event.name}: {unread} written but read as null"
    assert rows[1]["partitions"] == [["t", "0"], ["t", "1"]] and rows[5]["offsets"][0]["offset"] == 10
    (action,) = read_harness(spark, str(tmp_path / "history" / "harness.jsonl")).collect()
    assert (action["kind"], action["target"], action["detail"]) == ("member_pause", "m", '{"session_timeout_ms":10000}')
