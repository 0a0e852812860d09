"""``python -m testbed.load.locust_main <locust arguments>``: Locust's command line, with the process's producer
started before Locust is imported (``early_producer``: its producer id is fetched while Locust loads).

A master (``--master``) produces nothing and starts no producer.
"""

import sys

from gevent import monkey

monkey.patch_all()  # what importing Locust does first; done here before confluent_kafka imports ssl

from testbed.load import early_producer  # noqa: E402 - after the patch, as Locust needs it

if "--master" not in sys.argv[1:]:
    early_producer.start(early_producer.params_from_env())

from locust.main import main  # noqa: E402 - Locust loads while the producer fetches its id

main()
