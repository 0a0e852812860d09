"""The started event of an instrumented program, from its client's settings (testbed.instrument.started)."""

from __future__ import annotations

import pytest
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

from testbed.instrument.started import (
    confluent_started,
    json_settings,
    kafka_python_assignor_name,
    kafka_python_started,
)
from testbed.members.defaults import default_timeouts


def test_confluent_defaults_are_librdkafkas() -> None:
    fields = confluent_started({"group.id": "g"}, ["t"], "2.16.1", None)
    assert fields["assignors"] == ["range", "roundrobin"] and fields["rebalance_protocol"] == "eager"
    assert fields["group_protocol"] == "classic" and fields["commit_mode"] == "auto"
    assert (fields["session_timeout_ms"], fields["max_poll_interval_ms"]) == default_timeouts("confluent-kafka", "2.16.1")
    assert fields["heartbeat_interval_ms"] == 3000
    assert fields["group_instance_id"] is None and fields["remote_assignor"] is None


def test_confluent_settings_given_as_strings_are_read_as_librdkafka_does() -> None:
    fields = confluent_started({"group.id": "g", "session.timeout.ms": "10000", "max.poll.interval.ms": 60000,
                                "heartbeat.interval.ms": "1000", "enable.auto.commit": "False",
                                "group.instance.id": "static-1"}, ["t"], "2.16.1", None)
    assert (fields["session_timeout_ms"], fields["max_poll_interval_ms"], fields["heartbeat_interval_ms"]) == (
        10000, 60000, 1000)
    assert fields["commit_mode"] == "manual" and fields["group_instance_id"] == "static-1"


def test_confluent_under_kip_848_the_broker_has_the_session() -> None:
    fields = confluent_started({"group.id": "g", "group.protocol": "consumer", "group.remote.assignor": "uniform"},
                               ["t"], "2.16.1", None)
    assert fields["group_protocol"] == "consumer" and fields["rebalance_protocol"] == "consumer"
    assert fields["assignors"] == [] and fields["remote_assignor"] == "uniform"
    assert fields["session_timeout_ms"] is None and fields["heartbeat_interval_ms"] is None
    assert fields["max_poll_interval_ms"] == 300000


@pytest.mark.parametrize("strategy, protocol", [("cooperative-sticky", "cooperative"), ("roundrobin", "eager"),
                                                ("range,roundrobin", "eager")])
def test_confluent_rebalance_protocol_follows_the_strategy(strategy: str, protocol: str) -> None:
    fields = confluent_started({"group.id": "g", "partition.assignment.strategy": strategy}, ["t"], "2.16.1", None)
    assert fields["rebalance_protocol"] == protocol


def test_kafka_python_assignor_classes_are_named_as_the_runners_name_them() -> None:
    assert [kafka_python_assignor_name(a) for a in (RangePartitionAssignor, RoundRobinPartitionAssignor,
                                                    StickyPartitionAssignor, CooperativeStickyAssignor)] == [
        "range", "roundrobin", "sticky", "cooperative-sticky"]

    class Custom:
        name = "range"  # a protocol name alone does not make it the built-in

    assert kafka_python_assignor_name(Custom) == f"{__name__}:{Custom.__qualname__}"
    assert kafka_python_assignor_name(Custom()) == f"{__name__}:{Custom.__qualname__}"


def test_kafka_python_reads_the_resolved_config_and_the_version_defaults() -> None:
    config = {"group_id": "g", "enable_auto_commit": False, "session_timeout_ms": 30000,
              "max_poll_interval_ms": 300000, "heartbeat_interval_ms": 3000,
              "partition_assignment_strategy": (CooperativeStickyAssignor,), "group_instance_id": "i"}
    fields = kafka_python_started(config, {"group_id": "g", "enable_auto_commit": False,
                                           "partition_assignment_strategy": [CooperativeStickyAssignor]},
                                  ["t"], "3.0.12", "cooperative", "io")
    assert fields["commit_mode"] == "manual" and fields["session_timeout_ms"] == 30000
    assert fields["assignors"] == ["cooperative-sticky"] and fields["rebalance_protocol"] == "cooperative"
    assert fields["settings"]["partition_assignment_strategy"] == ["cooperative-sticky"]
    assert fields["group_instance_id"] == "i"
    bare = kafka_python_started({"group_id": "g"}, {}, ["t"], "2.3.0", None, "poll")
    assert (bare["session_timeout_ms"], bare["max_poll_interval_ms"]) == default_timeouts("kafka-python", "2.3.0")
    assert bare["rebalance_protocol"] is None and bare["commit_mode"] == "auto"
    eager = kafka_python_started({"group_id": "g", "partition_assignment_strategy": (RangePartitionAssignor,)},
                                 {}, ["t"], "2.3.0", None, "poll")
    assert eager["rebalance_protocol"] == "eager"


def test_settings_keep_values_and_drop_callbacks_and_secrets() -> None:
    settings = json_settings({
        "bootstrap_servers": ["a:1", "b:2"], "sasl_plain_password": "hunter2", "ssl.key.password": None,
        "sasl.oauthbearer.config": "secret", "value_deserializer": lambda b: b, "consumer_timeout_ms": float("inf"),
        "selector": RangePartitionAssignor, "ssl_context": object(), "fetch_min_bytes": 1,
    })
    assert settings["bootstrap_servers"] == ["a:1", "b:2"] and settings["fetch_min_bytes"] == 1
    assert settings["sasl_plain_password"] == settings["sasl.oauthbearer.config"] == "***"
    assert settings["ssl.key.password"] is None
    assert "value_deserializer" not in settings
    assert settings["consumer_timeout_ms"] == "inf"
    assert settings["selector"] == "kafka.coordinator.assignors.range:RangePartitionAssignor"
    assert settings["ssl_context"].startswith("<object object")
