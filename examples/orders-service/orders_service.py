"""orders-service: a small consumer service of the kind testbed's users run, and the one its example rolls out.

It reads order events from Kafka and writes each one into its store (SQLite) and only then commits the
offsets: at-least-once, so a crash may write an order twice but never loses one. It knows nothing of testbed;
its settings come from the environment, as in production:

    KAFKA_BOOTSTRAP   bootstrap servers           ORDERS_TOPIC   the topic to consume
    KAFKA_GROUP       the consumer group          ORDERS_DB      the SQLite file of the store
    KAFKA_SESSION_TIMEOUT_MS   optional, default 45000

Two write paths, the subject of the rollout (``--write``):
    record   one INSERT and one transaction per order (version 1)
    batch    one transaction per poll batch (version 2: fewer fsyncs, same guarantee)

and, to show what testbed catches, a version with a real bug (``--write buffered``): it keeps orders in memory
and writes them every 30 seconds, while librdkafka auto-commits every second what poll returned. A clean
shutdown flushes the buffer; a crash loses what was committed but not yet written.

SIGTERM (a deploy's stop) ends the loop, flushes, closes the consumer (which leaves the group) and exits.
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import time

from confluent_kafka import Consumer, KafkaException

# Longer than the example's instance lives before its kill (about 11 s): the kill always finds orders committed but
# not yet written. With a 2 s flush, a kill that fell just after a flush found none in some runs.
BUFFER_FLUSH_S = 30.0


class Store:
    """The service's database: one row per order event written (a duplicate write is a second row)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("CREATE TABLE IF NOT EXISTS orders (topic TEXT, partition INTEGER, offset INTEGER, "
                        "order_key TEXT, payload BLOB, written_ms INTEGER)")

    def write(self, messages: list) -> None:
        rows = [(m.topic(), m.partition(), m.offset(), (m.key() or b"").decode(errors="replace"), m.value(),
                 time.time_ns() // 1_000_000) for m in messages]
        self.db.execute("BEGIN")
        self.db.executemany("INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)", rows)
        self.db.execute("COMMIT")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", choices=["record", "batch", "buffered"], default="record")
    args = parser.parse_args()

    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    store = Store(os.environ["ORDERS_DB"])
    buffered = args.write == "buffered"
    consumer = Consumer({
        "bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
        "group.id": os.environ["KAFKA_GROUP"],
        "auto.offset.reset": "earliest",
        "session.timeout.ms": int(os.environ.get("KAFKA_SESSION_TIMEOUT_MS", "45000")),
        "partition.assignment.strategy": "cooperative-sticky",
        # the bug: offsets of what poll returned are committed on a timer, whether written or not
        "enable.auto.commit": buffered,
        "auto.commit.interval.ms": 1000,
    })
    consumer.subscribe([os.environ["ORDERS_TOPIC"]])
    pending: list = []
    last_flush = time.monotonic()
    try:
        while not stopping:
            messages = [m for m in consumer.consume(num_messages=200, timeout=0.5) if m.error() is None]
            if buffered:
                pending += messages
                if time.monotonic() - last_flush >= BUFFER_FLUSH_S:
                    store.write(pending)
                    pending, last_flush = [], time.monotonic()
                continue
            if not messages:
                continue
            if args.write == "record":
                for message in messages:
                    store.write([message])
            else:
                store.write(messages)
            try:
                consumer.commit(asynchronous=False)
            except KafkaException as exc:
                # A commit refused during a rebalance (ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS): the written
                # orders come again to the partition's next owner and are written twice, never lost. (The first
                # version of this example let it end the service: testbed's rollout run caught that.)
                print(f"orders-service: commit failed, going on: {exc}", flush=True)
    except KafkaException as exc:
        print(f"orders-service: kafka error: {exc}", flush=True)
        return 1
    finally:
        if pending:
            store.write(pending)
        consumer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
