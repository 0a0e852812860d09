"""A confluent-kafka service with the classic off-by-one commit: after each batch, and of each revoked partition
in the revoke callback, it commits the offset of the last record it processed instead of the next one. Every
hand-over of a partition re-delivers exactly that record to the next owner.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC).
"""

import os
import signal

from confluent_kafka import Consumer, KafkaException, TopicPartition

stopping = False
last_processed: dict = {}  # (topic, partition) -> offset of the last record processed


def stop(*_):
    global stopping
    stopping = True


def commit(consumer, keys):
    offsets = [TopicPartition(t, p, last_processed[(t, p)]) for t, p in keys if (t, p) in last_processed]  # the bug: + 1
    if offsets:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException:
            pass


def on_revoke(consumer, partitions):
    commit(consumer, [(tp.topic, tp.partition) for tp in partitions])
    for tp in partitions:
        last_processed.pop((tp.topic, tp.partition), None)


signal.signal(signal.SIGTERM, stop)
consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "partition.assignment.strategy": "range", "session.timeout.ms": 10000})
consumer.subscribe([os.environ["TOPIC"]], on_revoke=on_revoke)
while not stopping:
    batch = [m for m in consumer.consume(500, 0.2) if not m.error()]
    for m in batch:
        last_processed[(m.topic(), m.partition())] = m.offset()
    commit(consumer, {(m.topic(), m.partition()) for m in batch})
consumer.close()
