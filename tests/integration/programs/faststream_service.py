"""A FastStream service as users write them: one ``@broker.subscriber`` handler, FastStream's own consumer
settings (auto-commit), its own signal handling (SIGTERM stops the app gracefully). FastStream builds its
consumers from ``aiokafka.AIOKafkaConsumer`` when the broker connects.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC).
"""

import asyncio
import os

from faststream import FastStream
from faststream.kafka import KafkaBroker

broker = KafkaBroker(os.environ["BOOTSTRAP"])
app = FastStream(broker)


@broker.subscriber(os.environ["TOPIC"], group_id=os.environ["GROUP"], auto_offset_reset="earliest",
                   auto_commit_interval_ms=300)
async def handle(body: bytes) -> None:
    pass


asyncio.run(app.run())
