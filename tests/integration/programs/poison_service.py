"""A confluent-kafka service that cannot handle one kind of record: it raises on a record whose value is the
POISON marker, every time it meets it, and lets the exception end the program, closing its consumer on the way
out as most services do (``finally: consumer.close()``: it leaves the group at once). Everything else it
processes one record a poll and commits after each.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC, POISON; and
SESSION_TIMEOUT_MS, LEAVE_ON_CRASH=no for a service that dies holding its partitions, whom the group keeps until
its session times out; HANG_ON_POISON=yes for one whose handler hangs on the record instead of raising, and whose
client leaves the group once MAX_POLL_INTERVAL_MS passes without a poll, while the process runs on).
"""

import os
import time

from confluent_kafka import Consumer


class PoisonPill(Exception):
    """The record cannot be handled."""


def wait_for_a_reply_that_never_comes() -> None:
    time.sleep(120)  # bounded: the run stops the service long before


def handle(msg) -> None:
    if msg.value() == os.environ["POISON"].encode():
        if os.environ.get("HANG_ON_POISON") == "yes":
            wait_for_a_reply_that_never_comes()
        raise PoisonPill(f"cannot parse the record at {msg.topic()}-{msg.partition()} offset {msg.offset()}")


consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "session.timeout.ms": int(os.environ.get("SESSION_TIMEOUT_MS", "6000")),
                     "max.poll.interval.ms": int(os.environ.get("MAX_POLL_INTERVAL_MS", "300000")),
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
