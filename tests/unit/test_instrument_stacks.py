"""The instrumentation's stack dump: installed over the default action and over an ignore inherited from the
launcher, never over a handler of the process's own."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.waits import wait_until

PROGRAM = """
import signal, sys, time
{before}
from testbed.instrument.stacks import install_stack_dump
print(install_stack_dump(), flush=True)
time.sleep(30)
"""


def ignoring_sigquit() -> None:
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)  # as a shell without job control starts a background command


@pytest.mark.parametrize("inherited", [signal.SIG_DFL, signal.SIG_IGN], ids=["default", "ignored_by_the_launcher"])
def test_a_program_asked_for_its_stacks_writes_them_and_lives_on(inherited, tmp_path: Path) -> None:
    preexec = ignoring_sigquit if inherited is signal.SIG_IGN else None
    stderr = tmp_path / "stderr"
    with stderr.open("w") as err:
        child = subprocess.Popen([sys.executable, "-c", PROGRAM.format(before="")], stdout=subprocess.PIPE,
                                 stderr=err, text=True, preexec_fn=preexec)
    try:
        assert child.stdout.readline().strip() == "True"
        child.send_signal(signal.SIGQUIT)
        # faulthandler's heading of each thread's stack
        wait_until(lambda: "(most recent call first)" in stderr.read_text(), timeout_s=10, interval_s=0.1,
                   what="the program's stacks on its stderr")
        assert child.poll() is None  # the fleet's SIGKILL ends it, not the dump
    finally:
        child.kill()
        child.wait()


def test_a_handler_of_the_programs_own_is_kept() -> None:
    before = "signal.signal(signal.SIGQUIT, lambda *a: print('own handler', flush=True))"
    child = subprocess.run([sys.executable, "-c", PROGRAM.format(before=before).replace("time.sleep(30)", "")],
                           capture_output=True, text=True, timeout=30)
    assert child.stdout.splitlines()[0] == "False", child.stdout + child.stderr
