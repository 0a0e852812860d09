"""The member host's control channel: a start it cannot carry out is answered as that member's end in error,
so that the fleet hears of it at once instead of waiting for a member that never runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.members.host import MemberHost


def _exits(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_a_start_whose_config_cannot_be_read_ends_that_member_in_error(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    host = MemberHost()
    host.command(json.dumps({"op": "start", "member": "m7", "config": str(tmp_path / "missing.json")}))
    (tmp_path / "bad.json").write_text('{"member_id": "m8"}')  # not a valid MemberConfig
    host.command(json.dumps({"op": "start", "member": "m8", "config": str(tmp_path / "bad.json")}))
    captured = capsys.readouterr()
    assert _exits(captured.out) == [{"event": "exit", "member": "m7", "code": 1},
                                    {"event": "exit", "member": "m8", "code": 1}]
    assert "missing.json" in captured.err and "bad command" in captured.err
    assert host.threads == {}


def test_a_control_for_an_unknown_member_is_reported_not_answered(capsys: pytest.CaptureFixture[str]) -> None:
    MemberHost().command(json.dumps({"op": "stop", "member": "m9"}))
    captured = capsys.readouterr()
    assert captured.out == "" and "bad command" in captured.err


def test_a_member_still_running_after_its_stop_was_asked_leaves_every_threads_stack(tmp_path) -> None:
    """A stop request arms a dump of the stacks: a member whose loop or close hangs past it (the fleet SIGKILLs at
    its stop timeout) leaves in its log where each thread was."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import time\nfrom testbed.members import runtime\nruntime.STOP_STACKS_AFTER_S = 0.3\n"
            "runtime.install_stop_signals()\nprint('ready', flush=True)\n"
            "def hung_in_the_poll_loop():\n    time.sleep(10)\nhung_in_the_poll_loop()\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        time.sleep(1.5)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert "hung_in_the_poll_loop" in err and "Timeout" in err
