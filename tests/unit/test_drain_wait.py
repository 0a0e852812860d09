"""The wait both drains (consumer group and share group) end with: a timeout is a finding, not an error."""

from __future__ import annotations

from testbed.scenario.drain import _wait_drained


def test_drained_once_nothing_is_missing() -> None:
    left = [{"t-0": 2}, {"t-0": 1}, {}]
    assert _wait_drained(lambda: left.pop(0) if len(left) > 1 else left[0], 5.0, "records", "behind") == {
        "complete": True, "behind": {}}


def test_a_drain_that_times_out_says_what_is_left() -> None:
    assert _wait_drained(lambda: {"t-0": 3}, 0.3, "records", "behind") == {"complete": False, "behind": {"t-0": 3}}
