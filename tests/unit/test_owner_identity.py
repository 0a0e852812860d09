"""A process's owner identity (pid and start time) names it whatever the wall clock does: the start time is counted
from the boot, so a step of the wall clock (NTP, a virtual machine restored from a snapshot) leaves a live owner
alive in the reaper's eyes."""

from __future__ import annotations

import subprocess
import sys

import psutil
import pytest

from testbed.children import is_alive, owner_identity


def test_the_start_time_is_counted_from_the_boot_not_on_the_wall_clock(monkeypatch) -> None:
    pid, started = owner_identity()
    since_boot = psutil.Process().create_time() - psutil.boot_time()
    assert started.endswith("s") and float(started[:-1]) == pytest.approx(since_boot, abs=0.05)
    # The wall clock steps 40 s: psutil's wall-clock start times move with it, the identity does not.
    monkeypatch.setattr(psutil, "boot_time", lambda: 1_000_000_040.0)
    monkeypatch.setattr(psutil.Process, "create_time", lambda self: 1_000_000_040.0 + since_boot)
    assert owner_identity() == (pid, started) and is_alive(pid, started)


def test_another_process_or_a_gone_one_is_not_the_owner() -> None:
    pid, started = owner_identity()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert is_alive(child.pid, owner_identity(psutil.Process(child.pid))[1])
        assert not is_alive(child.pid, started)  # the pid with another start: a reused pid
    finally:
        child.kill()
        child.wait()
    assert not is_alive(child.pid, started)  # gone
