"""A Locust process's producer, started before Locust is imported.

An idempotent librdkafka producer asks for its producer id half a second after its creation when it has no broker
connection yet, and the load's first acknowledgement, which a run's first step waits for, waits for that id.
Started at the very beginning of the process (``locust_main``), the half second runs beside Locust's imports and
start instead of after them. The first user's session takes it (``take``); a process started another way makes
its producer then.

Imported before gevent has patched the process only by ``locust_main``, which patches first: nothing here may
import Locust.
"""

from __future__ import annotations

import logging
import os
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, Producer

from ..errors import ConfigError
from .spec import DEFAULT_PRODUCER_CONFIG, PARAMS_ENV, ProducerProcessParams

log = logging.getLogger(__name__)
_started: Producer | None = None


def params_from_env() -> ProducerProcessParams:
    raw = os.environ.get(PARAMS_ENV)
    if not raw:
        raise ConfigError(f"{PARAMS_ENV} is not set: start this locustfile through testbed.load.LoadGenerator")
    return ProducerProcessParams.model_validate_json(raw)


def producer_config(params: ProducerProcessParams) -> dict[str, Any]:
    spec = params.spec
    return {**DEFAULT_PRODUCER_CONFIG, **spec.producer_config, "bootstrap.servers": spec.bootstrap_servers,
            "client.id": params.producer_id, "error_cb": partial(_client_error, params.producer_id)}


def _client_error(producer_id: str, err: KafkaError) -> None:
    log.warning("producer %s: %s", producer_id, err)


def start(params: ProducerProcessParams) -> None:
    """Create this process's producer now (librdkafka connects and asks for its producer id on its own threads)."""
    global _started
    _started = Producer(producer_config(params))


def take(params: ProducerProcessParams) -> Producer:
    """The producer ``start`` made, once; else a new one."""
    global _started
    producer, _started = _started, None
    return producer if producer is not None else Producer(producer_config(params))
