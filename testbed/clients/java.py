"""java: Kafka's own clients. A member is kafka-tools' VerifiableConsumer driven by ``testbed.members.java``; a
member host is a JVM of KafkaConsumers (``testbed.members.java_host``); a share member a KafkaShareConsumer
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

from .family import ClientFamily, Installation, Runner, Timeouts

JAVA = ClientFamily(
    name="java",
    member=Runner("testbed.members.java"),
    share=Runner("testbed.members.java_share"),
    streams=Runner("testbed.members.java_streams"),
    host="testbed.members.java_host",
    installation=Installation("maven", "org.apache.kafka:kafka-tools"),
    timeouts=Timeouts(session_timeout_ms=45_000, max_poll_interval_ms=300_000,
                      heartbeat_key="heartbeat.interval.ms", heartbeat_interval_ms=3_000,
                      older_session_timeouts=(((4,), 30_000),)),
    # and testbed's seed assignors in Java by class name (testbed.members.spec.JAVA_SEED_ASSIGNORS)
    classic_assignors=("range", "roundrobin", "sticky", "cooperative-sticky"),
    group_protocols={"classic": (), "consumer": (), "share": (4, 1), "streams": (4, 2)},
    default_version="4.1.1",
    supported_series=("3.9.", "4."),
)
