"""The cluster's watchdog (testbed.brokers.watchdog): it reaps a dead owner's things, never a live owner's, and
exits when released. Real processes and pipes, no brokers: the containers' side is in
tests/integration/test_run_interrupted.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from testbed.brokers.watchdog import RELEASE, Watchdog, watch
from testbed.children import OWNER_ENV, child_env, owner_identity
from testbed.waits import wait_until

ROOT = Path(__file__).resolve().parents[2]


def ended(pid: int) -> bool:
    """Gone, or a zombie waiting for whichever parent it was handed to."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def owner():
    """A stand-in owner process: its identity is what the watchdog watches."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def watch_in_thread(read_end: int, identity: tuple[int, str]) -> tuple[threading.Thread, list[object], list[int]]:
    reaped_for: list[int] = []
    returned: list[object] = []

    def reap(pid: int) -> list[str]:
        reaped_for.append(pid)
        return [f"things of {pid}"]

    thread = threading.Thread(target=lambda: returned.append(watch(read_end, identity, reap, poll_s=0.02)), daemon=True)
    thread.start()
    return thread, returned, reaped_for


def test_a_released_watchdog_reaps_nothing(owner: subprocess.Popen) -> None:
    read_end, write_end = os.pipe()
    thread, returned, reaped_for = watch_in_thread(read_end, owner_identity(psutil.Process(owner.pid)))
    os.write(write_end, RELEASE)
    os.close(write_end)
    thread.join(5)
    assert not thread.is_alive() and returned == [None] and reaped_for == []
    os.close(read_end)


def test_an_owner_that_dies_is_reaped_once_gone_even_as_an_uncollected_zombie(owner: subprocess.Popen) -> None:
    read_end, write_end = os.pipe()
    thread, returned, reaped_for = watch_in_thread(read_end, owner_identity(psutil.Process(owner.pid)))
    os.close(write_end)  # as the kernel does when the owner dies
    owner.kill()  # not collected: it stays a zombie, which is dead all the same
    thread.join(5)
    assert psutil.Process(owner.pid).status() == psutil.STATUS_ZOMBIE
    assert returned == [[f"things of {owner.pid}"]] and reaped_for == [owner.pid]
    os.close(read_end)


def test_a_closed_pipe_of_a_live_owner_waits_for_its_end(owner: subprocess.Popen) -> None:
    read_end, write_end = os.pipe()
    thread, returned, reaped_for = watch_in_thread(read_end, owner_identity(psutil.Process(owner.pid)))
    os.close(write_end)  # closed without a release, while the owner still runs
    time.sleep(0.5)
    assert thread.is_alive() and reaped_for == [], "a live owner's things are never reaped"
    owner.kill()
    owner.wait()
    thread.join(5)
    assert reaped_for == [owner.pid]
    os.close(read_end)


def test_the_watchdog_process_is_unmarked_in_its_own_session_and_exits_when_released(tmp_path: Path) -> None:
    log = tmp_path / "watchdog.log"
    watchdog = Watchdog.start(log)
    try:
        watchdog.ready()
        proc = psutil.Process(watchdog.process.pid)
        assert OWNER_ENV not in proc.environ(), "no reaping may take it for a leftover"
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0), "a Ctrl-C at the terminal is not for it"
        started = time.monotonic()
        watchdog.release()
        assert watchdog.process.returncode == 0 and time.monotonic() - started < 5
    finally:
        if watchdog.process.poll() is None:
            watchdog.process.kill()
    assert log.exists() and "reaped" not in log.read_text()


# An owner that starts a watchdog and a process marked as its own but started without the parent-death
# signal (a user's program's worker does that): only the watchdog can end it once the owner is SIGKILLed.
OWNER = """
import subprocess, sys, time
from pathlib import Path
from testbed.brokers.watchdog import Watchdog
from testbed.children import child_env
watchdog = Watchdog.start(Path(sys.argv[1]))
if sys.argv[2] == "ready":
    watchdog.ready()
orphan = subprocess.Popen(["sleep", "600"], env=child_env(), start_new_session=True, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(watchdog.process.pid, orphan.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("when", ["ready", "starting"])
def test_a_kill_9_of_the_owner_has_its_watchdog_end_what_the_owner_marked_then_exit(tmp_path: Path, when: str) -> None:
    """Also when the owner dies before its watchdog said ready (the cluster awaits it only once its brokers are
    up): the watchdog holds the pipe's read end from its start."""
    log = tmp_path / "watchdog.log"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(log), when], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True, env=child_env(PYTHONPATH=str(ROOT)))
    watchdog = orphan = None
    try:
        watchdog, orphan = map(int, owner.stdout.readline().split())
        if when == "ready":
            time.sleep(0.3)
            assert not ended(orphan) and not ended(watchdog), "nothing is reaped while the owner lives"
        owner.kill()  # "starting": at once, while the watchdog's Python is still importing
        wait_until(lambda: ended(orphan), timeout_s=15, what="the watchdog to end the dead owner's process",
                   diagnostics=lambda: log.read_text())
        wait_until(lambda: ended(watchdog), timeout_s=15, what="the watchdog to exit after reaping",
                   diagnostics=lambda: log.read_text())
        assert f"owner {owner.pid}:" in log.read_text() and f"sleep (pid {orphan})" in log.read_text()
    finally:
        owner.kill()
        owner.wait()
        for pid in (orphan, watchdog):
            if pid is not None and not ended(pid):
                os.kill(pid, 9)
