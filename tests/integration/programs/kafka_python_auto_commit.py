"""A kafka-python service loop as users write them: ``for msg in consumer`` with auto-commit, a clean close on
SIGTERM (the iteration ends every 200 ms without records, so the loop sees the request).

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC).
"""

import os
import signal

from kafka import KafkaConsumer

stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
consumer = KafkaConsumer(os.environ["TOPIC"], bootstrap_servers=os.environ["BOOTSTRAP"], group_id=os.environ["GROUP"],
                         auto_offset_reset="earliest", auto_commit_interval_ms=300, consumer_timeout_ms=200)
while not stopping:
    for msg in consumer:
        if stopping:
            break
consumer.close()
