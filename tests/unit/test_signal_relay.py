"""A runner's stop signal is acted on outside any signal handler (real child processes, no Kafka).

kafka-python members hung at a group's teardown: the SIGTERM handler called ``threading.Event.set``, and a second
SIGTERM landed while the first handler held the Event's lock, on the same thread (docs/metrics.md, close_hangs).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from testbed.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]

# The main thread holds the stop Event's lock (as inside Event.wait) when the SIGTERM arrives: a handler that
# sets the Event itself waits forever for a lock its own thread holds.
LOCK_HELD = """
import os, signal, time
from testbed.members.runtime import install_stop_signals
stop = install_stop_signals()
with stop._cond:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)  # a Python handler would run here, between two bytecodes
print("set" if stop.wait(5) else "not set", flush=True)
"""

# The main thread is blocked in a C-level wait and the SIGTERM goes to another thread: a Python handler would not
# run until the main thread came back; the relay sets the stop at once.
MAIN_BLOCKED = """
import os, signal, sys, threading
from testbed.members.runtime import install_stop_signals
stop = install_stop_signals()
def report():
    print("set" if stop.wait(10) else "not set", flush=True)
    os._exit(0)
threading.Thread(target=report).start()
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
open(sys.argv[1], "w").close()
lock = threading.Lock(); lock.acquire(); lock.acquire()
"""


def test_a_stop_arriving_while_the_main_thread_holds_the_events_lock_is_set() -> None:
    proc = subprocess.run([sys.executable, "-c", LOCK_HELD], cwd=ROOT, capture_output=True, text=True, timeout=15)
    assert proc.stdout.strip() == "set", proc.stdout + proc.stderr


def test_a_stop_arriving_while_the_main_thread_is_blocked_in_c_is_set_at_once(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", MAIN_BLOCKED, str(ready)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until(ready.exists, timeout_s=30, interval_s=0.02, what="the child to block its main thread")
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert out.strip() == "set", out + err
        assert time.monotonic() - sent < 5
    finally:
        proc.kill()
