"""Pure helpers shared by the Python runners: one poll batch -> per-partition processed summaries."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from testbed.instrument.records import header_ts


@dataclass(frozen=True)
class RecordView:
    """A consumed record, whatever the client: what the history needs, and what a user's handler is given."""

    topic: str
    partition: int
    offset: int
    headers: Sequence[tuple[str, bytes | None]] | None
    timestamp_ms: int | None
    key: bytes | None = None
    value: bytes | None = None

    @property
    def timestamp(self) -> int | None:
        """The record's timestamp in ms (CreateTime or LogAppendTime), None when the client gave none."""
        return self.timestamp_ms


@dataclass(frozen=True)
class PartitionBatch:
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    count: int
    produce_ts_min_ms: int | None
    produce_ts_max_ms: int | None


def produce_ts_ms(record: RecordView) -> int | None:
    """The producer's own send time (8-byte big-endian ms in header 'ts'), else the record timestamp."""
    ts = header_ts(record.headers or ())
    if ts is not None:
        return ts
    if record.timestamp_ms is not None and record.timestamp_ms >= 0:
        return record.timestamp_ms
    return None


def summarize_batch(records: Iterable[RecordView]) -> list[PartitionBatch]:
    """Group a batch by partition, keeping the order partitions first appear in."""
    groups: dict[tuple[str, int], list[RecordView]] = {}
    for rec in records:
        groups.setdefault((rec.topic, rec.partition), []).append(rec)
    out = []
    for (topic, partition), recs in groups.items():
        stamps = [t for t in (produce_ts_ms(r) for r in recs) if t is not None]
        out.append(
            PartitionBatch(
                topic=topic,
                partition=partition,
                first_offset=min(r.offset for r in recs),
                last_offset=max(r.offset for r in recs),
                count=len(recs),
                produce_ts_min_ms=min(stamps) if stamps else None,
                produce_ts_max_ms=max(stamps) if stamps else None,
            )
        )
    return out


def python_client_records(batch: Mapping[Any, Iterable[Any]]) -> list[RecordView]:
    """The records of a kafka-python ``poll`` or an aiokafka ``getmany`` (by partition; their ConsumerRecords
    share the field names)."""
    return [RecordView(r.topic, r.partition, r.offset, r.headers, r.timestamp, r.key, r.value)
            for records in batch.values() for r in records]
