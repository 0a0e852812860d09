"""The service's first analysis, made while the run that started it is still going: a small bundled run.

A new Spark JVM analyses its first run several times slower than its next ones (classes loaded, the optimising
compiler at work, PySpark's lookups made): 35-45 s against 4-7 s for a small run on 2 busy cores. ``warm`` (a run
starting) used to boot the JVM only, so the run's own analysis paid the rest after its last step. Now the service
also analyses ``warm_run/`` (two members, an eager rolling bounce: the consumer group's stages, the acks, the
record figures, the pauses) in a temporary directory once, during the run's steps, where the machine mostly waits
on Kafka.

``warm_run/`` is ``tests/unit/histories/scenarios.eager_rolling_bounce`` written out; a unit test holds its figures.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from pyspark.sql import SparkSession

WARM_RUN = Path(__file__).with_name("warm_run")


def analyse_warm_run(spark: SparkSession) -> float:
    """The bundled run analysed on a session of its own, in a temporary copy that is removed; its seconds."""
    from ..pipeline import analyse_run
    from ..spark.session import own_session

    with tempfile.TemporaryDirectory(prefix="testbed-warm-up-") as folder:
        run = Path(folder) / "run"
        shutil.copytree(WARM_RUN, run)
        started = time.monotonic()
        with own_session(spark) as session:
            analyse_run(run, spark=session)
        return time.monotonic() - started
