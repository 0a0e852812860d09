"""payments-service: the consumer program of a team that tests its rollouts with testbed, from its own repository.

It knows nothing of testbed. Its settings come from the environment, as in production:

    KAFKA_BOOTSTRAP   bootstrap servers        PAYMENTS_TOPIC   the topic to consume
    KAFKA_GROUP       the consumer group       PAYMENTS_LEDGER  a file it appends each payment to

It appends each payment to its ledger and only then commits the offsets (at least once). ``--max-batch`` is what
its next release changes (100 payments a batch, then 500). SIGTERM (a deploy's stop) ends the loop, closes the
consumer (which leaves the group) and exits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal

from confluent_kafka import Consumer, KafkaException


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-batch", type=int, default=100)
    args = parser.parse_args()
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    consumer = Consumer({
        "bootstrap.servers": os.environ["KAFKA_BOOTSTRAP"],
        "group.id": os.environ["KAFKA_GROUP"],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 10000,
        "partition.assignment.strategy": "cooperative-sticky",
    })
    consumer.subscribe([os.environ["PAYMENTS_TOPIC"]])
    try:
        with open(os.environ["PAYMENTS_LEDGER"], "a", encoding="utf-8") as ledger:
            while not stopping:
                batch = [m for m in consumer.consume(num_messages=args.max_batch, timeout=0.5) if m.error() is None]
                if not batch:
                    continue
                for message in batch:
                    ledger.write(json.dumps({"topic": message.topic(), "partition": message.partition(),
                                             "offset": message.offset()}) + "\n")
                ledger.flush()
                try:
                    consumer.commit(asynchronous=False)
                except KafkaException as exc:  # refused during a rebalance: written twice later, never lost
                    print(f"payments-service: commit failed, going on: {exc}", flush=True)
    finally:
        consumer.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
