"""A broker's log tail keeps the first error of its log: a broker that failed its start logs the cause, then a
shutdown's worth of lines and stack frames."""

from __future__ import annotations

from testbed.brokers.cluster import Broker, first_error

CAUSE = ("org.apache.kafka.common.KafkaException: Socket server failed to bind to 127.0.0.1:41233: "
         "Address already in use.")
FAILED_START = [
    "[2026-12-03 03:41:33,001] INFO [BrokerServer id=1] Waiting for the broker to be unfenced "
    "(kafka.server.BrokerServer)",
    "[2026-12-03 03:41:33,900] ERROR [BrokerServer id=1] Fatal error during broker startup. Prepare to shutdown "
    "(kafka.server.BrokerServer)",
    CAUSE,
    *[f"\tat kafka.network.Frame{i}(SocketServer.scala:{i})" for i in range(30)],
    "[2026-12-03 03:41:34,084] INFO [ControllerServer id=1] shutting down (kafka.server.ControllerServer)",
]


class _LoggedBroker(Broker):
    def container_logs(self) -> str:
        return "\n".join(FAILED_START) + "\n"


def test_the_first_error_and_its_exception_message_are_found() -> None:
    assert first_error(FAILED_START) == FAILED_START[1:3]
    assert first_error(FAILED_START[:1]) == []


def test_a_tail_past_the_cause_still_shows_the_cause_first() -> None:
    tail = _LoggedBroker(node_id=1, port=1, controller_port=2, version="4.4.0", volume="v").log_tail(lines=5)
    lines = tail.split("\n    ")
    assert lines[:3] == [*FAILED_START[1:3], "..."] and lines[3:] == FAILED_START[-5:]


def test_a_tail_that_holds_the_cause_is_not_prefixed() -> None:
    tail = _LoggedBroker(node_id=1, port=1, controller_port=2, version="4.4.0", volume="v").log_tail(lines=40)
    assert tail.split("\n    ") == FAILED_START[-40:]
