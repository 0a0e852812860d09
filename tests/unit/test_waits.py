"""wait_until: succeeds, times out with diagnostics, or fails fast when what it waits on died."""

from __future__ import annotations

import time

import pytest

from testbed.errors import WaitAborted, WaitTimeout
from testbed.waits import wait_until


def test_an_abort_ends_the_wait_at_once_with_its_reason_not_a_timeout() -> None:
    polls = []

    def died() -> str | None:
        return "container exited (exit code 1)" if len(polls) >= 3 else None

    started = time.monotonic()
    with pytest.raises(WaitAborted, match=r"stopped waiting for the brokers after [\d.]+s: container exited \(exit code 1\)"):
        wait_until(lambda: polls.append(1), timeout_s=60, what="the brokers", interval_s=0.01, abort=died)
    assert time.monotonic() - started < 5
    assert len(polls) == 3


def test_a_condition_met_wins_over_an_abort_and_a_failing_abort_check_is_no_reason() -> None:
    assert wait_until(lambda: "ready", timeout_s=1, what="x", abort=lambda: "dead") == "ready"

    def cannot_tell() -> str | None:
        raise ConnectionError("docker busy")

    with pytest.raises(WaitTimeout, match="timed out after 0s waiting for y"):
        wait_until(lambda: False, timeout_s=0.1, what="y", interval_s=0.02, abort=cannot_tell)


def test_an_aborted_inner_wait_ends_the_outer_one_instead_of_counting_as_not_yet() -> None:
    def inner() -> bool:
        return wait_until(lambda: False, timeout_s=30, what="inner", interval_s=0.01, abort=lambda: "gone")

    started = time.monotonic()
    with pytest.raises(WaitAborted, match="inner.*gone"):
        wait_until(inner, timeout_s=30, what="outer", interval_s=0.01)
    assert time.monotonic() - started < 5


def test_a_timeout_names_what_the_last_error_and_the_diagnostics() -> None:
    def probe() -> bool:
        raise OSError("refused")

    with pytest.raises(WaitTimeout) as info:
        wait_until(probe, timeout_s=0.05, what="z", interval_s=0.01, diagnostics=lambda: "state: dead")
    assert "waiting for z" in str(info.value) and "OSError: refused" in str(info.value)
    assert "state: dead" in str(info.value)


def test_a_first_interval_doubles_up_to_the_interval(monkeypatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr("testbed.waits.time.sleep", pauses.append)
    calls = iter(range(7))
    assert wait_until(lambda: next(calls) == 6, timeout_s=60, what="the seventh poll", interval_s=0.1,
                      first_interval_s=0.02)
    assert pauses == pytest.approx([0.02, 0.04, 0.08, 0.1, 0.1, 0.1])
    pauses.clear()
    calls = iter(range(3))
    wait_until(lambda: next(calls) == 2, timeout_s=60, what="the third poll", interval_s=0.3)
    assert pauses == [0.3, 0.3], "without a first interval, every pause is the interval"


def test_a_failed_polls_exception_keeps_nothing_its_frames_held_alive() -> None:
    """A Kafka client held by the failing probe's frame must die with the wait, not with a later garbage collection
    (which may run on the client's own thread, where librdkafka aborts the process on a destroy)."""
    import gc
    import weakref

    class Client:
        pass

    seen: list[weakref.ref] = []

    def probe() -> bool:
        client = Client()
        seen.append(weakref.ref(client))
        if len(seen) < 3:
            raise RuntimeError("not yet")
        return True

    gc.disable()
    try:
        assert wait_until(probe, timeout_s=5, what="a probe", interval_s=0.01)
        assert [ref() for ref in seen] == [None, None, None]
    finally:
        gc.enable()
