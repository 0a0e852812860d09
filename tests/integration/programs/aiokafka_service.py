"""An asyncio consumer service as users write them on aiokafka (FastStream's client): a rebalance listener whose
coroutines commit what was processed before partitions go, and either a ``getmany`` loop committing after each
batch (the default) or ``async for msg in consumer`` with auto-commit (ITERATE=1); a clean stop on SIGTERM.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC).
"""

import asyncio
import os
import signal

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener


class CommitOnRevoke(ConsumerRebalanceListener):
    def __init__(self, consumer):
        self.consumer = consumer

    async def on_partitions_revoked(self, revoked):
        if revoked and not ITERATE:
            await self.consumer.commit()

    async def on_partitions_assigned(self, assigned):
        pass


ITERATE = os.environ.get("ITERATE") == "1"


async def main():
    stopping = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stopping.set)
    consumer = AIOKafkaConsumer(bootstrap_servers=os.environ["BOOTSTRAP"], group_id=os.environ["GROUP"],
                                auto_offset_reset="earliest", enable_auto_commit=ITERATE,
                                auto_commit_interval_ms=300)
    consumer.subscribe([os.environ["TOPIC"]], listener=CommitOnRevoke(consumer))
    await consumer.start()
    try:
        if ITERATE:
            async def iterate():
                async for _msg in consumer:
                    pass
            task = asyncio.create_task(iterate())
            await stopping.wait()
            task.cancel()
        else:
            while not stopping.is_set():
                batch = await consumer.getmany(timeout_ms=200)
                if batch:
                    await consumer.commit()
    finally:
        await consumer.stop()


asyncio.run(main())
