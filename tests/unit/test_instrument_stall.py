"""The stall of an instrumented program's poll loop (testbed.instrument.stall), on the fleet's signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path


from testbed.instrument.stall import Stall, install_stall_signals
from testbed.waits import wait_until


def test_a_held_call_waits_for_the_end_of_the_stall() -> None:
    stall = Stall()
    stall.start()
    released = threading.Event()
    worker = threading.Thread(target=lambda: (stall.hold(), released.set()))
    worker.start()
    assert not released.wait(0.3)  # a stall is an absence of progress: give it the time to show
    stall.end()
    wait_until(released.is_set, timeout_s=5, what="the held call to return")
    worker.join()


def test_signals_the_program_handles_itself_are_left_to_it() -> None:
    previous = signal.signal(signal.SIGUSR1, lambda *_: None)
    try:
        assert install_stall_signals(Stall()) is False
        assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGUSR1, previous)


STALLED_PROGRAM = """
import os, signal, sys, threading
from testbed.instrument.stall import STALL
asked = []
signal.signal(signal.SIGTERM, lambda *_: asked.append("SIGTERM"))  # the program's own stop handler
os.kill(os.getpid(), signal.SIGUSR1)
print("stalled" if STALL.on else "not stalled", flush=True)
STALL.hold()  # as an instrumented poll() does
print("released by", asked, flush=True)
"""


def start(code: str, tmp_path: Path) -> subprocess.Popen:
    from testbed.instrument.launch import instrumented_env

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"member_id": "m0", "history_path": str(tmp_path / "h.jsonl")}))
    env = {**os.environ, **instrumented_env(config, os.environ)}
    return subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def test_sigusr1_stalls_and_a_stop_request_ends_the_stall_before_the_programs_handler(tmp_path: Path) -> None:
    proc = start(STALLED_PROGRAM, tmp_path)
    try:
        assert proc.stdout.readline().strip() == "stalled"
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.stdout.readline().strip() == "released by ['SIGTERM']"
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_sigusr2_ends_the_stall(tmp_path: Path) -> None:
    proc = start(STALLED_PROGRAM.replace('"SIGTERM"', '"unused"'), tmp_path)
    try:
        assert proc.stdout.readline().strip() == "stalled"
        os.kill(proc.pid, signal.SIGUSR2)
        assert proc.stdout.readline().strip() == "released by []"
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
