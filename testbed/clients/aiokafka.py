"""aiokafka: an asyncio client (``testbed.members.aiokafka.member``); a member host runs its members on one event
loop.

Its own group coordinator runs the eager protocol only (aio-libs/aiokafka#1126). ``group_instance_id`` (static
membership, KIP-345) is absent in 0.9.0 and present in 0.10.0. Defaults: ``AIOKafkaConsumer.__init__``'s in 0.8.1
and 0.14.0 (read 2026-11-26): ``session_timeout_ms`` 10000 (it never took KIP-735's 45000),
``max_poll_interval_ms`` 300000, ``heartbeat_interval_ms`` 3000.
"""

from __future__ import annotations

from typing import Dict

from . import kafka_python
from .family import ClientFamily, Installation, Runner, Timeouts
from .owned import Owner

# AIOKafkaConsumer keywords: kafka-python's names (aiokafka began as its asyncio port); no commit callback.
OWNED: Dict[str, Owner] = {k: v for k, v in kafka_python.OWNED.items() if k != "default_offset_commit_callback"}

AIOKAFKA = ClientFamily(
    name="aiokafka",
    member=Runner("testbed.members.aiokafka.member", "AiokafkaMember"),
    host="testbed.members.host",
    installation=Installation("pip", "aiokafka"),
    timeouts=Timeouts(session_timeout_ms=10_000, max_poll_interval_ms=300_000,
                      heartbeat_key="heartbeat_interval_ms", heartbeat_interval_ms=3_000),
    classic_assignors=("range", "roundrobin", "sticky"),
    static_since=(0, 10),
    stall=True,
    handler=True,
    instrumented_since=(0, 8, 1),
    owned_settings=OWNED,
)
