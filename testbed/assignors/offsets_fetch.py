"""Fetch a group's committed offsets and the partitions' beginning/end offsets for the lag-aware leader.

Kept apart from ``lag_aware`` so the core stays pure: this is the only assignor module that talks to a
broker. It opens one short-lived ``KafkaAdminClient`` with the bootstrap servers (and security
settings) of the consumer the assignor was configured with, asks three questions and closes it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from testbed.assignors.lag_aware import PartitionOffsets
from testbed.assignors.model import AssignorInputError, TopicPartition

log = logging.getLogger(__name__)

DEFAULT_FETCH_TIMEOUT_MS = 5_000


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
        committed = admin.list_group_offsets({group_id: wanted}).get(group_id, {})
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
