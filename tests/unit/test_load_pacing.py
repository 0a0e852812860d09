"""The schedule that paces each Locust user (pure logic, driven by a hand-set clock)."""

from __future__ import annotations

import pytest

from testbed.errors import ConfigError
from testbed.load.pacing import Pacer


def test_on_time_loop_sends_the_rate() -> None:
    pacer = Pacer(rate=100.0, start=0.0)
    sent, now = 0, 0.0
    while now < 10.0:
        sent += pacer.due(now)
        now += pacer.wait_s(now)
    assert sent == pytest.approx(1000, abs=2)


def test_a_late_loop_catches_up_in_a_burst() -> None:
    pacer = Pacer(rate=1000.0, start=0.0)
    assert pacer.due(0.0) == 1
    assert pacer.due(0.5) == 500  # records 1..500 were due by t=0.5
    assert pacer.due(0.5) == 0


def test_bursts_are_bounded_and_the_skipped_records_are_not_sent_later() -> None:
    pacer = Pacer(rate=1000.0, start=0.0, max_burst=100)
    assert pacer.due(5.0) == 100
    assert pacer.due(5.0) == 0
    assert pacer.due(5.01) == 10


def test_a_bounded_schedule_sends_exactly_rate_times_duration() -> None:
    pacer = Pacer(rate=333.3, start=2.0, end=12.0)
    sent, now = 0, 2.0
    while now < 20.0:
        sent += pacer.due(now)
        now += 0.013
    assert sent == pacer.scheduled == 3333
    assert pacer.finished


def test_wait_is_at_least_the_minimum_and_at_most_the_next_due_time() -> None:
    pacer = Pacer(rate=10.0, start=0.0, min_wait_s=0.002)
    pacer.due(0.0)
    assert pacer.wait_s(0.0) == pytest.approx(0.1)
    fast = Pacer(rate=100_000.0, start=0.0, min_wait_s=0.002)
    fast.due(0.0)
    assert fast.wait_s(0.0) == 0.002


def test_non_positive_rate_is_rejected() -> None:
    with pytest.raises(ConfigError, match="rate"):
        Pacer(rate=0, start=0.0)
