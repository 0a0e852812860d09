"""KafkaAdmin.close: a client whose destroy never ends (librdkafka 2.16 at times waits for ever on a broker thread)
holds its caller no longer than the timeout. Pure logic: the client here is a stand-in whose destruction blocks."""

from __future__ import annotations

import threading
import time

from testbed.admin.kafka_admin import KafkaAdmin


class _Client:
    def __init__(self, release: threading.Event, destroyed: threading.Event) -> None:
        self.release, self.destroyed = release, destroyed

    def __del__(self) -> None:
        self.release.wait()
        self.destroyed.set()


def _admin_with(client: _Client) -> KafkaAdmin:
    admin = KafkaAdmin("127.0.0.1:9")
    admin._client = client  # type: ignore[assignment]
    return admin


def test_a_client_that_ends_is_destroyed_and_forgotten() -> None:
    release, destroyed = threading.Event(), threading.Event()
    release.set()
    admin = _admin_with(_Client(release, destroyed))
    assert admin.close(timeout_s=5) is True
    assert destroyed.is_set() and admin._client is None


def test_a_client_whose_destroy_never_ends_is_left_after_the_timeout() -> None:
    release, destroyed = threading.Event(), threading.Event()
    admin = _admin_with(_Client(release, destroyed))
    threading.Timer(5, release.set).start()  # a close that waited for the destroy would take these 5 s
    started = time.monotonic()
    assert admin.close(timeout_s=0.3) is False
    assert time.monotonic() - started < 2 and not destroyed.is_set() and admin._client is None
    assert destroyed.wait(10), "the destroy thread ends once the client lets it"


def test_closing_an_admin_that_made_no_client_is_a_no_op() -> None:
    assert KafkaAdmin("127.0.0.1:9").close() is True
