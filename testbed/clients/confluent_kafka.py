"""confluent-kafka: librdkafka's Python binding (``testbed.members.confluent_kafka``: ``member``, ``share``).

Defaults, verified against the installed code on 2026-11-22 and 2026-11-25: ``session.timeout.ms`` 45000 (since
librdkafka 1.9, KIP-735; every confluent-kafka this project installs is >= 2.0), ``max.poll.interval.ms`` 300000,
``heartbeat.interval.ms`` 3000, read back with ``rd_kafka_conf_get`` on a fresh ``rd_kafka_conf_new()`` of the
bundled librdkafka 2.3.0 and 2.16.0 (CONFIGURATION.md gives the same for every release this project installs).
The consumer protocol (KIP-848) is GA from 2.12; ``ShareConsumer`` (KIP-932, preview: poll() returns a batch,
Message.delivery_count(), acknowledge(msg, AcknowledgeType), set_acknowledgement_commit_callback) from 2.15.
"""

from __future__ import annotations

from typing import Dict

from .family import ClientFamily, Installation, Runner, Timeouts
from .owned import (ASSIGNORS, CALLBACKS, CLUSTER, COMMIT_MODE, GROUP, GROUP_PROTOCOL, MAX_POLL_INTERVAL,
                    MAX_POLL_RECORDS, MEMBER_NAME, OFFSET_RESET, REMOTE_ASSIGNOR, SESSION_TIMEOUT, SHARE_ACKNOWLEDGEMENT,
                    STATIC, Owner)

_CALLBACKS = {cb: CALLBACKS for cb in ("on_commit", "error_cb", "stats_cb", "throttle_cb", "oauth_cb", "logger")}
# librdkafka properties (confluent-kafka Consumer). max.poll.records: the runner's consume(num_messages=...) is
# what bounds a poll, so the property would be silently ignored.
OWNED: Dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "metadata.broker.list": CLUSTER,
    "group.id": GROUP, "client.id": MEMBER_NAME,
    "enable.auto.commit": COMMIT_MODE, "partition.assignment.strategy": ASSIGNORS,
    "group.protocol": GROUP_PROTOCOL, "group.remote.assignor": REMOTE_ASSIGNOR,
    "session.timeout.ms": SESSION_TIMEOUT, "max.poll.interval.ms": MAX_POLL_INTERVAL,
    "max.poll.records": MAX_POLL_RECORDS, "group.instance.id": STATIC, "auto.offset.reset": OFFSET_RESET,
    **_CALLBACKS,
}
# confluent-kafka ShareConsumer (KIP-932): the consumer-group keys it has not are refused by the client itself.
OWNED_SHARE: Dict[str, Owner] = {
    "bootstrap.servers": CLUSTER, "metadata.broker.list": CLUSTER,
    "group.id": GROUP, "client.id": MEMBER_NAME,
    "share.acknowledgement.mode": SHARE_ACKNOWLEDGEMENT, "max.poll.records": MAX_POLL_RECORDS,
    "max.poll.interval.ms": MAX_POLL_INTERVAL,
    **_CALLBACKS,
}

CONFLUENT_KAFKA = ClientFamily(
    name="confluent-kafka",
    member=Runner("testbed.members.confluent_kafka.member", "ConfluentMember"),
    share=Runner("testbed.members.confluent_kafka.share", "ConfluentShareMember"),
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
    owned_settings=OWNED,
    owned_share_settings=OWNED_SHARE,
)
