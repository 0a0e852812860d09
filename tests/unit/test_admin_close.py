"""KafkaAdmin.close: the client is destroyed now, by its ``__exit__``, even while something else still holds it
(left to a garbage collection, librdkafka's destroy could come on the client's own background thread, where it
aborts the process), and a destroy that never ends (librdkafka 2.16 at times waits for ever on a broker thread)
holds its caller no longer than the timeout. Pure logic: the client here is a stand-in whose destroy is an event."""

from __future__ import annotations

import threading
import time

from testbed.admin.kafka_admin import KafkaAdmin


class _Client:
    def __init__(self, release: threading.Event, destroyed: threading.Event) -> None:
        self.release, self.destroyed = release, destroyed

    def __exit__(self, *exc: object) -> None:
        self.release.wait()
        self.destroyed.set()


def _admin_with(client: _Client) -> KafkaAdmin:
    admin = KafkaAdmin("127.0.0.1:9")
    admin._client = client  # type: ignore[assignment]
    return admin


def test_a_client_held_elsewhere_too_is_destroyed_at_close_and_forgotten() -> None:
    release, destroyed = threading.Event(), threading.Event()
    release.set()
    client = _Client(release, destroyed)  # held here, as a kept exception's frames would hold it
    admin = _admin_with(client)
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


def test_leaving_a_with_block_closes_it() -> None:
    release, destroyed = threading.Event(), threading.Event()
    release.set()
    with _admin_with(_Client(release, destroyed)) as admin:
        assert not destroyed.is_set()
    assert destroyed.is_set() and admin._client is None


def test_closing_an_admin_that_made_no_client_is_a_no_op() -> None:
    assert KafkaAdmin("127.0.0.1:9").close() is True


CLOSE_THEN_COLLECT_ON_THE_BACKGROUND_THREAD = """
import gc, sys, time
from testbed.admin.kafka_admin import KafkaAdmin

admin = KafkaAdmin("127.0.0.1:1")  # nothing answers there: the request below fails after its timeout
holder = [admin.client]
holder.append(holder)  # a cycle, as a kept exception's frames hold a client: only a garbage collection frees it
future = admin.client.describe_cluster(request_timeout=1)
future.add_done_callback(lambda f: gc.collect())  # confluent-kafka runs this on the client's background thread
del holder, future
gc.disable()
if sys.argv[1] == "close":
    admin.close()
else:
    admin._client = None  # dropped, as a close that only let go of its reference did
time.sleep(3)
print("ended cleanly")
"""


def test_a_closed_client_is_not_destroyed_again_by_a_collection_on_its_background_thread(tmp_path) -> None:
    """With a real librdkafka client (no broker needed): a client only dropped is destroyed by the collection its
    own background thread runs, and librdkafka aborts the process ("rd_kafka_destroy() called from librdkafka
    owned thread"); closed, it was destroyed at close and the collection finds nothing to destroy."""
    import subprocess
    import sys

    script = tmp_path / "collect.py"
    script.write_text(CLOSE_THEN_COLLECT_ON_THE_BACKGROUND_THREAD)
    closed = subprocess.run([sys.executable, str(script), "close"], capture_output=True, text=True, timeout=60)
    assert closed.returncode == 0 and "ended cleanly" in closed.stdout, closed.stderr[-2000:]
    dropped = subprocess.run([sys.executable, str(script), "drop"], capture_output=True, text=True, timeout=60)
    assert dropped.returncode == -6, (dropped.returncode, dropped.stderr[-2000:])  # SIGABRT: what close prevents
    assert "librdkafka owned thread" in dropped.stderr
