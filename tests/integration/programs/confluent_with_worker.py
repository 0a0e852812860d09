"""A confluent-kafka service that starts a worker process of its own (as services with a sidecar, a
multiprocessing pool or a shell wrapper do), then consumes until SIGTERM. The worker's pid goes to
WORKER_PID_FILE so a test can tell whether it outlived the run.

It knows nothing of testbed; the settings come from the environment (BOOTSTRAP, GROUP, TOPIC).
"""

import os
import signal
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer

stopping = False


def stop(*_):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
Path(os.environ["WORKER_PID_FILE"]).write_text(str(worker.pid))
consumer = Consumer({"bootstrap.servers": os.environ["BOOTSTRAP"], "group.id": os.environ["GROUP"],
                     "auto.offset.reset": "earliest"})
consumer.subscribe([os.environ["TOPIC"]])
while not stopping:
    consumer.poll(0.2)
consumer.close()
worker.terminate()
