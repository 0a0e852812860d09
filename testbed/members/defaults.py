"""The session timeout, max.poll.interval and heartbeat interval a member really runs with.

A spec may leave ``session_timeout_ms`` unset (and ``client_config`` the heartbeat interval); the member then
runs with its client's default, which differs by client and version: each family declares its own
(``testbed.clients``, ``Timeouts``, with the sources each was verified against). The ``started`` event records the
effective values so the analysis need not know them. Runners import this module inside per-version
virtualenvs: stdlib and pydantic only (through ``spec``).

- group_protocol ``consumer`` (KIP-848): the session timeout is the broker's
  ``group.consumer.session.timeout.ms`` (default 45000, ``GroupCoordinatorConfig`` of Kafka 4.3.1),
  known to a member only when the fleet passes it (``MemberConfig.broker_session_timeout_ms``);
  max.poll.interval.ms is still enforced by the client. Its heartbeat interval is the broker's
  ``group.consumer.heartbeat.interval.ms`` (default 5000, ``GroupCoordinatorConfig`` of kafka-group-coordinator
  4.1.1), known only when the fleet passes it (``MemberConfig.broker_heartbeat_interval_ms``).
- Share members: the share group's, the harness's.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..clients import FAMILIES, family
from .spec import MemberSpec, _version_tuple

# kafka-tools 3.x VerifiableConsumer's --session-timeout default (the java runner passes it itself)
VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS = family("java").timeouts.session_timeout_for((3,))
BROKER_CONSUMER_SESSION_TIMEOUT_MS = 45_000  # group.consumer.session.timeout.ms
BROKER_CONSUMER_SESSION_TIMEOUT_KEY = "group.consumer.session.timeout.ms"
BROKER_CONSUMER_HEARTBEAT_INTERVAL_MS = 5_000  # group.consumer.heartbeat.interval.ms
BROKER_CONSUMER_HEARTBEAT_INTERVAL_KEY = "group.consumer.heartbeat.interval.ms"
# Each client's heartbeat setting and its default (the same in every version this project installs).
HEARTBEAT_SETTINGS: dict[str, tuple[str, int]] = {
    name: (f.timeouts.heartbeat_key, f.timeouts.heartbeat_interval_ms) for name, f in FAMILIES.items()
}


def default_timeouts(client: str, client_version: str | None) -> tuple[int, int]:
    """(session timeout, max.poll.interval) a classic-protocol member of this client uses when the spec sets none.

    ``client_version`` None means the version the family runs by default: its ``default_version``, else the one
    installed in the project venv (the newest defaults: kafka-python 3.x, pyproject).
    """
    if client not in FAMILIES:
        raise ValueError(f"client must be one of {', '.join(FAMILIES)}; got {client!r}")
    timeouts = FAMILIES[client].timeouts
    version = client_version or FAMILIES[client].default_version
    session = timeouts.session_timeout_for(_version_tuple(version) if version else None)
    return session, timeouts.max_poll_interval_ms


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
