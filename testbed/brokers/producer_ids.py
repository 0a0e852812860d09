"""Every broker of a new cluster made to fetch its first block of producer ids while the run starts its members.

A broker asks the controller for a block of producer ids on the first InitProducerId it is sent, and answers that
request COORDINATOR_LOAD_IN_PROGRESS meanwhile; librdkafka retries it half a second later. The first idempotent
producer of a run (the load's) would have that half second in its first acknowledgement, and the run's first step
waits for it. One idempotent producer per broker, bootstrapped on that broker alone (so that its InitProducerId
goes there: the only connection it has), asks on a thread beside the topics' creation and the fleet's start; it
writes no record, and it is done once librdkafka's statistics say its producer id was assigned.
"""

from __future__ import annotations

import json
import logging
import threading
import time

from confluent_kafka import Producer

log = logging.getLogger(__name__)
ASSIGNED = "Assigned"  # librdkafka's idempotence state (statistics' eos.idemp_state) once it holds a producer id


def producer_id_assigned(address: str, timeout_s: float, stop: threading.Event | None = None) -> bool:
    """Whether an idempotent producer bootstrapped on ``address`` alone got a producer id within ``timeout_s``
    (asking no longer once ``stop`` is set)."""
    state: dict[str, object] = {}
    # librdkafka's warnings left out (syslog level 3: errors only): the very answer this waits through, "Failed to
    # acquire idempotence PID ... Coordinator load in progress: retrying", is no news to the user of a run.
    producer = Producer({"bootstrap.servers": address, "enable.idempotence": True, "statistics.interval.ms": 50,
                         "stats_cb": lambda stats: state.update(json.loads(stats).get("eos", {})),
                         "logger": log, "log_level": 3})
    deadline = time.monotonic() + timeout_s
    while state.get("idemp_state") != ASSIGNED and time.monotonic() < deadline and not (stop and stop.is_set()):
        producer.poll(0.05)  # serves the statistics callback
    return state.get("idemp_state") == ASSIGNED


class ProducerIdWarmUp:
    """``ProducerIdWarmUp(addresses).start()``; ``stop()`` before the brokers go: a broker killed or paused meanwhile
    must not hold the cluster's close for the warm-up's timeout."""

    STOP_S = 2.0  # a producer that asks no more closes at once

    def __init__(self, addresses: list[str], timeout_s: float = 15.0) -> None:
        self.timeout_s = timeout_s
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._warm, args=(a,), name=f"producer-ids {a}", daemon=True)
                         for a in addresses]

    def start(self) -> ProducerIdWarmUp:
        for thread in self._threads:
            thread.start()
        return self

    def _warm(self, address: str) -> None:
        try:
            if not producer_id_assigned(address, self.timeout_s, self._stop) and not self._stop.is_set():
                log.info("broker %s assigned no producer id within %.0f s (the load's producer will ask again)",
                         address, self.timeout_s)
        except Exception as exc:  # noqa: BLE001 - only a head start: the load's producers ask for themselves
            log.info("asking broker %s for a producer id failed: %s", address, exc)

    def stop(self) -> bool:
        """Ask no more; whether every producer has closed (within ``STOP_S``)."""
        self._stop.set()
        for thread in self._threads:
            if thread.ident is not None:  # started
                thread.join(self.STOP_S)
        return not any(thread.is_alive() for thread in self._threads)
