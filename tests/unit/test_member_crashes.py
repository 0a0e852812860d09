"""Crashes of the user's program, in their pure parts: the restart policy and its refusals, the exception read
from a crashed program's last output lines, which exits are crashes, crash loops on hand-built histories, the
checker and the allowance, and the restarts' thread (real threads, no processes)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import pandas as pd
import pytest

from testbed.analysis.group.config import run_config
from testbed.analysis.group.crash_loops import Crash, alike, crash_loops, crashes, progress_windows
from testbed.analysis.intervals import OwnershipInterval
from testbed.checkers import allowed_anomalies
from testbed.checkers.checks import Evidence, check_member_crashes
from testbed.children import die_with_parent
from testbed.errors import ConfigError
from testbed.fleet.crash_detail import exception_of
from testbed.fleet.crashes import is_crash
from testbed.fleet.restarts import RestartOrder, Restarter
from testbed.history.events import Action
from testbed.members.spec import MemberSpec
from testbed.report.crash_headline import loop_sentence
from testbed.scenario.loader import expand
from tests.unit.test_checkers import metrics

PROGRAM = {"client": "confluent-kafka", "command": ["python", "app.py"]}


# ---- the restart policy ---------------------------------------------------------------------------------------

def test_each_member_kind_gets_its_default_policy() -> None:
    program = MemberSpec(**PROGRAM).restart_policy
    assert (program.policy, program.backoff_s, program.backoff_max_s, program.limit) == ("on-failure", 1.0, 10.0, 5)
    assert MemberSpec(client="confluent-kafka").restart_policy.policy == "never"
    assert not MemberSpec(client="java").restart_policy.restarts


def test_the_back_off_doubles_up_to_its_cap() -> None:
    policy = MemberSpec(**PROGRAM, restart={"policy": "on-failure", "backoff_s": 0.5, "backoff_max_s": 3}).restart_policy
    assert [policy.backoff_before(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_a_policy_may_be_written_as_its_name() -> None:
    assert MemberSpec(**PROGRAM, restart="never").restart_policy.policy == "never"
    assert not MemberSpec(**PROGRAM, restart={"policy": "on-failure", "limit": 0}).restart_policy.restarts


SCENARIO = """\
name: t
topics: [{{name: events, partitions: 2}}]
members:
  app: {{client: confluent-kafka, command: [python, app.py], {restart}}}
  runner: {{client: confluent-kafka{runner}}}
fleet: [{{spec: app, count: 1}}]
"""


@pytest.mark.parametrize(("restart", "runner", "pieces"), [
    ("restart: always", "", ["members.app.restart.policy", "'never' or 'on-failure'", "'always'"]),
    ("restart: {policy: on-failure, backoff_s: -1}", "", ["members.app.restart.backoff_s", "greater than or equal to 0"]),
    ("restart: {policy: on-failure, limit: -2}", "", ["members.app.restart.limit", "greater than or equal to 0"]),
    ("restart: {policy: on-failure, backoff_s: 5, backoff_max_s: 2}", "",
     ["members.app.restart.backoff_max_s", "below backoff_s"]),
    ("restart: {policy: on-failure, backof_s: 1}", "", ["members.app.restart.backof_s", "backoff_s"]),
    ("restart: never", ", restart: on-failure", ["members.runner.restart", "only for command members",
                                                  "testbed's own confluent-kafka runner"]),
])
def test_bad_restart_settings_are_refused_naming_the_field(tmp_path, restart, runner, pieces) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.format(restart=restart, runner=runner))
    with pytest.raises(ConfigError) as refused:
        expand(path)
    for piece in pieces:
        assert piece in str(refused.value)


# ---- which exits are crashes ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("command", "detail", "crash"), [
    (True, {"cause": "exited", "exit_code": 1, "signal": None}, True),
    (True, {"cause": "exited", "exit_code": None, "signal": "SIGSEGV"}, True),
    (True, {"cause": "exited", "exit_code": 0, "signal": None}, False),  # it chose to leave
    (True, {"cause": "killed", "exit_code": None, "signal": "SIGKILL"}, False),  # the scenario's kill
    (True, {"cause": "stopped", "exit_code": 1, "signal": None}, False),  # asked to stop, exited badly
    (False, {"cause": "exited", "exit_code": 1, "signal": None}, False),  # testbed's runner: our defect
])
def test_a_crash_is_the_users_program_failing_unasked(command, detail, crash) -> None:
    assert is_crash(command, detail) is crash


# ---- the exception in the output --------------------------------------------------------------------------------

def test_a_python_traceback_gives_its_last_exception() -> None:
    tail = ["consumed 41 records",
            "Traceback (most recent call last):",
            '  File "/srv/app.py", line 30, in <module>',
            "    handle(msg)",
            '  File "/srv/app.py", line 12, in handle',
            "    raise PoisonPill(f'cannot parse {value!r}')",
            "__main__.PoisonPill: cannot parse b'POISON'"]
    assert exception_of(tail) == {"type": "PoisonPill", "message": "cannot parse b'POISON'"}


def test_a_chained_python_traceback_gives_the_exception_it_died_of() -> None:
    tail = ["Traceback (most recent call last):", '  File "a.py", line 3, in <module>', "KeyError: 'id'", "",
            "During handling of the above exception, another exception occurred:", "",
            "Traceback (most recent call last):", '  File "a.py", line 5, in <module>',
            "aiokafka.errors.CommitFailedError: CommitFailedError: Commit cannot be completed since the group has "
            "already rebalanced"]
    found = exception_of(tail)
    assert found is not None and found["type"] == "aiokafka.errors.CommitFailedError"
    assert found["message"].startswith("CommitFailedError: Commit cannot be completed")


def test_an_exception_without_a_message_and_a_cut_traceback() -> None:
    assert exception_of(["Traceback (most recent call last):", '  File "a.py", line 1', "SystemError"]) == \
        {"type": "SystemError", "message": ""}
    assert exception_of(["Traceback (most recent call last):", '  File "a.py", line 1']) is None


def test_a_jvm_uncaught_exception_and_its_cause() -> None:
    tail = ['Exception in thread "main" org.apache.kafka.common.errors.RecordDeserializationException: Error '
            "deserializing key/value for partition events-0 at offset 41",
            "\tat org.apache.kafka.clients.consumer.internals.CompletedFetch.parseRecord(CompletedFetch.java:331)",
            "Caused by: com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'POISON'",
            "\t... 12 more"]
    found = exception_of(tail)
    assert found == {"type": "org.apache.kafka.common.errors.RecordDeserializationException",
                     "message": "Error deserializing key/value for partition events-0 at offset 41",
                     "caused_by": "com.fasterxml.jackson.core.JsonParseException: Unrecognized token 'POISON'"}


def test_a_printed_java_stack_trace_counts_and_plain_output_does_not() -> None:
    assert exception_of(["java.lang.IllegalStateException: poison at offset 7",
                         "\tat com.acme.Orders.handle(Orders.java:40)"])["type"] == "java.lang.IllegalStateException"
    assert exception_of(["java.lang.IllegalStateException: mentioned in a log line"]) is None
    assert exception_of(["shutting down", "bye"]) is None


# ---- crash loops on hand-built histories ------------------------------------------------------------------------

def crash_action(member: str, ts: int, restart_in_s: float | None = 1.0, **exception: str) -> dict:
    return {"kind": Action.MEMBER_CRASH, "ts_ms": ts, "target": member,
            "detail": {"exit_code": 1, "signal": None, "exception": exception or None, "restart_in_s": restart_in_s,
                       "restart_refused": None if restart_in_s is not None else "restart limit 2 reached",
                       "log_tail": ["..."]}}


def held(member: str, partition: int, start: int, end: int, reason: str = "crashed") -> OwnershipInterval:
    return OwnershipInterval("events", partition, member, start, end, reason)


POISON = {"type": "PoisonPill", "message": "cannot parse b'POISON'"}
# m0 dies on events-0 three times (restarts m0.1, m0.2); m1 held events-1 and died with m0's first crash,
# but events-1 was processed afterwards.
ACTIONS = [crash_action("m0", 1_000, **POISON), crash_action("m0.1", 3_000, **POISON),
           crash_action("m0.2", 7_000, restart_in_s=None, **POISON)]
INTERVALS = [held("m0", 0, 0, 1_000), held("m0", 1, 0, 1_000), held("m0.1", 0, 2_000, 3_000),
             held("m0.2", 0, 5_000, 7_000), held("m1", 1, 1_500, 9_000, "run_end")]


def test_each_crash_is_on_the_partitions_its_member_held_when_it_died() -> None:
    found = crashes(ACTIONS, INTERVALS)
    assert [(c.member, c.partitions) for c in found] == [
        ("m0", (("events", 0), ("events", 1))), ("m0.1", (("events", 0),)), ("m0.2", (("events", 0),))]
    assert found[0].exception_type == "PoisonPill" and found[2].how == "exit code 1"


def test_a_program_that_closes_on_its_way_out_crashes_on_the_partitions_its_close_revoked() -> None:
    # finally: consumer.close(): the revoke at shutdown ends its intervals just before the crash record
    intervals = [held("m0", 0, 0, 990, "revoked"), held("m0.1", 0, 2_000, 2_990, "revoked"),
                 held("m1", 1, 0, 500, "revoked")]  # a live hand-over of m1's, long before: not a shutdown revoke
    found = crashes([crash_action("m0", 1_000, **POISON), crash_action("m0.1", 3_000, **POISON)], intervals,
                    [("m0", "events", 0), ("m0.1", "events", 0)])
    assert [(c.member, c.partitions) for c in found] == [("m0", (("events", 0),)), ("m0.1", (("events", 0),))]
    assert [(loop.partition, len(loop.crashes)) for loop in crash_loops(found, lambda *_: False)] == [(0, 2)]


def test_a_poison_record_makes_an_ongoing_loop_and_a_moving_partition_none() -> None:
    found = crashes(ACTIONS, INTERVALS)
    processed = {("events", 1): [1_600, 8_000]}  # events-0: never again after the first crash

    def progressed(tp, after, until):
        return any(after < ts and (until is None or ts <= until) for ts in processed.get(tp, []))

    loops = crash_loops(found, progressed)
    assert len(loops) == 1
    loop = loops[0]
    assert (loop.topic, loop.partition, len(loop.crashes), loop.ongoing) == ("events", 0, 3, True)
    assert loop.members == ["m0", "m0.1", "m0.2"] and loop.restarts == 2
    assert loop.exception is not None and loop.exception.exception_type == "PoisonPill"


def test_a_loop_on_a_partition_with_nothing_left_when_the_drain_ended_is_not_ongoing() -> None:
    found = crashes(ACTIONS, INTERVALS)
    never = crash_loops(found, lambda *_: False, caught_up=lambda tp: tp == ("events", 0))
    assert [(loop.partition, len(loop.crashes), loop.ongoing) for loop in never] == [(0, 3, False)]
    assert [loop.ongoing for loop in crash_loops(found, lambda *_: False)] == [True]


def test_processing_between_crashes_breaks_the_loop_and_an_end_of_it_is_not_ongoing() -> None:
    found = crashes(ACTIONS, INTERVALS)
    between = {("events", 0): [2_000]}  # processed between the first and the second crash

    def progressed(tp, after, until):
        return any(after < ts and (until is None or ts <= until) for ts in between.get(tp, []))

    loops = crash_loops(found, progressed)
    assert [(len(loop.crashes), loop.ongoing) for loop in loops] == [(2, True)]  # the second and third only
    after = {("events", 0): [8_000]}  # all three in a row, then it moved on (a fixed version, say)
    loops = crash_loops(found, lambda tp, a, u: any(a < ts and (u is None or ts <= u) for ts in after.get(tp, [])))
    assert [(len(loop.crashes), loop.ongoing) for loop in loops] == [(3, False)]


def test_a_partition_held_beside_the_poisoned_one_is_no_loop_of_its_own() -> None:
    # m0 and m0.1 held events-0 and events-1 when they died; m1 and m1.1 held only events-0 (the poisoned one):
    # nothing was processed on either afterwards.
    actions = [crash_action(m, ts, **POISON) for m, ts in (("m1", 1_000), ("m1.1", 2_000), ("m0", 3_000),
                                                               ("m0.1", 4_000))]
    intervals = [held("m1", 0, 0, 1_000), held("m1.1", 0, 1_500, 2_000), held("m0", 0, 2_500, 3_000),
                 held("m0", 1, 0, 3_000), held("m0.1", 0, 3_500, 4_000), held("m0.1", 1, 3_500, 4_000)]
    loops = crash_loops(crashes(actions, intervals), lambda *_: False)
    assert [(loop.partition, len(loop.crashes)) for loop in loops] == [(0, 4)]
    # the same crashes on both partitions: which one poisoned them cannot be told, both are named
    both = [held("m0", 0, 0, 1_000), held("m0", 1, 0, 1_000), held("m0.1", 0, 1_500, 2_000), held("m0.1", 1, 1_500, 2_000)]
    two = crash_loops(crashes([crash_action("m0", 1_000), crash_action("m0.1", 2_000)], both), lambda *_: False)
    assert sorted(loop.partition for loop in two) == [0, 1]
    assert [sorted(loop.partition for loop in group) for group in alike(two)] == [[0, 1]]
    assert alike(loops) == []


def test_one_crash_is_no_loop_and_the_windows_asked_about_cover_each_partition() -> None:
    one = [Crash("m0", 1_000, 1, None, None, None, None, "restart policy never", (), (("events", 0),))]
    assert crash_loops(one, lambda *_: False) == []
    assert progress_windows(crashes(ACTIONS, INTERVALS)) == [
        (("events", 0), 1_000, 3_000), (("events", 0), 3_000, 7_000), (("events", 0), 7_000, None),
        (("events", 1), 1_000, None)]


# ---- the checker and the allowances -----------------------------------------------------------------------------

RUN_START = {"kind": Action.RUN_START, "ts_ms": 0, "target": "s", "detail": {"allow_crashes": False}}


def test_crashes_are_invalid_unless_the_scenario_allows_them_and_they_allow_redelivery() -> None:
    config = run_config({}, [RUN_START, *ACTIONS])
    assert config.members_crashed == ["m0", "m0.1", "m0.2"] and not config.crashes_allowed
    allowed = allowed_anomalies(config)
    assert allowed.duplicates_redelivered is True
    verdict = check_member_crashes(Evidence(metrics(config, member_crashes=3)), allowed)
    assert (verdict.status, verdict.count) == ("invalid", 3)
    permissive = run_config({}, [{**RUN_START, "detail": {"allow_crashes": True}}, *ACTIONS])
    verdict = check_member_crashes(Evidence(metrics(permissive, member_crashes=3)), allowed_anomalies(permissive))
    assert verdict.status == "valid"
    assert check_member_crashes(Evidence(metrics(config, member_crashes=0)), allowed).status == "valid"
    unknown = check_member_crashes(Evidence(metrics(config, member_crashes=(None, "no harness log"))), allowed)
    assert unknown.status == "unknown"


# ---- the restarts' thread ---------------------------------------------------------------------------------------

class Crashed:
    member_id = "m0"


def test_restarts_start_on_one_thread_after_their_back_off_and_none_after_the_close() -> None:
    started: list[tuple[int, str, float]] = []
    done = threading.Event()
    t0 = time.monotonic()

    def start(order: RestartOrder) -> None:
        started.append((order.slot, threading.current_thread().name, time.monotonic() - t0))
        done.set()

    restarter = Restarter(start)
    try:
        assert restarter.schedule(RestartOrder(time.monotonic() + 0.2, 0, Crashed(), 1, 0.2))
        assert restarter.schedule(RestartOrder(time.monotonic() + 0.05, 1, Crashed(), 1, 0.05))
        assert restarter.schedule(RestartOrder(time.monotonic() + 0.1, 2, Crashed(), 1, 0.1))
        restarter.cancel(2)  # a step stopped that member meanwhile
        assert done.wait(5)
        deadline = time.monotonic() + 5
        while len(started) < 2 and time.monotonic() < deadline:
            done.clear()
            done.wait(0.5)
        assert [s[0] for s in started] == [1, 0]
        assert {s[1] for s in started} == {"member-restarts"}
        assert started[0][2] >= 0.05 and started[1][2] >= 0.2
        restarter.stop_scheduling()
        assert not restarter.schedule(RestartOrder(time.monotonic(), 3, Crashed(), 1, 0.0))
        assert not restarter.pending()
    finally:
        restarter.close()
    assert len(started) == 2


def test_a_restarted_program_lives_as_long_as_the_restarts_thread_and_dies_with_it() -> None:
    """The parent-death signal follows the thread that started a child: a restart started on a short-lived
    thread would be SIGKILLed at once; on the restarts' thread it runs until the fleet's close ends that thread,
    and then nothing is left."""
    children: list[subprocess.Popen] = []
    started = threading.Event()

    def start(order: RestartOrder) -> None:
        children.append(subprocess.Popen(["sleep", "60"], preexec_fn=die_with_parent(own_group=True)))
        started.set()

    restarter = Restarter(start)
    try:
        restarter.schedule(RestartOrder(time.monotonic(), 0, Crashed(), 1, 0.0))
        assert started.wait(5)
        time.sleep(0.3)  # a child of a thread that ended would be dead by now
        assert children[0].poll() is None
    finally:
        restarter.close()
    children[0].wait(timeout=5)  # killed by the kernel when the thread ended
    assert children[0].returncode == -signal.SIGKILL


def test_allow_crashes_without_a_program_is_refused(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: t\ntopics: [{name: events, partitions: 2}]\nmembers: {runner: {client: confluent-kafka}}\n"
                    "fleet: [{spec: runner, count: 1}]\nallow_crashes: true\n")
    with pytest.raises(ConfigError, match=r"allow_crashes: only a user's program"):
        expand(path)
    path.write_text(SCENARIO.format(restart="restart: never", runner="") + "allow_crashes: true\n")
    assert expand(path)[0].scenario.allow_crashes


# ---- the report's sentence --------------------------------------------------------------------------------------

def test_the_report_names_the_loop_its_exception_and_where_it_is_stuck() -> None:
    row = {"topic": "events", "partition": 0, "crashes": 4, "restarts": 4, "members": "m0,m0.1,m0.2,m0.3",
           "first_ms": 1_000, "last_ms": 9_000, "exception_type": "PoisonPill", "message": "cannot parse b'x'",
           "exit": "exit code 1", "stuck_at_offset": 41, "records_behind": 120, "pause_ms": 21_000, "pause_open": True}
    assert loop_sentence(pd.DataFrame([row])) == (
        "m0, m0.1, m0.2, m0.3 crashed 4 times in a row at events-0 (PoisonPill: cannot parse b'x'), restarted each "
        "time; events-0 made no progress for 21.0 s, still none when the drain ended (stuck at offset 41, 120 records "
        "behind).")
    unknown_end = loop_sentence(pd.DataFrame([{**row, "pause_open": float("nan")}]))
    assert "made no progress for 21.0 s" in unknown_end and "still none" not in unknown_end  # NaN is not "open"
    quiet = {**row, "restarts": 0, "exception_type": None, "message": None, "stuck_at_offset": None,
             "records_behind": None, "pause_ms": None, "pause_open": None, "exit": "signal SIGSEGV"}
    other = {**quiet, "partition": 3, "crashes": 2, "first_ms": 4_000}
    assert loop_sentence(pd.DataFrame([quiet, other])) == (
        "m0, m0.1, m0.2, m0.3 crashed 4 times in a row at events-0 (signal SIGSEGV, no exception in its output), never "
        "restarted; 1 more partition(s) in a crash loop.")


def test_loops_of_the_same_crashes_are_named_together_not_one_of_them_as_the_killer() -> None:
    """A program that crashes whatever it reads makes a loop of the very same crashes on every partition it holds:
    naming the first as where it crashed would send the user to the wrong records."""
    row = {"topic": "events", "partition": 2, "crashes": 3, "restarts": 3, "members": "m0,m0.1,m0.2",
           "first_ms": 1_000, "last_ms": 9_000, "exception_type": "RuntimeError", "message": "boom", "exit": "exit 1",
           "stuck_at_offset": 7, "records_behind": 50, "pause_ms": 20_000, "pause_open": True}
    loops = pd.DataFrame([row, {**row, "partition": 5, "pause_ms": 18_500},
                          {**row, "partition": 1, "crashes": 2, "first_ms": 12_000, "last_ms": 15_000}])
    assert loop_sentence(loops, "the run ended") == (
        "m0, m0.1, m0.2 crashed 3 times in a row holding events-2, events-5 together (RuntimeError: boom), restarted "
        "each time; the same crashes for each, so which partition's records kill it cannot be told (the program may "
        "crash whatever it reads); none of them made progress for 18.5 s, still none when the run ended; 1 more "
        "partition(s) in a crash loop.")


def test_a_crash_during_a_wait_is_named_in_its_diagnostics(tmp_path) -> None:
    from types import SimpleNamespace

    from testbed.fleet.crashes import CrashRestarts
    from testbed.fleet.fleet import Fleet
    from testbed.history.harness import HarnessLog

    spec = MemberSpec(**{**PROGRAM, "restart": {"policy": "never"}})
    proc = SimpleNamespace(member_id="m1", config=SimpleNamespace(spec=spec, slot=1),
                           log_tail=lambda n: ["Traceback (most recent call last):", '  File "app.py", line 9',
                                               "ValueError: cannot handle record events-1@30"])
    crashes_ = CrashRestarts(HarnessLog(tmp_path / "harness.jsonl"), lambda order: None)
    began = time.monotonic()
    crashes_.on_exit(proc, {"cause": "exited", "exit_code": 1, "pid": 7}, "m1", closing=False)
    crashes_.on_exit(proc, {"cause": "stopped", "exit_code": 0, "pid": 7}, "m1", closing=False)  # not a crash
    assert [(member, how) for _, member, how in crashes_.since(began)] == [
        ("m1", "ValueError: cannot handle record events-1@30")]
    assert crashes_.since(time.monotonic() + 1) == []
    fleet = SimpleNamespace(_crashes=crashes_)  # the fleet's lines read its crashes only
    [line] = Fleet.crash_lines(fleet, began)  # type: ignore[arg-type]
    assert line.startswith("m1 crashed 0.") and "s into this wait (ValueError: cannot handle record" in line
    assert "session.timeout.ms" in line
    assert Fleet.crash_lines(fleet)[0].startswith("m1 crashed (ValueError")  # type: ignore[arg-type]
