"""The brokers' producer-id warm-up ends when the cluster closes, whatever the brokers do (a real librdkafka
producer asking an address where nothing listens; the warm-up against real brokers: tests/integration/test_cluster.py)."""

from __future__ import annotations

from testbed.brokers.producer_ids import ProducerIdWarmUp, producer_id_assigned
from testbed.children import free_ports


def test_an_address_nobody_answers_assigns_no_producer_id() -> None:
    (port,) = free_ports(1)
    assert not producer_id_assigned(f"127.0.0.1:{port}", timeout_s=0.5)


def test_a_stopped_warm_up_does_not_hold_the_close_for_its_timeout() -> None:
    (port,) = free_ports(1)
    warm_up = ProducerIdWarmUp([f"127.0.0.1:{port}"], timeout_s=600.0).start()
    assert warm_up.stop(), "a producer still asking after stop() would hold the cluster's close for 600 s"
