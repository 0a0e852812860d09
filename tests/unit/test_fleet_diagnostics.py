"""A wait's diagnostics name the last client error of a member that never joins (its history says why)."""

from pathlib import Path

from testbed.fleet.process import last_client_error
from testbed.history.events import ClientError, Stopped


def test_the_last_client_error_is_named_with_its_repeats(tmp_path: Path) -> None:
    history = tmp_path / "m0.jsonl"
    assert last_client_error(history) is None  # no history yet
    joins = [ClientError(ts_ms=i, source="m0", code="INCONSISTENT_GROUP_PROTOCOL", message="JoinGroup failed")
             for i in range(3)]
    other = ClientError(ts_ms=0, source="m0", code="TRANSPORT", message="broker down")
    lines = [other, *joins, Stopped(ts_ms=9, source="m0", reason="clean")]
    history.write_text("".join(e.model_dump_json() + "\n" for e in lines))
    assert last_client_error(history) == "INCONSISTENT_GROUP_PROTOCOL: JoinGroup failed (x3)"
    history.write_text(lines[-1].model_dump_json() + "\n")
    assert last_client_error(history) is None
