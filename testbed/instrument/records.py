"""What the history needs of a consumed record, for either client, without importing either.

A confluent-kafka ``Message`` answers through methods (``msg.offset()``), a kafka-python
``ConsumerRecord`` is a namedtuple (``rec.offset``). The produce time is the producer's own send time
in header ``ts`` (8-byte big-endian ms, as testbed's producers write it), else the record's
timestamp, else unknown: the rule of ``testbed.members.batches.produce_ts_ms``.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

PRODUCE_TS_HEADER = "ts"
TIMESTAMP_NOT_AVAILABLE = 0  # confluent_kafka.TIMESTAMP_NOT_AVAILABLE

RecordFields = Tuple[str, int, int, Optional[int]]  # topic, partition, offset, produce time (ms)


def header_ts(headers: Any) -> Optional[int]:
    """The 'ts' header's ms, if the record has one of 8 bytes."""
    for key, value in headers:
        if key == PRODUCE_TS_HEADER and value is not None and len(value) == 8:
            return int.from_bytes(value, "big", signed=True)
    return None


def confluent_produce_ts(msg: Any) -> Optional[int]:
    headers = msg.headers()
    if headers:
        ts = header_ts(headers)
        if ts is not None:
            return ts
    kind, ts = msg.timestamp()
    return ts if kind != TIMESTAMP_NOT_AVAILABLE and ts >= 0 else None


def kafka_python_produce_ts(rec: Any) -> Optional[int]:
    headers = rec.headers
    if headers:
        ts = header_ts(headers)
        if ts is not None:
            return ts
    ts = rec.timestamp
    return ts if ts is not None and ts >= 0 else None


def is_confluent_message(obj: Any) -> bool:
    return callable(getattr(obj, "offset", None))


def record_fields(obj: Any) -> RecordFields:
    """(topic, partition, offset, produce ms) of a confluent Message or a kafka-python ConsumerRecord."""
    if is_confluent_message(obj):
        return obj.topic(), obj.partition(), obj.offset(), confluent_produce_ts(obj)
    return obj.topic, obj.partition, obj.offset, kafka_python_produce_ts(obj)
