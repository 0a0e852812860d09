"""The session timeout, max.poll.interval and heartbeat interval a member really runs with: the one table of
client defaults.

A spec may leave ``session_timeout_ms`` unset (and ``client_config`` the heartbeat interval); the member then
runs with its client's default, which differs by client and version. The ``started`` event records the
effective values so the analysis need not know this table. Runners import this module inside per-version
virtualenvs: stdlib and pydantic only (through ``spec``).

Sources, each verified against the installed code on 2026-11-22:

- confluent-kafka (librdkafka): ``session.timeout.ms`` 45000 (since librdkafka 1.9, KIP-735; every
  confluent-kafka this project installs is >= 2.0), ``max.poll.interval.ms`` 300000. Read back with
  ``rd_kafka_conf_get`` on a fresh ``rd_kafka_conf_new()`` of the bundled librdkafka 2.3.0 and 2.16.0.
- kafka-python: ``KafkaConsumer.DEFAULT_CONFIG`` in ``kafka/consumer/group.py``: 3.x
  ``session_timeout_ms`` 45000 (KIP-735, dpkp/kafka-python#3030; 30000 only against brokers < 3.0,
  which this project never runs), 2.x 10000 (2.0.2 to 2.3.3); ``max_poll_interval_ms`` 300000 in both.
  The runner reads the values back from the consumer's own ``config`` dict instead, when it can.
- aiokafka: ``AIOKafkaConsumer.__init__``'s defaults in 0.8.1 and 0.14.0 (read 2026-11-26): ``session_timeout_ms``
  10000 (it never took KIP-735's 45000), ``max_poll_interval_ms`` 300000, ``heartbeat_interval_ms`` 3000.
- java: Kafka's ``ConsumerConfig`` (kafka-clients >= 3.0, KIP-735): ``session.timeout.ms`` 45000,
  ``max.poll.interval.ms`` 300000 (read from ``new ConsumerConfig(...)`` of kafka-clients 4.1.1 and 4.3.1).
  But the member is kafka-tools' VerifiableConsumer: 3.9.x defaults its ``--session-timeout`` flag to 30000
  and always passes it (``argParser``/``createFromArgs``, read with javap in kafka-tools 3.9.1); 4.0.0 and
  4.1.1 pass it only when given (KAFKA-18156), so the client's 45000 applies.
- group_protocol ``consumer`` (KIP-848): the session timeout is the broker's
  ``group.consumer.session.timeout.ms`` (default 45000, ``GroupCoordinatorConfig`` of Kafka 4.3.1),
  known to a member only when the fleet passes it (``MemberConfig.broker_session_timeout_ms``);
  max.poll.interval.ms is still enforced by the client.

Heartbeat interval (classic protocol; a spec sets it only through ``client_config``), verified on 2026-11-25:

- confluent-kafka (librdkafka): ``heartbeat.interval.ms`` 3000, read back with ``rd_kafka_conf_get`` on a fresh
  ``rd_kafka_conf_new()`` of the librdkafka 2.16.0 bundled with confluent-kafka 2.16.1 (CONFIGURATION.md gives
  3000 for every release this project installs).
- kafka-python: ``heartbeat_interval_ms`` 3000 in ``KafkaConsumer.DEFAULT_CONFIG`` of 2.3.3 and 3.0.12.
- java: ``heartbeat.interval.ms`` 3000, read from ``new ConsumerConfig(...)`` of kafka-clients 4.1.1 (3000 since
  0.10.1); VerifiableConsumer has no flag for it.
- group_protocol ``consumer``: the broker's ``group.consumer.heartbeat.interval.ms`` (default 5000,
  ``GroupCoordinatorConfig`` of kafka-group-coordinator 4.1.1), known only when the fleet passes it
  (``MemberConfig.broker_heartbeat_interval_ms``). Share members: the share group's, the harness's.
"""

from __future__ import annotations

from collections.abc import Mapping

from .spec import AIOKAFKA_SESSION_TIMEOUT_MS, DEFAULT_JAVA_VERSION, MemberSpec, _version_tuple

LIBRDKAFKA_SESSION_TIMEOUT_MS = 45_000
LIBRDKAFKA_MAX_POLL_INTERVAL_MS = 300_000
KAFKA_PYTHON_3_SESSION_TIMEOUT_MS = 45_000
KAFKA_PYTHON_2_SESSION_TIMEOUT_MS = 10_000
KAFKA_PYTHON_MAX_POLL_INTERVAL_MS = 300_000
AIOKAFKA_MAX_POLL_INTERVAL_MS = 300_000
AIOKAFKA_HEARTBEAT_INTERVAL_MS = 3_000
JAVA_SESSION_TIMEOUT_MS = 45_000
JAVA_MAX_POLL_INTERVAL_MS = 300_000
VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS = 30_000  # kafka-tools 3.x VerifiableConsumer's --session-timeout default
BROKER_CONSUMER_SESSION_TIMEOUT_MS = 45_000  # group.consumer.session.timeout.ms
BROKER_CONSUMER_SESSION_TIMEOUT_KEY = "group.consumer.session.timeout.ms"
LIBRDKAFKA_HEARTBEAT_INTERVAL_MS = 3_000
KAFKA_PYTHON_HEARTBEAT_INTERVAL_MS = 3_000
JAVA_HEARTBEAT_INTERVAL_MS = 3_000
BROKER_CONSUMER_HEARTBEAT_INTERVAL_MS = 5_000  # group.consumer.heartbeat.interval.ms
BROKER_CONSUMER_HEARTBEAT_INTERVAL_KEY = "group.consumer.heartbeat.interval.ms"
# Each client's heartbeat setting and its default (the same in every version this project installs).
HEARTBEAT_SETTINGS: dict[str, tuple[str, int]] = {
    "confluent-kafka": ("heartbeat.interval.ms", LIBRDKAFKA_HEARTBEAT_INTERVAL_MS),
    "kafka-python": ("heartbeat_interval_ms", KAFKA_PYTHON_HEARTBEAT_INTERVAL_MS),
    "aiokafka": ("heartbeat_interval_ms", AIOKAFKA_HEARTBEAT_INTERVAL_MS),
    "java": ("heartbeat.interval.ms", JAVA_HEARTBEAT_INTERVAL_MS),
}


def default_timeouts(client: str, client_version: str | None) -> tuple[int, int]:
    """(session timeout, max.poll.interval) a classic-protocol member of this client uses when the spec sets none.

    ``client_version`` None means the version installed in the project venv: kafka-python 3.x
    (pyproject), java ``DEFAULT_JAVA_VERSION``.
    """
    if client == "confluent-kafka":
        return LIBRDKAFKA_SESSION_TIMEOUT_MS, LIBRDKAFKA_MAX_POLL_INTERVAL_MS
    if client == "kafka-python":
        major = _version_tuple(client_version)[:1] if client_version else (3,)
        session = KAFKA_PYTHON_2_SESSION_TIMEOUT_MS if major < (3,) else KAFKA_PYTHON_3_SESSION_TIMEOUT_MS
        return session, KAFKA_PYTHON_MAX_POLL_INTERVAL_MS
    if client == "aiokafka":
        return AIOKAFKA_SESSION_TIMEOUT_MS, AIOKAFKA_MAX_POLL_INTERVAL_MS
    if client == "java":
        version = _version_tuple(client_version or DEFAULT_JAVA_VERSION)
        session = VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS if version < (4,) else JAVA_SESSION_TIMEOUT_MS
        return session, JAVA_MAX_POLL_INTERVAL_MS
    raise ValueError(f"client must be one of confluent-kafka, kafka-python, aiokafka, java; got {client!r}")


def effective_timeouts(spec: MemberSpec, *, client_version: str | None = None,
                       broker_session_timeout_ms: int | None = None) -> tuple[int | None, int | None]:
    """(session_timeout_ms, max_poll_interval_ms) the member really runs with.

    ``client_version``: the version actually running (a runner knows it), else the spec's. Under
    group_protocol 'consumer' the session timeout is the broker's: ``broker_session_timeout_ms``,
    or None when it is not known.
    """
    session, max_poll = default_timeouts(spec.client, client_version or spec.client_version)
    if spec.max_poll_interval_ms is not None:
        max_poll = spec.max_poll_interval_ms
    if spec.group_protocol == "consumer":
        return broker_session_timeout_ms, max_poll
    if spec.group_protocol in ("share", "streams"):  # the group's share.* / streams.* session timeout, not the member's
        return None, max_poll
    return (spec.session_timeout_ms if spec.session_timeout_ms is not None else session), max_poll


def effective_heartbeat_interval_ms(spec: MemberSpec, settings: Mapping[str, object], *,
                                    broker_heartbeat_interval_ms: int | None = None) -> int | None:
    """The heartbeat interval the member really runs with: its settings' (``client_config``), else its client's
    default; under group_protocol 'consumer' the broker's (``broker_heartbeat_interval_ms``, None when not
    known); None for a share member (the share group's) or a value the client would not take."""
    if spec.group_protocol == "consumer":
        return broker_heartbeat_interval_ms
    if spec.group_protocol in ("share", "streams"):
        return None
    key, default = HEARTBEAT_SETTINGS[spec.client]
    value = settings.get(key, default)
    try:
        return int(value)  # type: ignore[call-overload]  # Java settings hold it as text
    except (TypeError, ValueError):
        return None


def broker_consumer_session_timeout_ms(broker_settings: dict[str, str] | None) -> int:
    """group.consumer.session.timeout.ms of a cluster the testbed started with these settings."""
    value = (broker_settings or {}).get(BROKER_CONSUMER_SESSION_TIMEOUT_KEY)
    return int(value) if value is not None else BROKER_CONSUMER_SESSION_TIMEOUT_MS


def broker_consumer_heartbeat_interval_ms(broker_settings: dict[str, str] | None) -> int:
    """group.consumer.heartbeat.interval.ms of a cluster the testbed started with these settings."""
    value = (broker_settings or {}).get(BROKER_CONSUMER_HEARTBEAT_INTERVAL_KEY)
    return int(value) if value is not None else BROKER_CONSUMER_HEARTBEAT_INTERVAL_MS


__all__ = [
    "BROKER_CONSUMER_HEARTBEAT_INTERVAL_MS",
    "BROKER_CONSUMER_SESSION_TIMEOUT_MS",
    "HEARTBEAT_SETTINGS",
    "broker_consumer_heartbeat_interval_ms",
    "broker_consumer_session_timeout_ms",
    "effective_heartbeat_interval_ms",
    "default_timeouts",
    "effective_timeouts",
]
