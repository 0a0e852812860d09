"""The client settings testbed decides itself, per client family: a spec's ``client_config`` may not set them.

A member's settings are testbed's (from the run and the spec's fields) with the spec's ``client_config`` on
top (``testbed.members.client_settings``). A key testbed sets would either be overridden without a word or
break what testbed measures (a member named otherwise than its history, a commit mode the runner does not
follow), so ``MemberSpec`` refuses it before anything starts, naming what decides it and what to write instead.

Imported by ``spec`` inside the per-version virtualenvs: stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Owner:
    """What decides an owned setting, and what a scenario writes instead."""

    decided_by: str
    instead: str


CLUSTER = Owner("the run's cluster", "the scenario's cluster decides it (cluster.bootstrap_servers for one of yours)")
GROUP = Owner("the run's group", "use the scenario's group_id")
MEMBER_NAME = Owner("the member's name", "testbed names each member (m0, m1.1, ...): its history and the brokers' "
                                         "logs are matched by it")
CALLBACKS = Owner("testbed's callbacks", "the runner records the client's answers through them; a setting here is "
                                         "a value, not a function")


def _field(name: str, hint: str = "") -> Owner:
    return Owner(name, f"use the spec's {name}{hint}")


COMMIT_MODE = _field("commit_mode", " (auto, sync, on_revoke)")
ASSIGNORS = _field("assignors")
GROUP_PROTOCOL = _field("group_protocol")
REMOTE_ASSIGNOR = _field("remote_assignor")
SESSION_TIMEOUT = _field("session_timeout_ms")
MAX_POLL_INTERVAL = _field("max_poll_interval_ms")
MAX_POLL_RECORDS = _field("max_poll_records")
STATIC = _field("static", ": true (the id is derived from the member's slot, so a replacement rejoins as it)")
OFFSET_RESET = _field("auto_offset_reset")
SHARE_ACKNOWLEDGEMENT = _field("share_acknowledgement", " (implicit, explicit)")

# librdkafka properties (confluent-kafka Consumer). max.poll.records: the runner's consume(num_messages=...) is
# what bounds a poll, so the property would be silently ignored.
CONFLUENT: dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "metadata.broker.list": CLUSTER,
    "group.id": GROUP, "client.id": MEMBER_NAME,
    "enable.auto.commit": COMMIT_MODE, "partition.assignment.strategy": ASSIGNORS,
    "group.protocol": GROUP_PROTOCOL, "group.remote.assignor": REMOTE_ASSIGNOR,
    "session.timeout.ms": SESSION_TIMEOUT, "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "max.poll.records": MAX_POLL_RECORDS, "group.instance.id": STATIC, "auto.offset.reset": OFFSET_RESET,
    **{cb: CALLBACKS for cb in ("on_commit", "error_cb", "stats_cb", "throttle_cb", "oauth_cb", "logger")},
}
# confluent-kafka ShareConsumer (KIP-932): the consumer-group keys it has not are refused by the client itself.
CONFLUENT_SHARE: dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "metadata.broker.list": CLUSTER,
    "group.id": GROUP, "client.id": MEMBER_NAME,
    "share.acknowledgement.mode": SHARE_ACKNOWLEDGEMENT, "max.poll.records": MAX_POLL_RECORDS,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    **{cb: CALLBACKS for cb in ("on_commit", "error_cb", "stats_cb", "throttle_cb", "oauth_cb", "logger")},
}
# kafka-python KafkaConsumer keywords. The deserializers are functions: the runner hands a handler the records'
# bytes as they are.
KAFKA_PYTHON: dict[str, Owner] = {
    "bootstrap_servers": CLUSTER, "group_id": GROUP, "client_id": MEMBER_NAME,
    "enable_auto_commit": COMMIT_MODE, "auto_offset_reset": OFFSET_RESET, "max_poll_records": MAX_POLL_RECORDS,
    "partition_assignment_strategy": ASSIGNORS, "session_timeout_ms": SESSION_TIMEOUT,
    "max_poll_interval_ms": MAX_POLL_INTERVAL, "group_instance_id": STATIC,
    "default_offset_commit_callback": CALLBACKS,
    "key_deserializer": Owner("the runner", "a handler is given the records' key and value as bytes"),
    "value_deserializer": Owner("the runner", "a handler is given the records' key and value as bytes"),
}
# aiokafka AIOKafkaConsumer keywords: kafka-python's names (aiokafka began as its asyncio port); no commit callback.
AIOKAFKA: dict[str, Owner] = {k: v for k, v in KAFKA_PYTHON.items() if k != "default_offset_commit_callback"}
# Java consumer properties (VerifiableConsumer, the member host's KafkaConsumers). The deserializers are the
# runner's (instances passed to the consumer's constructor win over the properties); testbed.member.slot is
# what the seed assignors in Java read the member's slot from (verifiable.JAVA_SLOT_PROPERTY).
JAVA_DESERIALIZERS = Owner("the member's deserializers", "the runner builds the consumer with its own")
JAVA: dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "group.id": GROUP, "client.id": MEMBER_NAME,
    "enable.auto.commit": COMMIT_MODE, "auto.offset.reset": OFFSET_RESET, "max.poll.records": MAX_POLL_RECORDS,
    "partition.assignment.strategy": ASSIGNORS, "group.protocol": GROUP_PROTOCOL,
    "group.remote.assignor": REMOTE_ASSIGNOR, "session.timeout.ms": SESSION_TIMEOUT,
    "max.poll.interval.ms": MAX_POLL_INTERVAL, "group.instance.id": STATIC,
    "key.deserializer": JAVA_DESERIALIZERS, "value.deserializer": JAVA_DESERIALIZERS,
    "testbed.member.slot": Owner("the member's slot", "testbed passes each member's slot to the seed assignors"),
}
JAVA_SHARE: dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "group.id": GROUP, "client.id": MEMBER_NAME,
    "share.acknowledgement.mode": SHARE_ACKNOWLEDGEMENT, "max.poll.records": MAX_POLL_RECORDS,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "key.deserializer": JAVA_DESERIALIZERS, "value.deserializer": JAVA_DESERIALIZERS,
}

# Kafka Streams properties (testbed's Streams application, testbed.members.java_streams).
STREAMS_TOPOLOGY = Owner("the application's topology", "it reads and writes bytes with serdes of its own")
JAVA_STREAMS: dict[str, Owner] = {
    "application.id": Owner("the run's group", "use the scenario's group_id (a Streams application's id is its group)"),
    "bootstrap.servers": CLUSTER, "client.id": MEMBER_NAME,
    "state.dir": _field("streams.state", " (kept: a directory per slot that outlives a bounce; fresh: a new one per "
                        "start)"),
    "num.standby.replicas": _field("streams.num_standby_replicas"),
    "processing.guarantee": _field("streams.processing_guarantee", " (at_least_once, exactly_once_v2)"),
    "group.protocol": GROUP_PROTOCOL, "group.instance.id": STATIC, "session.timeout.ms": SESSION_TIMEOUT,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "default.key.serde": STREAMS_TOPOLOGY, "default.value.serde": STREAMS_TOPOLOGY,
}

_TABLES: dict[tuple[str, bool], dict[str, Owner]] = {
    ("confluent-kafka", False): CONFLUENT, ("confluent-kafka", True): CONFLUENT_SHARE,
    ("kafka-python", False): KAFKA_PYTHON, ("kafka-python", True): KAFKA_PYTHON,
    ("aiokafka", False): AIOKAFKA, ("aiokafka", True): AIOKAFKA,
    ("java", False): JAVA, ("java", True): JAVA_SHARE,
}


def owned_settings(client: str, share: bool = False, streams: bool = False) -> dict[str, Owner]:
    """The settings testbed decides for members of this client (``share``: a share-group member; ``streams``: a
    Kafka Streams instance, Java only)."""
    if streams and client == "java":
        return JAVA_STREAMS
    return _TABLES[(client, share)]


def refusals(client: str, share: bool, keys: list[str], *, streams: bool = False) -> list[str]:
    """One ``client_config.<key>: ...`` line per owned key among ``keys``, in their order."""
    owned = owned_settings(client, share, streams)
    return [f"client_config.{key}: set by testbed ({owned[key].decided_by}); {owned[key].instead}"
            for key in keys if key in owned]


__all__ = ["Owner", "owned_settings", "refusals"]
