"""The group probe survives its child: an abort (as librdkafka's admin client does after a coordinator kill)
or a hang becomes a ProbeError the waits retry, and the next describe runs in a fresh child."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from testbed.admin.group_probe import GroupProbe, ProbeError, view_from_json, view_to_json
from testbed.admin.kafka_admin import GroupView, KafkaAdmin, MemberView
from testbed.errors import WaitAborted


def test_views_cross_the_pipe_unchanged():
    view = GroupView("g", "STABLE", "range", "CLASSIC",
                     (MemberView("id-1", "m0", None, frozenset({("t", 0), ("t", 3)})),
                      MemberView("id-2", "m1", "i1", frozenset())), coordinator=2)
    assert view_from_json(view_to_json(view)) == view


def _probe(code: str) -> GroupProbe:
    probe = GroupProbe("127.0.0.1:1")
    probe.command = [sys.executable, "-c", code]
    return probe


def test_an_aborting_child_is_replaced_and_the_error_says_how_it_died():
    probe = _probe("import os, sys; sys.stdin.readline(); sys.stderr.write('Assertion failed'); sys.stderr.flush(); os.abort()")
    with pytest.raises(ProbeError, match=r"died \(killed by SIGABRT\): Assertion failed"):
        probe.describe("g", timeout_s=1)
    first = probe.restarts
    with pytest.raises(ProbeError):
        probe.describe("g", timeout_s=1)
    assert (first, probe.restarts) == (1, 2)
    probe.close()


def test_a_hung_child_is_killed_after_the_timeout():
    probe = _probe("import time; time.sleep(600)")
    with pytest.raises(ProbeError, match="no answer"):
        probe._read_line(probe._child(), 0.5)
    assert probe._proc is None
    probe.close()


def test_a_describe_error_is_passed_on_without_replacing_the_child():
    probe = _probe("import sys, json\nfor line in sys.stdin: print(json.dumps({'error': 'KafkaException: NOT_COORDINATOR'}), flush=True)")
    with pytest.raises(ProbeError, match="NOT_COORDINATOR"):
        probe.describe("g", timeout_s=1)
    assert probe.restarts == 0 and probe._proc is not None and probe._proc.poll() is None
    probe.close()
    assert probe._proc is None


def test_a_coordinator_wait_ends_at_its_next_poll_once_asked_to_stop():
    """The run awaits the group's coordinator on a thread beside the topics' creation; a failed creation sets the
    wait's stop, which must end it at once, not after its two minutes."""
    stop = threading.Event()
    asked: list[str] = []

    def not_yet(group_id: str) -> GroupView:
        asked.append(group_id)
        if len(asked) == 3:
            stop.set()
        raise ProbeError("coordinator not available")

    started = time.monotonic()
    with pytest.raises(WaitAborted, match="the group coordinator of g answering.*asked to stop"):
        KafkaAdmin("127.0.0.1:1").wait_group_coordinator("g", describe=not_yet, stop=stop)
    assert asked == ["g", "g", "g"] and time.monotonic() - started < 5
