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


