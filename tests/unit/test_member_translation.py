"""VerifiableConsumer stdout -> history events, and poll batches -> processed summaries (pure)."""

from __future__ import annotations

import json

from testbed.history.events import Assigned, Committed, Processed, Revoked, Stopped, UnknownEvent, parse_event
from testbed.members.batches import RecordView, produce_ts_ms, summarize_batch
from testbed.members.java.verifiable import TranslationContext, translate_line


def ctx(trigger: str = "batch") -> TranslationContext:
    return TranslationContext(source="j1", commit_trigger=trigger)  # type: ignore[arg-type]


def line(**obj: object) -> str:
    return json.dumps(obj)


def test_assigned_keeps_the_exact_partition_set_and_the_jvm_timestamp() -> None:
    (event,) = translate_line(
        line(timestamp=1000, name="partitions_assigned",
             partitions=[{"topic": "t", "partition": 3}, {"topic": "t", "partition": 0}]),
        ctx(),
    )
    assert isinstance(event, Assigned)
    assert event.partitions == [("t", 0), ("t", 3)] and event.ts_ms == 1000 and event.source == "j1"
    assert event.generation is None and event.member_epoch is None


def test_revoked_and_empty_revocation() -> None:
    (event,) = translate_line(line(timestamp=5, name="partitions_revoked", partitions=[{"topic": "t", "partition": 1}]), ctx())
    assert isinstance(event, Revoked) and event.partitions == [("t", 1)]
    assert translate_line(line(timestamp=5, name="partitions_revoked", partitions=[]), ctx()) == []


def test_records_consumed_gives_one_processed_per_partition() -> None:
    events = translate_line(
        line(timestamp=7, name="records_consumed", count=8, partitions=[
            {"topic": "t", "partition": 2, "count": 5, "minOffset": 10, "maxOffset": 14},
            {"topic": "t", "partition": 4, "count": 3, "minOffset": 0, "maxOffset": 2},
        ]),
        ctx(),
    )
    assert [(e.partition, e.first_offset, e.last_offset, e.count) for e in events] == [(2, 10, 14, 5), (4, 0, 2, 3)]
    assert all(isinstance(e, Processed) and e.produce_ts_min_ms is None and e.ts_ms == 7 for e in events)


def test_offsets_committed_success_and_failure_keep_the_trigger() -> None:
    ok = translate_line(line(timestamp=9, name="offsets_committed", success=True,
                             offsets=[{"topic": "t", "partition": 0, "offset": 5}]), ctx("auto"))[0]
    assert isinstance(ok, Committed) and ok.trigger == "auto" and ok.error is None and ok.offsets[0].offset == 5
    bad = translate_line(line(timestamp=9, name="offsets_committed", success=False, error="CommitFailedException",
                              offsets=[{"topic": "t", "partition": 0, "offset": 5}]), ctx())[0]
    assert isinstance(bad, Committed) and bad.trigger == "batch" and bad.error == "CommitFailedException"


def test_shutdown_complete_stops_with_the_context_reason() -> None:
    context = ctx()
    context.stop_reason = "max_records"
    (event,) = translate_line(line(timestamp=11, name="shutdown_complete"), context)
    assert isinstance(event, Stopped) and event.reason == "max_records"


def test_noise_and_ignored_lines_give_nothing() -> None:
    assert translate_line("SLF4J: Failed to load class", ctx()) == []
    assert translate_line("[1, 2]", ctx()) == []
    assert translate_line(line(timestamp=1, name="startup_complete"), ctx()) == []
    assert translate_line(line(timestamp=1, name="record_data", key="k", value="v", offset=1), ctx()) == []


def test_unknown_names_are_kept_and_read_back() -> None:
    (event,) = translate_line(line(timestamp=3, name="offset_reset", partition=1), ctx())
    assert isinstance(event, UnknownEvent) and event.name == "verifiable_offset_reset"
    again = parse_event(event.model_dump(mode="json"))
    assert isinstance(again, UnknownEvent) and again.model_dump()["partition"] == 1


def rec(partition: int, offset: int, ts_header: int | None = None, timestamp: int | None = 50) -> RecordView:
    headers = [("ts", ts_header.to_bytes(8, "big"))] if ts_header is not None else None
    return RecordView("t", partition, offset, headers, timestamp)


def test_produce_ts_prefers_the_header_then_the_record_timestamp() -> None:
    assert produce_ts_ms(rec(0, 0, ts_header=1234)) == 1234
    assert produce_ts_ms(rec(0, 0)) == 50
    assert produce_ts_ms(rec(0, 0, timestamp=-1)) is None
    assert produce_ts_ms(RecordView("t", 0, 0, [("ts", b"\x01")], None)) is None


def test_summarize_batch_per_partition_bounds() -> None:
    batches = summarize_batch([rec(1, 7, 100), rec(0, 3, 90), rec(1, 8, 120), rec(1, 9, 110)])
    by_partition = {b.partition: b for b in batches}
    assert [b.partition for b in batches] == [1, 0]
    one = by_partition[1]
    assert (one.first_offset, one.last_offset, one.count, one.produce_ts_min_ms, one.produce_ts_max_ms) == (7, 9, 3, 100, 120)
    assert by_partition[0].count == 1
