"""A confluent-kafka service that cannot handle one kind of record: it raises on a record whose value is the
POISON marker, every time it meets it, and lets the exception end the program, closing its consumer on the way
out as most services do (``finally: consumer.close()``: it leaves the group at once). Everything else it
processes one record a poll and commits after each.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC, POISON; and
SESSION_TIMEOUT_MS, LEAVE_ON_CRASH=no for a service that dies holding its partitions, whom the group keeps until
its session times out).
"""

import os

from confluent_kafka import Consumer


class PoisonPill(Exception):
    """The record cannot be handled."""


def handle(msg) -> None:
    if msg.value() == os.environ["POISON"].encode():
        raise PoisonPill(f"cannot parse the record at {msg.topic()}-{msg.partition()} offset {msg.offset()}")


consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": int(os.environ.get("SESSION_TIMEOUT_MS", "6000")),
                     "partition.assignment.strategy": "range"})
consumer.subscribe([os.environ["TOPIC"]])
try:
    while True:
        msg = consumer.poll(0.2)
        if msg is None or msg.error():
            continue
        handle(msg)
        consumer.commit(message=msg, asynchronous=False)
finally:
    if os.environ.get("LEAVE_ON_CRASH", "yes") == "yes":
        consumer.close()
