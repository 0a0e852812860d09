"""``python -m testbed.load.locust_main <locust arguments>``: Locust's command line, with the process's producer
started before Locust is imported (``early_producer``: its producer id is fetched while Locust loads).

A master (``--master``) produces nothing and starts no producer. A process spawned ahead of its load
(``LoadGenerator.spawn``) has Locust imported and its producer made, then waits at its start gate.
"""

import os
import sys
import time
from importlib import import_module
from pathlib import Path

from gevent import monkey

monkey.patch_all()  # what importing Locust does first; done here before confluent_kafka imports ssl

from testbed.load import early_producer  # noqa: E402 - after the patch, as Locust needs it
from testbed.load.spec import PARAMS_ENV  # noqa: E402

GATE_POLL_S = 0.01  # the gate's latency: the load's first record follows its opening by this much at most
GATE_LINE = "ready, waiting at the start gate"

master = "--master" in sys.argv[1:]
# A master needs its parameters only for its gate; a producing process always (a clear error without them).
params = None if master and PARAMS_ENV not in os.environ else early_producer.params_from_env()
if not master:
    early_producer.start(params)

from locust.main import main  # noqa: E402 - Locust loads while the producer fetches its id

import_module("testbed.load.producer_user")  # what the locustfile imports, loaded before the gate too

# Spawned ahead of its load: wait for it here (a load never started is killed here).
if params is not None and params.start_gate is not None:
    gate = Path(params.start_gate)
    print(f"{GATE_LINE} {gate}", flush=True)  # in the process's log: where a slow start stands
    while not gate.exists():
        time.sleep(GATE_POLL_S)

main()
