"""The progress line's record counts: acks counted by complete lines as the producers' files grow."""

from __future__ import annotations

from pathlib import Path

from testbed.scenario.progress import AckCounter


def test_acks_are_counted_by_complete_lines_across_files_as_they_grow(tmp_path: Path) -> None:
    counter = AckCounter(tmp_path)
    counter.refresh()
    assert counter.records == 0, "no producer has written yet"
    first = tmp_path / "producer-0.jsonl"
    first.write_bytes(b'{"name":"ack"}\n{"name":"ack"}\n{"name":"a')
    counter.refresh()
    assert counter.records == 2, "a line being written is not an ack yet"
    with first.open("ab") as f:
        f.write(b'ck"}\n')
    (tmp_path / "producer-1.jsonl").write_bytes(b'{"name":"ack"}\n')
    counter.refresh()
    assert counter.records == 4
    counter.refresh()
    assert counter.records == 4, "nothing new, nothing counted twice"
