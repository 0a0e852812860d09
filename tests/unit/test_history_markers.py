"""The live trackers' byte markers are their events' names, read off the event models: renaming an event in
testbed/history/events.py renames what the trackers look for, and a hand-spelled marker would fail here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.fleet import ownership, share
from testbed.fleet import streams as fleet_streams
from testbed.history.events import KNOWN_NAMES, Assigned, Lost, Processed, Revoked, event_name
from testbed.history.tail import HistoryTail, markers
from testbed.scenario import drain

TRACKER_MARKERS = {
    "fleet.ownership": ownership._MARKERS,
    "fleet.share": share._MARKERS,
    "fleet.share holding": share._HOLDING_MARKERS,
    "fleet.streams": fleet_streams._MARKERS,
    "scenario.drain": drain._PROCESSED,
}


@pytest.mark.parametrize("tracker", sorted(TRACKER_MARKERS))
def test_every_marker_a_tracker_reads_by_is_the_name_of_an_event(tracker: str) -> None:
    names = [json.loads(marker) for marker in TRACKER_MARKERS[tracker]]
    assert [n for n in names if n not in KNOWN_NAMES] == []


def test_markers_are_the_models_names_as_a_line_spells_them(tmp_path: Path) -> None:
    assert ownership._MARKERS == markers(Assigned, Revoked, Lost)
    assert drain._PROCESSED == (f'"{event_name(Processed)}"'.encode(),)
    history = tmp_path / "m.jsonl"
    lines = [{"name": "assigned", "ts_ms": 1}, {"name": "processed", "ts_ms": 2}, {"name": "lost", "ts_ms": 3}]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [e["name"] for e in HistoryTail(history, ownership._MARKERS).new_events()] == ["assigned", "lost"]
