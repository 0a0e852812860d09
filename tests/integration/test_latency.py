"""Latency through Toxiproxy on real brokers: clients pass the proxy, replication does not, nothing outlives it."""

from __future__ import annotations

import time
import uuid

import psutil
import pytest
from confluent_kafka import Producer

from testbed.brokers.cluster import KafkaCluster
from testbed.faults.proxies import toxiproxy_binary
from testbed.history.events import Action

pytestmark = pytest.mark.integration


def _acked_round_trip_ms(bootstrap: str, topic: str) -> float:
    """The time from produce to acknowledgement of one record (acks=all), after a warm-up record."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    try:
        producer.produce(topic, b"warm-up")
        assert producer.flush(30) == 0
        started = time.monotonic()
        producer.produce(topic, b"timed")
        assert producer.flush(30) == 0
        return (time.monotonic() - started) * 1000
    finally:
        producer.flush(5)


def _toxiproxy_servers() -> list[psutil.Process]:
    """This test process's own proxy servers: other pytest workers run clusters with proxies side by side."""
    binary = str(toxiproxy_binary())
    mine = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.exe() == binary:
                mine.append(proc)
        except psutil.Error:  # ended meanwhile
            continue
    return mine


def test_latency_delays_the_clients_of_one_broker_until_cleared() -> None:
    actions = []
    with KafkaCluster(brokers=3, client_proxies=True, recorder=actions.append) as cluster:
        node = cluster.nodes[0]
        assert node.proxy_port and node.address.endswith(f":{node.proxy_port}"), "clients are given the proxy"
        topic = cluster.create_topic(f"lat-{uuid.uuid4().hex[:6]}", 1, 3)
        leader = cluster.admin().leaders(topic)[0]
        before = _acked_round_trip_ms(cluster.bootstrap_servers, topic)
        cluster.add_latency(leader, 400)
        delayed = _acked_round_trip_ms(cluster.bootstrap_servers, topic)
        cluster.clear_latency(leader)
        after = _acked_round_trip_ms(cluster.bootstrap_servers, topic)
        # acks=all waits for the followers: were replication delayed too, it would take 800 ms and more.
        assert before < 300 and after < 300, (before, after)
        assert 400 <= delayed < 800, f"acknowledged in {delayed:.0f} ms with 400 ms on the leader's responses"
        assert len(_toxiproxy_servers()) >= 1
    assert [a.kind for a in actions] == [Action.BROKER_LATENCY, Action.BROKER_LATENCY_END]
    assert actions[0].detail == {"latency_ms": 400, "jitter_ms": 0} and actions[0].target == f"broker-{leader}"
    assert _toxiproxy_servers() == [], "the proxy server outlived its cluster"
