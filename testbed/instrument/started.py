"""The ``started`` event of an instrumented program: its consumer's own settings, in the runners' terms.

Pure functions of the settings the program gave its client (and, for kafka-python, the values the
consumer resolved), so they are tested without a client. Timeouts the program did not set are the
client's defaults, as its family declares them (``testbed.clients``, stdlib only: this module runs in the
program's interpreter): librdkafka 45000 / 300000 / 3000 ms session / max.poll.interval /
heartbeat; kafka-python 3.x the same, 2.x a 10000 ms session. Under ``group.protocol=consumer``
(KIP-848) the session and heartbeat are the brokers' and unknown here (null).

``settings`` records what the program configured, JSON-able: callbacks are left out, classes named
``module:Class``, other objects kept as their ``repr``, and values of secret-looking keys (passwords,
tokens, JAAS configs) replaced by ``***`` so the history never holds them.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

from testbed.clients import FAMILIES

LIBRDKAFKA = FAMILIES["confluent-kafka"].timeouts
LIBRDKAFKA_SESSION_TIMEOUT_MS = LIBRDKAFKA.session_timeout_ms
LIBRDKAFKA_MAX_POLL_INTERVAL_MS = LIBRDKAFKA.max_poll_interval_ms
LIBRDKAFKA_HEARTBEAT_INTERVAL_MS = LIBRDKAFKA.heartbeat_interval_ms
LIBRDKAFKA_DEFAULT_STRATEGY = "range,roundrobin"
KAFKA_PYTHON = FAMILIES["kafka-python"].timeouts
KAFKA_PYTHON_3_SESSION_TIMEOUT_MS = KAFKA_PYTHON.session_timeout_for((3,))
KAFKA_PYTHON_2_SESSION_TIMEOUT_MS = KAFKA_PYTHON.session_timeout_for((2,))
KAFKA_PYTHON_MAX_POLL_INTERVAL_MS = KAFKA_PYTHON.max_poll_interval_ms
KAFKA_PYTHON_HEARTBEAT_INTERVAL_MS = KAFKA_PYTHON.heartbeat_interval_ms

EAGER_ASSIGNORS = frozenset({"range", "roundrobin", "sticky"})
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})
KAFKA_PYTHON_BUILTIN_PREFIX = "kafka.coordinator.assignors."
SECRET_KEY_WORDS = ("password", "secret", "token", "jaas", "credential", "oauthbearer", ".pem")
REDACTED = "***"


# ---- settings as JSON ----------------------------------------------------------------------------


def class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def json_value(value: Any) -> Any:
    """A setting's value as JSON can hold it (non-finite floats and objects as their repr)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, type):
        return class_path(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def is_secret(key: str) -> bool:
    lowered = key.lower()
    return any(word in lowered for word in SECRET_KEY_WORDS)


def json_settings(settings: Dict[str, Any]) -> Dict[str, Any]:
    """The program's client settings for the history: no callbacks, no secrets, JSON values."""
    out: Dict[str, Any] = {}
    for key, value in settings.items():
        key = str(key)
        if callable(value) and not isinstance(value, type):
            continue  # a callback: code, not a setting
        out[key] = REDACTED if is_secret(key) and value is not None else json_value(value)
    return out


# ---- shared rules -----------------------------------------------------------------------------------


def is_true(value: Any) -> bool:
    """A librdkafka boolean as a program may give it: True, 'true', 'false', 0..."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "0", "no", "off", "")
    return bool(value)


def as_int(value: Any) -> Optional[int]:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def rebalance_protocol(group_protocol: str, assignors: Sequence[str]) -> Optional[str]:
    """'consumer' under KIP-848, else the protocol every listed assignor speaks; None when unknown."""
    if group_protocol == "consumer":
        return "consumer"
    if assignors and all(a in COOPERATIVE_ASSIGNORS for a in assignors):
        return "cooperative"
    if assignors and all(a in EAGER_ASSIGNORS for a in assignors):
        return "eager"
    return None


def program_fields(spec_name: Optional[str], command: Optional[List[str]], pid: int) -> Dict[str, Any]:
    """What every instrumented program's started event has besides its client's settings."""
    return {"pid": pid, "spec": spec_name, "command": command, "instrumented": True}


# ---- confluent-kafka ------------------------------------------------------------------------------


def confluent_started(conf: Dict[str, Any], topics: Sequence[str], client_version: str,
                      librdkafka_version: Optional[str]) -> Dict[str, Any]:
    """Started fields of a confluent-kafka consumer built with ``conf`` (its merged config dict)."""
    group_protocol = str(conf.get("group.protocol") or "classic").lower()
    if group_protocol == "consumer":
        assignors: List[str] = []  # KIP-848 refuses partition.assignment.strategy: the broker assigns
    else:
        strategy = conf.get("partition.assignment.strategy") or LIBRDKAFKA_DEFAULT_STRATEGY
        assignors = [s.strip() for s in str(strategy).split(",") if s.strip()]
    classic = group_protocol != "consumer"

    def setting(key: str, default: Optional[int]) -> Optional[int]:
        value = as_int(conf.get(key))
        return value if value is not None else default

    return {
        "client": "confluent-kafka",
        "client_version": client_version,
        "group_id": str(conf.get("group.id") or ""),
        "topics": [str(t) for t in topics],
        "assignors": assignors,
        "group_protocol": group_protocol,
        "remote_assignor": conf.get("group.remote.assignor") or None,
        "rebalance_protocol": rebalance_protocol(group_protocol, assignors),
        "group_instance_id": conf.get("group.instance.id") or None,
        "commit_mode": "auto" if is_true(conf.get("enable.auto.commit", True)) else "manual",
        "session_timeout_ms": setting("session.timeout.ms", LIBRDKAFKA_SESSION_TIMEOUT_MS) if classic else None,
        "max_poll_interval_ms": setting("max.poll.interval.ms", LIBRDKAFKA_MAX_POLL_INTERVAL_MS),
        "heartbeat_interval_ms": (setting("heartbeat.interval.ms", LIBRDKAFKA_HEARTBEAT_INTERVAL_MS)
                                  if classic else None),
        "settings": json_settings(conf),
        "librdkafka_version": librdkafka_version,
    }


# ---- kafka-python ---------------------------------------------------------------------------------


def kafka_python_assignor_name(assignor: Any) -> str:
    """A built-in's protocol name ('range', 'roundrobin', 'sticky', 'cooperative-sticky'), else 'module:Class'
    (an instance, as a custom assignor may be given, is named by its class)."""
    cls = assignor if isinstance(assignor, type) else type(assignor)
    name = getattr(cls, "name", None)
    if cls.__module__.startswith(KAFKA_PYTHON_BUILTIN_PREFIX) and isinstance(name, str):
        return name
    return class_path(cls)


def kafka_python_major(version: str) -> int:
    digits = version.split(".")[0]
    return int(digits) if digits.isdigit() else 0


def kafka_python_started(config: Dict[str, Any], user_settings: Dict[str, Any], topics: Sequence[str],
                         client_version: str, resolved_protocol: Optional[str],
                         listener_thread: str) -> Dict[str, Any]:
    """Started fields of a kafka-python consumer: ``config`` as the consumer resolved it (its ``config``
    dict), ``user_settings`` the keywords the program passed, ``resolved_protocol`` the coordinator's
    rebalance protocol when it tells ('eager' / 'cooperative', 3.x), else derived from the assignors."""
    assignors = [kafka_python_assignor_name(a) for a in config.get("partition_assignment_strategy") or ()]
    session_default = (KAFKA_PYTHON_2_SESSION_TIMEOUT_MS if kafka_python_major(client_version) < 3
                       else KAFKA_PYTHON_3_SESSION_TIMEOUT_MS)

    def setting(key: str, default: int) -> int:
        value = as_int(config.get(key))
        return value if value is not None else default

    settings = dict(user_settings)
    if "partition_assignment_strategy" in settings:
        settings["partition_assignment_strategy"] = [
            kafka_python_assignor_name(a) for a in settings["partition_assignment_strategy"] or ()]
    return {
        "client": "kafka-python",
        "client_version": client_version,
        "group_id": str(config.get("group_id") or ""),
        "topics": [str(t) for t in topics],
        "assignors": assignors,
        "group_protocol": "classic",
        "remote_assignor": None,
        "rebalance_protocol": resolved_protocol or rebalance_protocol("classic", assignors),
        "group_instance_id": config.get("group_instance_id") or None,
        "commit_mode": "auto" if config.get("enable_auto_commit", True) else "manual",
        "session_timeout_ms": setting("session_timeout_ms", session_default),
        "max_poll_interval_ms": setting("max_poll_interval_ms", KAFKA_PYTHON_MAX_POLL_INTERVAL_MS),
        "heartbeat_interval_ms": setting("heartbeat_interval_ms", KAFKA_PYTHON_HEARTBEAT_INTERVAL_MS),
        "settings": json_settings(settings),
        "listener_thread": listener_thread,
    }


AIOKAFKA_BUILTIN_PREFIXES = ("aiokafka.coordinator.assignors.", KAFKA_PYTHON_BUILTIN_PREFIX)  # 0.9+, 0.8.x


def aiokafka_assignor_name(assignor: Any) -> str:
    """A built-in's protocol name ('range', 'roundrobin', 'sticky'), else 'module:Class'."""
    cls = assignor if isinstance(assignor, type) else type(assignor)
    name = getattr(cls, "name", None)
    if cls.__module__.startswith(AIOKAFKA_BUILTIN_PREFIXES) and isinstance(name, str):
        return name
    return class_path(cls)


def aiokafka_started(consumer: Any, user_settings: Dict[str, Any], topics: Sequence[str],
                     client_version: str) -> Dict[str, Any]:
    """Started fields of an AIOKafkaConsumer, from the settings it keeps (its constructor stores each keyword as
    a private attribute; it keeps no config dict) and the keywords the program passed."""
    assignors = [aiokafka_assignor_name(a) for a in getattr(consumer, "_partition_assignment_strategy", ()) or ()]
    settings = dict(user_settings)
    if "partition_assignment_strategy" in settings:
        settings["partition_assignment_strategy"] = [
            aiokafka_assignor_name(a) for a in settings["partition_assignment_strategy"] or ()]
    return {
        "client": "aiokafka",
        "client_version": client_version,
        "group_id": str(getattr(consumer, "_group_id", None) or ""),
        "topics": [str(t) for t in topics],
        "assignors": assignors,
        "group_protocol": "classic",
        "remote_assignor": None,
        "rebalance_protocol": "eager",  # aiokafka's coordinator has no other
        "group_instance_id": getattr(consumer, "_group_instance_id", None) or None,
        "commit_mode": "auto" if getattr(consumer, "_enable_auto_commit", True) else "manual",
        "session_timeout_ms": as_int(getattr(consumer, "_session_timeout_ms", None)),
        "max_poll_interval_ms": as_int(getattr(consumer, "_max_poll_interval_ms", None)),
        "heartbeat_interval_ms": as_int(getattr(consumer, "_heartbeat_interval_ms", None)),
        "settings": json_settings(settings),
        "listener_thread": "event_loop",
    }
