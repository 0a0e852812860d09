"""A wait's diagnostics name the last client error of a member that never joins (its history says why)."""

from pathlib import Path
from testbed.fleet.process import last_client_error
def test_last_client_error(tmp_path: Path) -> None:
    h = tmp_path / "m.jsonl"
    assert last_client_error(h) is None
    h.write_text('{"name":"started"}\n' + '{"name":"error","code":"INCONSISTENT_GROUP_PROTOCOL","message":"JoinGroup failed"}\n' * 3)
    assert last_client_error(h) == "INCONSISTENT_GROUP_PROTOCOL: JoinGroup failed (x3)"
