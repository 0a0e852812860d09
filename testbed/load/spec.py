"""The load's parameters as typed models, validated before any process starts.

:class:`LoadSpec` is what a scenario asks for; :class:`ProducerProcessParams` is what one Locust
process receives (through the environment variable :data:`PARAMS_ENV`, as JSON), because
Locust workers are separate processes that import the locustfile on their own.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..errors import ConfigError
from .records import KeyDistribution, min_payload_bytes

PARAMS_ENV = "TESTBED_LOAD_PARAMS"
# After the schedule ends: drain deliveries, a worker's stats report (1 s) and a CSV snapshot (1 s).
RUN_TIME_GRACE_S = 3.0

# Reliable, ordered delivery: idempotence keeps retries from writing a record twice (which would
# put a second, unacknowledged copy in the topic), and a short linger batches records so the
# broker round trips do not bound the rate.
DEFAULT_PRODUCER_CONFIG: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 5,
    "queue.buffering.max.messages": 200_000,
}


def check_loopback_bootstrap(servers: str) -> str:
    hosts = [s.strip().rsplit(":", 1)[0] for s in servers.split(",") if s.strip()]
    if not hosts or any(not (h.startswith("127.") or h == "localhost") for h in hosts):
        raise ValueError(f"bootstrap_servers must be 127.x addresses only (host:port,...), got {servers!r}")
    return servers


class LoadSpec(BaseModel):
    """``LoadSpec(bootstrap_servers="127.0.0.1:9092", topic="t", rate=500, users=5, duration_s=10)``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bootstrap_servers: str
    topic: str = Field(min_length=1)
    rate: float = Field(gt=0, description="target total rate, records/s, over all users and workers")
    users: int = Field(default=4, ge=1, description="Locust users over all processes")
    duration_s: float = Field(gt=0, description="Locust's --run-time; the load stops by itself after it")
    workers: int = Field(default=0, ge=0, description="0: one Locust process; n: a master and n workers")
    key_space: int = Field(default=1000, ge=1, description="distinct keys of this load")
    key_distribution: KeyDistribution = "uniform"
    zipf_exponent: float = Field(default=1.1, gt=0)
    payload_bytes: int = Field(default=200, ge=1, description="size of each record's value")
    name: str = Field(default="producer", pattern=r"^[A-Za-z0-9_.-]+$",
                      description="prefix of producer ids (<name>-<i>) and of keys (<name>-<index>)")
    seed: int | None = Field(default=None, description="key draws are reproducible when set")
    producer_config: dict[str, Any] = Field(default_factory=dict, description="librdkafka overrides")
    stop_timeout_s: float = Field(default=15.0, gt=0, description="grace for a graceful stop before a kill")
    startup_timeout_s: float = Field(default=60.0, gt=0, description="grace for Locust to start (and workers)")

    @field_validator("bootstrap_servers")
    @classmethod
    def _loopback_only(cls, v: str) -> str:
        return check_loopback_bootstrap(v)

    @model_validator(mode="after")
    def _consistent(self) -> "LoadSpec":
        processes = max(1, self.workers)
        if self.key_space < processes:
            raise ValueError(f"key_space must be >= the number of producing processes ({processes}), "
                             f"got {self.key_space}")
        if self.users < processes:
            raise ValueError(f"users must be >= workers ({processes}) so that every worker produces, "
                             f"got {self.users}")
        need = min_payload_bytes(self.key_space, self.name)
        if self.payload_bytes < need:
            raise ValueError(f"payload_bytes must be >= {need} to hold key, seq and ts, got {self.payload_bytes}")
        if "bootstrap.servers" in self.producer_config:
            raise ValueError("producer_config must not set bootstrap.servers; use bootstrap_servers")
        return self

    @property
    def processes(self) -> int:
        """Producing Locust processes: the single process, or the workers (the master produces nothing)."""
        return max(1, self.workers)

    @property
    def rate_per_user(self) -> float:
        return self.rate / self.users

    @property
    def locust_run_time_arg(self) -> str:
        """Locust's --run-time (whole seconds): the schedule's duration plus a grace for user spawning.

        The records themselves are bounded by the users' schedule (exactly ``duration_s`` long from
        the first user's start); Locust's own limit only ends the processes after it.
        """
        return f"{math.ceil(self.duration_s + RUN_TIME_GRACE_S)}s"

    def producer_id(self, process_index: int) -> str:
        return f"{self.name}-{process_index}"

    @classmethod
    def parse(cls, **fields: Any) -> "LoadSpec":
        """Validate, turning pydantic's error into a ConfigError naming the fields."""
        try:
            return cls(**fields)
        except ValidationError as exc:
            raise ConfigError(f"invalid load spec: {exc}") from exc


class ProducerProcessParams(BaseModel):
    """One Locust process's share of a load."""

    model_config = ConfigDict(frozen=True)

    spec: LoadSpec
    process_index: int = Field(ge=0)
    ack_log: str = Field(description="path of this process's ack log")
    failure_log: str = Field(description="path of this process's log of the records it gave up on (produce_failed)")
    finish_request: str = Field(description="a file whose appearance asks every process to stop producing")
    finished_marker: str = Field(description="a file this process writes once it stopped and drained")
    start_gate: str | None = Field(default=None, description="a file this process waits for before Locust starts "
                                   "(its producer made meanwhile); None: it starts at once")

    @property
    def producer_id(self) -> str:
        return self.spec.producer_id(self.process_index)
