"""When a fault step's ``when`` is met: a share member holding records it has not acknowledged yet, or with
acknowledgements sent and not yet answered, read from its history as it grows (testbed.fleet.share)."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.fleet.share import ShareHolding


def _append(path: Path, **event) -> None:
    with path.open("a") as f:
        f.write(json.dumps(event) + "\n")


def test_holding_from_acquisition_to_sending_and_in_flight_from_sending_to_the_answer(tmp_path: Path) -> None:
    log = tmp_path / "m0.jsonl"
    _append(log, name="share_acquired", ts_ms=10, topic="t", partition=0, acquired=[[0, 1]])  # before: not counted
    h = ShareHolding(log, since_ms=100)
    assert not h.now("holding_records") and not h.now("acks_in_flight")
    _append(log, name="share_acquired", ts_ms=200, topic="t", partition=0, acquired=[[1, 1], [2, 1]])
    assert h.now("holding_records") and not h.now("acks_in_flight")
    _append(log, name="share_ack_sent", ts_ms=230, topic="t", partition=0, acknowledged=[1, 2], type="accept",
            mode="explicit")
    assert not h.now("holding_records") and h.now("acks_in_flight")
    _append(log, name="share_acknowledged", ts_ms=232, topic="t", partition=0, acknowledged=[1, 2], type="accept",
            error=None)
    assert not h.now("holding_records") and not h.now("acks_in_flight")


def test_a_torn_last_line_waits_for_its_end(tmp_path: Path) -> None:
    log = tmp_path / "m0.jsonl"
    log.write_text("")
    h = ShareHolding(log, since_ms=0)
    with log.open("a") as f:
        f.write('{"name": "share_acquired", "ts_ms": 5, "topic": "t", "partition": 0, "acq')
    assert not h.now("holding_records")
    with log.open("a") as f:
        f.write('uired": [[7, 1]]}\n')
    assert h.now("holding_records") and h.held == {("t", 0, 7)}
