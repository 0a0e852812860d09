"""confluent-kafka: librdkafka's Python binding (``testbed.members.confluent``, ``confluent_share``).

Defaults, verified against the installed code on 2026-11-22 and 2026-11-25: ``session.timeout.ms`` 45000 (since
librdkafka 1.9, KIP-735; every confluent-kafka this project installs is >= 2.0), ``max.poll.interval.ms`` 300000,
``heartbeat.interval.ms`` 3000, read back with ``rd_kafka_conf_get`` on a fresh ``rd_kafka_conf_new()`` of the
bundled librdkafka 2.3.0 and 2.16.0 (CONFIGURATION.md gives the same for every release this project installs).
The consumer protocol (KIP-848) is GA from 2.12; ``ShareConsumer`` (KIP-932, preview: poll() returns a batch,
Message.delivery_count(), acknowledge(msg, AcknowledgeType), set_acknowledgement_commit_callback) from 2.15.
"""

from __future__ import annotations

from .family import ClientFamily, Installation, Runner, Timeouts

CONFLUENT_KAFKA = ClientFamily(
    name="confluent-kafka",
    member=Runner("testbed.members.confluent", "ConfluentMember"),
    share=Runner("testbed.members.confluent_share", "ConfluentShareMember"),
    host="testbed.members.host",
    host_runs_share=True,
    installation=Installation("pip", "confluent-kafka"),
    timeouts=Timeouts(session_timeout_ms=45_000, max_poll_interval_ms=300_000,
                      heartbeat_key="heartbeat.interval.ms", heartbeat_interval_ms=3_000),
    classic_assignors=("range", "roundrobin", "cooperative-sticky"),  # librdkafka has no eager sticky
    group_protocols={"classic": (), "consumer": (2, 12), "share": (2, 15)},
    stall=True,
    handler=True,
    instrumented_since=(2, 0),
)
