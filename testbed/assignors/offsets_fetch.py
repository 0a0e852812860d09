"""Fetch a group's committed offsets and the partitions' beginning/end offsets for the lag-aware leader.

Kept apart from ``lag_aware`` so the core stays pure: this is the only assignor module that talks to a
broker. It opens one short-lived ``KafkaAdminClient`` with the bootstrap servers (and security
settings) of the consumer the assignor was configured with, asks three questions and closes it.

Checked against a Kafka 4.3.1 broker (tests/integration/test_seed_assignors.py): right after a
cluster starts, FindCoordinator answers COORDINATOR_NOT_AVAILABLE until ``__consumer_offsets`` exists,
so retriable errors are retried until the timeout; anything else fails at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from testbed.assignors.lag_aware import PartitionOffsets
from testbed.assignors.model import AssignorInputError, TopicPartition
from testbed.waits import wait_until

log = logging.getLogger(__name__)

DEFAULT_FETCH_TIMEOUT_MS = 5_000
RETRY_INTERVAL_S = 0.2
T = TypeVar("T")


def admin_config_from_consumer_config(consumer_config: Mapping[str, Any]) -> dict[str, Any]:
    """The subset of a kafka-python consumer config that ``KafkaAdminClient`` also accepts."""
    from kafka.admin import KafkaAdminClient

    if not consumer_config.get("bootstrap_servers"):
        raise AssignorInputError(
            "consumer_config['bootstrap_servers']: required by the lag-aware assignor to fetch offsets "
            "(kafka-python style key, e.g. '127.0.0.1:9092')"
        )
    allowed = set(KafkaAdminClient.DEFAULT_CONFIG)
    config = {k: v for k, v in consumer_config.items() if k in allowed}
    base_id = consumer_config.get("client_id") or "testbed"
    config["client_id"] = f"{base_id}-lag-aware-leader"
    return config


def _retrying(call: Callable[[], T], timeout_ms: int) -> T:
    """``call()``, again after a retriable Kafka error (e.g. no coordinator yet) until ``timeout_ms``."""
    from kafka.errors import KafkaError

    outcome: dict[str, Any] = {}

    def attempt() -> bool:
        try:
            outcome["value"] = call()
            return True
        except KafkaError as exc:
            if not getattr(exc, "retriable", False):
                outcome["fatal"] = exc  # not worth waiting for: stop polling, raise below
                return True
            raise  # wait_until counts it as 'not yet' and names it if time runs out

    wait_until(attempt, timeout_s=timeout_ms / 1000, interval_s=RETRY_INTERVAL_S,
               what="the group coordinator to answer OffsetFetch")
    if "fatal" in outcome:
        raise outcome["fatal"]
    return outcome["value"]


def fetch_partition_offsets(
    consumer_config: Mapping[str, Any],
    group_id: str,
    partitions: Sequence[TopicPartition],
    timeout_ms: int = DEFAULT_FETCH_TIMEOUT_MS,
) -> dict[TopicPartition, PartitionOffsets]:
    """Beginning, end and committed offset (None if the group never committed) for each partition."""
    from kafka.admin import KafkaAdminClient, OffsetSpec
    from kafka.structs import TopicPartition as KafkaTopicPartition

    if not group_id:
        raise AssignorInputError("consumer_config['group_id']: required by the lag-aware assignor")
    config = admin_config_from_consumer_config(consumer_config)
    config.setdefault("request_timeout_ms", timeout_ms)
    wanted = [KafkaTopicPartition(t, p) for t, p in partitions]
    if not wanted:
        return {}
    admin = KafkaAdminClient(**config)
    try:
        committed = _retrying(lambda: admin.list_group_offsets({group_id: wanted}), timeout_ms).get(group_id, {})
        beginning = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in wanted}, timeout_ms=timeout_ms)
        end = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in wanted}, timeout_ms=timeout_ms)
    finally:
        admin.close()
    offsets: dict[TopicPartition, PartitionOffsets] = {}
    for tp in wanted:
        if tp not in beginning or tp not in end:
            log.warning("lag-aware: no beginning/end offset for %s-%d; its lag counts as 0", tp.topic, tp.partition)
            continue
        meta = committed.get(tp)
        # OffsetFetch answers -1 for a partition the group never committed.
        committed_offset = meta.offset if meta is not None and meta.offset >= 0 else None
        offsets[(tp.topic, tp.partition)] = PartitionOffsets(
            beginning=beginning[tp].offset, end=end[tp].offset, committed=committed_offset
        )
    return offsets
