"""A confluent-kafka service loop as users write them: one record per poll, a synchronous commit every
COMMIT_EVERY records and of what is left when partitions are revoked, a clean close on SIGTERM.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC). With
DESERIALIZING=1 it reads through confluent-kafka's DeserializingConsumer, as schema-registry programs do.
"""

import os
import signal

from confluent_kafka import Consumer, KafkaException

COMMIT_EVERY = 10
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
settings = {"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "session.timeout.ms": 10000}
if os.environ.get("DESERIALIZING"):
    from confluent_kafka import DeserializingConsumer
    from confluent_kafka.serialization import StringDeserializer

    consumer = DeserializingConsumer({**settings, "value.deserializer": StringDeserializer()})
else:
    consumer = Consumer(settings)
consumer.subscribe([os.environ["TOPIC"]], on_revoke=commit_left)
seen = 0
while not stopping:
    msg = consumer.poll(0.2)
    if msg is None or msg.error():
        continue
    seen += 1
    if seen % COMMIT_EVERY == 0:
        consumer.commit(asynchronous=False)
consumer.close()
