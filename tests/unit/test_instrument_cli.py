"""`testbed instrument -- CMD...`: a program run under the instrumentation outside a scenario."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest


def cli(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "testbed.cli", "instrument", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, **kwargs)


def test_testbed_instrument_runs_the_command_under_the_instrumentation_and_returns_its_status(tmp_path: Path) -> None:
    code = ("import json, os, sys\n"
            "config = json.load(open(os.environ['TESTBED_INSTRUMENT']))\n"
            "print(json.dumps([config, 'testbed.instrument.hooks' in sys.modules]))\n"
            "sys.exit(3)")
    proc = cli("--history", "h.jsonl", "--member-id", "svc", "--", sys.executable, "-c", code, cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    config, loaded = json.loads(out.strip().splitlines()[-1])
    assert config == {"member_id": "svc", "history_path": str(tmp_path / "h.jsonl"),
                      "command": [sys.executable, "-c", code]}
    assert loaded is True
    assert "no events" in err  # the program built no consumer


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_testbed_instrument_passes_a_stop_signal_on_to_the_program(signum: int, tmp_path: Path) -> None:
    code = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))\n"
            "signal.signal(signal.SIGINT, lambda s, f: sys.exit(0))\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n"
            "sys.exit(9)")
    proc = cli("--", sys.executable, "-c", code, cwd=tmp_path)
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signum)  # testbed's own process only: it passes the signal on
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
