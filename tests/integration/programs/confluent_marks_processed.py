"""A confluent-kafka service that says itself when a batch is done: it consumes batches, "writes" every record
but those SKIP_EVERY-th (a bug the history should show as records never processed), marks what it wrote with
``testbed.instrument.processed`` and commits asynchronously; a clean close on SIGTERM.

The settings come from the environment (BOOTSTRAP, GROUP, TOPIC, SKIP_EVERY).
"""

import os
import signal

from confluent_kafka import Consumer

from testbed.instrument import processed

stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
skip_every = int(os.environ.get("SKIP_EVERY", "0"))
consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})
consumer.subscribe([os.environ["TOPIC"]])
while not stopping:
    batch = [m for m in consumer.consume(10, 0.2) if m.error() is None]
    if not batch:
        continue
    written = [m for m in batch if not (skip_every and m.offset() % skip_every == skip_every - 1)]
    processed(written)
    consumer.commit(asynchronous=True)
consumer.close()
