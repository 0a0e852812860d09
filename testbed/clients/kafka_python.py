"""kafka-python (``testbed.members.kafka_python.member``): also runs testbed's seed assignors and custom Python assignors
('pkg.mod:Class').

Defaults: ``KafkaConsumer.DEFAULT_CONFIG`` in ``kafka/consumer/group.py`` (verified 2026-11-22 and 2026-11-25): 3.x
``session_timeout_ms`` 45000 (KIP-735, dpkp/kafka-python#3030; 30000 only against brokers < 3.0, which this
project never runs), 2.x 10000 (2.0.2 to 2.3.3); ``max_poll_interval_ms`` 300000 and ``heartbeat_interval_ms``
3000 in both. The runner reads the values back from the consumer's own ``config`` dict instead, when it can.
"""

from __future__ import annotations

from typing import Dict

from .family import ClientFamily, Installation, Runner, Timeouts
from .owned import (ASSIGNORS, CALLBACKS, CLUSTER, COMMIT_MODE, GROUP, MAX_POLL_INTERVAL, MAX_POLL_RECORDS,
                    MEMBER_NAME, OFFSET_RESET, SESSION_TIMEOUT, STATIC, Owner)

# KafkaConsumer keywords. The deserializers are functions: the runner hands a handler the records' bytes as they are.
OWNED: Dict[str, Owner] = {
    "bootstrap_servers": CLUSTER, "group_id": GROUP, "client_id": MEMBER_NAME,
    "enable_auto_commit": COMMIT_MODE, "auto_offset_reset": OFFSET_RESET, "max_poll_records": MAX_POLL_RECORDS,
    "partition_assignment_strategy": ASSIGNORS, "session_timeout_ms": SESSION_TIMEOUT,
    "max_poll_interval_ms": MAX_POLL_INTERVAL, "group_instance_id": STATIC,
    "default_offset_commit_callback": CALLBACKS,
    "key_deserializer": Owner("the runner", "a handler is given the records' key and value as bytes"),
    "value_deserializer": Owner("the runner", "a handler is given the records' key and value as bytes"),
}

KAFKA_PYTHON = ClientFamily(
    name="kafka-python",
    member=Runner("testbed.members.kafka_python.member", "KafkaPythonMember"),
    host="testbed.members.host",
    installation=Installation("pip", "kafka-python"),
    timeouts=Timeouts(session_timeout_ms=45_000, max_poll_interval_ms=300_000,
                      heartbeat_key="heartbeat_interval_ms", heartbeat_interval_ms=3_000,
                      older_session_timeouts=(((3,), 10_000),)),
    classic_assignors=("range", "roundrobin", "sticky", "cooperative-sticky"),
    stall=True,
    handler=True,
    instrumented_since=(2, 0, 2),
    owned_settings=OWNED,
)
