"""A confluent-kafka service loop in the shape of testbed's own confluent runner with ``commit_mode: sync``:
``consume()`` batches, a synchronous commit after each batch and of what is left when partitions are revoked,
a clean close on SIGTERM.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC), as a scenario's
``env`` placeholders give them.
"""

import os
import signal

from confluent_kafka import Consumer, KafkaException

stopping = False


def stop(*_):
    global stopping
    stopping = True


def commit_left(consumer, partitions):
    try:
        consumer.commit(asynchronous=False)
    except KafkaException:
        pass  # nothing consumed since the last commit


signal.signal(signal.SIGTERM, stop)
consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "partition.assignment.strategy": "range", "session.timeout.ms": 10000})
consumer.subscribe([os.environ["TOPIC"]], on_revoke=commit_left)
while not stopping:
    batch = [m for m in consumer.consume(500, 0.2) if not m.error()]
    if batch:
        try:
            consumer.commit(asynchronous=False)
        except KafkaException:
            pass  # a commit refused during a rebalance: the records come again to the next owner
consumer.close()
