"""The suite's own xdist scheduling (conftest.py) survives a worker that dies mid-test.

A real pytest session with two xdist workers runs the project's conftest as a plugin over a file where one test
ends its worker's process. xdist 3.8's scope scheduling, which the conftest builds on, then hung until killed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import os
import time

import pytest


@pytest.mark.parametrize("i", range(6))
def test_before(i):
    time.sleep(0.3)


def test_ends_its_worker():
    time.sleep(0.3)
    os._exit(1)


@pytest.mark.parametrize("i", range(6))
def test_after(i):
    time.sleep(0.3)
'''


def test_a_worker_that_dies_fails_its_test_once_and_the_others_still_run(tmp_path: Path) -> None:
    (tmp_path / "test_dying_worker.py").write_text(TESTS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # `-p conftest`: the project's conftest.py (found on PYTHONPATH) as a plugin, its scheduler included
    command = [sys.executable, "-m", "pytest", "-n", "2", "-p", "conftest", "-p", "no:cacheprovider",
               "-m", "", "test_dying_worker.py"]
    try:
        done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the session hung after its worker died:\n{exc.stdout}") from None
    assert "replacing crashed worker" in done.stdout, done.stdout
    assert "1 failed, 12 passed" in done.stdout, done.stdout
    assert "the worker's process ended: exit code 1" in done.stdout, "how the worker ended is said"
