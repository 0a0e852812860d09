"""A topic read whole, as a downstream consumer with ``isolation.level=read_committed`` sees it: what a Kafka
Streams application wrote to its output, read after its instances stopped (``testbed.scenario.streams_output``).

Read without a group (partitions assigned, from the beginning) up to each partition's end as it was when the
read began; a partition whose last stable offset stays behind that end (a transaction left open by a killed
producer, aborted only at its timeout) keeps the read waiting until ``timeout_s``, then the read is incomplete.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition


@dataclass(frozen=True)
class TopicRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class TopicRead:
    records: list[TopicRecord]
    complete: bool  # every partition read to the end it had when the read began
    behind: dict[int, tuple[int, int]]  # partition -> (position reached, end) when incomplete


def read_committed(bootstrap_servers: str, topic: str, timeout_s: float = 60.0) -> TopicRead:
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": f"testbed-reader-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False,
                         "enable.partition.eof": True})
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise KafkaException(f"topic {topic} is not in the cluster's metadata")
        partitions = sorted(metadata.topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1] for p in partitions}
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        records: list[TopicRecord] = []
        reached = {p: 0 for p in partitions}
        pending = {p for p in partitions if ends[p] > 0}
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                p = msg.partition()
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:  # at the last stable offset
                        reached[p] = max(reached[p], msg.offset())
                    else:
                        raise KafkaException(msg.error())
                else:
                    records.append(TopicRecord(p, msg.offset(), msg.key(), msg.value()))
                    reached[p] = max(reached[p], msg.offset() + 1)
                if reached[p] >= ends[p]:
                    pending.discard(p)
        return TopicRead(records, not pending, {p: (reached[p], ends[p]) for p in sorted(pending)})
    finally:
        consumer.close()


__all__ = ["TopicRead", "TopicRecord", "read_committed"]
