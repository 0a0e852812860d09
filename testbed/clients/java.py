"""java: Kafka's own clients. A member is kafka-tools' VerifiableConsumer driven by ``testbed.members.java.member``; a
member host is a JVM of KafkaConsumers (``testbed.members.java.host``); a share member a KafkaShareConsumer
(``java_share``, kafka-clients >= 4.1, share.acknowledgement.mode implicit/explicit); a Kafka Streams instance
testbed's own application (``java_streams``; the streams rebalance protocol, KIP-1071, production-ready from 4.2).
Its runners are plain Python driving a JVM: they run in the project's own interpreter.

Defaults: Kafka's ``ConsumerConfig`` (kafka-clients >= 3.0, KIP-735): ``session.timeout.ms`` 45000,
``max.poll.interval.ms`` 300000, ``heartbeat.interval.ms`` 3000 (read from ``new ConsumerConfig(...)`` of
kafka-clients 4.1.1 and 4.3.1). But VerifiableConsumer 3.9.x defaults its ``--session-timeout`` flag to 30000 and
always passes it (``argParser``/``createFromArgs``, read with javap in kafka-tools 3.9.1); 4.0.0 and 4.1.1 pass it
only when given (KAFKA-18156), so the client's 45000 applies. VerifiableConsumer has no heartbeat flag.
"""

from __future__ import annotations

from typing import Dict

from .family import ClientFamily, Installation, Runner, Timeouts
from .owned import (ASSIGNORS, CLUSTER, COMMIT_MODE, GROUP, GROUP_PROTOCOL, MAX_POLL_INTERVAL, MAX_POLL_RECORDS,
                    MEMBER_NAME, OFFSET_RESET, REMOTE_ASSIGNOR, SESSION_TIMEOUT, SHARE_ACKNOWLEDGEMENT, STATIC, Owner,
                    spec_field)

# Java consumer properties (VerifiableConsumer, the member host's KafkaConsumers). The deserializers are the
# runner's (instances passed to the consumer's constructor win over the properties); testbed.member.slot is
# what the seed assignors in Java read the member's slot from (assignor_classes.JAVA_SLOT_PROPERTY).
DESERIALIZERS = Owner("the member's deserializers", "the runner builds the consumer with its own")
OWNED: Dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "group.id": GROUP, "client.id": MEMBER_NAME,
    "enable.auto.commit": COMMIT_MODE, "auto.offset.reset": OFFSET_RESET, "max.poll.records": MAX_POLL_RECORDS,
    "partition.assignment.strategy": ASSIGNORS, "group.protocol": GROUP_PROTOCOL,
    "group.remote.assignor": REMOTE_ASSIGNOR, "session.timeout.ms": SESSION_TIMEOUT,
    "max.poll.interval.ms": MAX_POLL_INTERVAL, "group.instance.id": STATIC,
    "key.deserializer": DESERIALIZERS, "value.deserializer": DESERIALIZERS,
    "testbed.member.slot": Owner("the member's slot", "testbed passes each member's slot to the seed assignors"),
}
OWNED_SHARE: Dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "group.id": GROUP, "client.id": MEMBER_NAME,
    "share.acknowledgement.mode": SHARE_ACKNOWLEDGEMENT, "max.poll.records": MAX_POLL_RECORDS,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "key.deserializer": DESERIALIZERS, "value.deserializer": DESERIALIZERS,
}
# Kafka Streams properties (testbed's Streams application, testbed.members.java.streams).
STREAMS_TOPOLOGY = Owner("the application's topology", "it reads and writes bytes with serdes of its own")
OWNED_STREAMS: Dict[str, Owner] = {
    "application.id": Owner("the run's group", "use the scenario's group_id (a Streams application's id is its group)"),
    "bootstrap.servers": CLUSTER, "client.id": MEMBER_NAME,
    "state.dir": spec_field("streams.state", " (kept: a directory per slot that outlives a bounce; fresh: a new one "
                            "per start)"),
    "num.standby.replicas": spec_field("streams.num_standby_replicas"),
    "processing.guarantee": spec_field("streams.processing_guarantee", " (at_least_once, exactly_once_v2)"),
    "group.protocol": GROUP_PROTOCOL, "group.instance.id": STATIC, "session.timeout.ms": SESSION_TIMEOUT,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "default.key.serde": STREAMS_TOPOLOGY, "default.value.serde": STREAMS_TOPOLOGY,
}

JAVA = ClientFamily(
    name="java",
    member=Runner("testbed.members.java.member"),
    share=Runner("testbed.members.java.share"),
    streams=Runner("testbed.members.java.streams"),
    host="testbed.members.java.host",
    installation=Installation("maven", "org.apache.kafka:kafka-tools"),
    timeouts=Timeouts(session_timeout_ms=45_000, max_poll_interval_ms=300_000,
                      heartbeat_key="heartbeat.interval.ms", heartbeat_interval_ms=3_000,
                      older_session_timeouts=(((4,), 30_000),)),
    # and testbed's seed assignors in Java by class name (testbed.members.spec.JAVA_SEED_ASSIGNORS)
    classic_assignors=("range", "roundrobin", "sticky", "cooperative-sticky"),
    group_protocols={"classic": (), "consumer": (), "share": (4, 1), "streams": (4, 2)},
    default_version="4.1.1",
    # A user's JVM program under testbed's Java agent (testbed.members.java.agent): KafkaConsumer from kafka-clients 2.5
    # (ConsumerGroupMetadata, onPartitionsLost) on.
    instrumented_since=(2, 5),
    program_runtime="jvm",
    supported_series=("3.9.", "4."),
    # testbed's Streams application is written against the Processor API of kafka-streams 2.7 on (2.8.2 to 4.4.0
    # compiled and run: docs/streams.md)
    streams_series=("2.8.", "3.", "4."),
    owned_settings=OWNED,
    owned_share_settings=OWNED_SHARE,
    owned_streams_settings=OWNED_STREAMS,
)
