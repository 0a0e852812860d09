"""The suite's own xdist scheduling (conftest.py) survives a worker that dies mid-test, or a test that is stuck.

A real pytest session with two xdist workers runs the project's conftest as a plugin over a file where one test
ends its worker's process, or never ends. xdist 3.8's scope scheduling, which the conftest builds on, then hung until
killed.
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


def run_session(folder: Path, tests: str, **env: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_session.py").write_text(tests)
    # `-p conftest`: the project's conftest.py (found on PYTHONPATH) as a plugin, its scheduler included
    command = [sys.executable, "-m", "pytest", "-n", "2", "-p", "conftest", "-p", "no:cacheprovider",
               "-m", "", "test_session.py"]
    try:
        return subprocess.run(command, cwd=folder, env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"the session hung:\n{exc.stdout}") from None


def test_a_worker_that_dies_fails_its_test_once_and_the_others_still_run(tmp_path: Path) -> None:
    done = run_session(tmp_path, TESTS)
    assert "replacing crashed worker" in done.stdout, done.stdout
    assert "1 failed, 12 passed" in done.stdout, done.stdout
    assert "the worker's process ended: exit code 1" in done.stdout, "how the worker ended is said"


def test_a_stuck_test_fails_saying_where_it_was_stuck_and_the_others_still_run(tmp_path: Path) -> None:
    stuck = TESTS.replace("os._exit(1)", "time.sleep(600)  # stuck here")
    done = run_session(tmp_path, stuck, TESTBED_STUCK_TEST_S="3")
    assert "1 failed, 12 passed" in done.stdout, done.stdout
    failure = done.stdout[done.stdout.index("= FAILURES ="):]
    assert "test_ends_its_worker was still running after 3 s" in failure, failure
    # the test's own thread last, its innermost call last: what a log cut to its tail keeps
    assert failure.index("(the test), innermost call last") < failure.index("time.sleep(600)  # stuck here"), failure
