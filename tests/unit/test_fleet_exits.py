"""Every member process's end is recorded as one member_exit, with the right cause (real child processes, no Kafka)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from testbed.fleet import fleet as fleet_module
from testbed.fleet.fleet import Fleet
from testbed.fleet.exits import exit_detail
from testbed.fleet.host import HostedMember, HostProcess
from testbed.fleet.process import MemberProcess
from testbed.fleet.stacks import client_stacks
from testbed.history.events import Action, HarnessAction
from testbed.children import signal_state
from testbed.run.layout import RunDir
from testbed.history.writer import read_events
from testbed.members.config import MemberConfig
from testbed.members.launch import Launch
from testbed.members.spec import MemberSpec
from testbed.waits import wait_until

# Stand-ins for runners, chosen by the spec's name: each ignores its --config argument and, once its signal
# handling is set, creates the file named by its first argument (READY).
READY = "import sys; open(sys.argv[1], 'w').close()\n"
SCRIPTS = {
    # Python's default SIGTERM action: the process dies of the signal.
    "sleep": READY + "import time; time.sleep(60)",
    # A runner's clean stop: SIGTERM handled, exit 0.
    "clean": "import signal, sys, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\n" + READY +
             "time.sleep(60)",
    # A program hung at its stop: SIGTERM ignored, the stacks signal not handled (it dies of it). Its default action
    # is set, not assumed: a shell without job control starts a background command with SIGQUIT ignored, and an
    # ignored signal stays ignored through fork and exec (CI's own launch did that once).
    "hang": "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
             "signal.signal(signal.SIGQUIT, signal.SIG_DFL)\n" + READY + "time.sleep(60)",
    # A runner hung as kafka-python members were seen to: its main thread blocked in a C-level wait while the
    # SIGTERM goes to another thread, so the Python handler never runs; it answers the stacks signal as runners do.
    "hang_in_c": "import signal, threading\n"
                 "from testbed.members.runtime import dump_stacks_on_request, install_stop_signals\n"
                 "install_stop_signals(); dump_stacks_on_request()\n"
                 "threading.Thread(target=threading.Event().wait, daemon=True).start()\n"
                 "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})\n" + READY +
                 "def blocked_in_c():\n"
                 "    lock = threading.Lock(); lock.acquire(); lock.acquire()\n"
                 "blocked_in_c()",
    # A runner that answers the stacks signal, with a child in its group that would die of it.
    "child_would_die": "import signal, subprocess, sys, time\n"
                       "from testbed.members.runtime import dump_stacks_on_request\n"
                       "dump_stacks_on_request()\n"
                       "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
                       "signal.signal(signal.SIGQUIT, signal.SIG_DFL); time.sleep(60)'])\n"
                       "time.sleep(0.5)\n" + READY + "child.wait()",
    # Ends by itself with an error code (a crash, a fatal client error).
    "crash": READY + "import sys, time; time.sleep(0.2); sys.exit(3)",
}


class FakeRunner(MemberProcess):
    def launch(self) -> Launch:
        return Launch([sys.executable, "-c", SCRIPTS[self.config.spec.name], str(ready_file(self))])


def ready_file(proc: MemberProcess) -> Path:
    return proc.config_path.parent / f"{proc.member_id}.ready"  # start() makes this folder


def member_config(tmp_path: Path, script: str, member_id: str) -> MemberConfig:
    return MemberConfig(member_id=member_id, group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1",
                        spec=MemberSpec(name=script, client="confluent-kafka"),
                        history_path=tmp_path / "history" / f"{member_id}.jsonl")


def make_process(tmp_path: Path, script: str, member_id: str = "m0", **kwargs: Any) -> FakeRunner:
    return FakeRunner(member_config(tmp_path, script, member_id), tmp_path / "configs" / f"{member_id}.json",
                      **kwargs)


class Exits:
    """An on_exit callback that keeps what it was given, and on which thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any], str]] = []

    def __call__(self, proc: MemberProcess, detail: dict[str, Any]) -> None:
        self.calls.append((proc.member_id, detail, threading.current_thread().name))


def wait_for_start(proc: MemberProcess) -> None:
    """Until the stand-in has set its signal handling (a fixed pause was too short on a loaded CI machine)."""
    wait_until(lambda: ready_file(proc).exists(), timeout_s=30, interval_s=0.02,
               what=f"{proc.member_id} to set its signal handling", abort=lambda: None if proc.alive() else "it ended")


# ---- the classification itself -------------------------------------------------------------------

@pytest.mark.parametrize("returncode, stop_requested, kill_cause, expected", [
    (0, False, None, {"exit_code": 0, "signal": None, "cause": "exited", "requested": False}),
    (3, False, None, {"exit_code": 3, "signal": None, "cause": "exited", "requested": False}),
    (-9, False, None, {"exit_code": None, "signal": "SIGKILL", "cause": "exited", "requested": False}),
    (0, True, None, {"exit_code": 0, "signal": None, "cause": "stopped", "requested": True}),
    (-15, True, None, {"exit_code": None, "signal": "SIGTERM", "cause": "stopped", "requested": True}),
    (-9, True, "stop_timeout", {"exit_code": None, "signal": "SIGKILL", "cause": "stop_timeout", "requested": True}),
    (-9, False, "killed", {"exit_code": None, "signal": "SIGKILL", "cause": "killed", "requested": True}),
    # The stacks signal before a stop timeout's SIGKILL kills a program that does not handle it: the same cause.
    (-3, True, "stop_timeout", {"exit_code": None, "signal": "SIGQUIT", "cause": "stop_timeout", "requested": True}),
    # Ended by itself just before the requested SIGKILL landed: not the harness's kill.
    (1, False, "killed", {"exit_code": 1, "signal": None, "cause": "exited", "requested": True}),
    (0, True, "stop_timeout", {"exit_code": 0, "signal": None, "cause": "stopped", "requested": True}),
])
def test_exit_detail_classifies_every_end(returncode: int, stop_requested: bool, kill_cause: Any,
                                          expected: dict[str, Any]) -> None:
    detail = exit_detail(returncode, stop_requested=stop_requested, kill_cause=kill_cause, pid=42)
    assert detail == {**expected, "pid": 42}


def test_unknown_signal_numbers_still_get_a_name() -> None:
    assert exit_detail(-64, stop_requested=False, kill_cause=None)["signal"] in ("SIGRTMAX", "SIG64")


# ---- real processes ------------------------------------------------------------------------------

def test_a_process_that_ends_by_itself_is_recorded_by_its_watcher(tmp_path: Path) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "crash", on_exit=exits)
    proc.start()
    assert proc.wait_exit_recorded(10)
    ((member, detail, thread),) = exits.calls
    assert member == "m0" and thread == "exit-watch-m0"
    assert detail == {"exit_code": 3, "signal": None, "cause": "exited", "requested": False, "pid": proc.pid}
    assert proc.state == "exited" and proc.exit_code == 3 and proc.exit_info == detail


def test_kill_records_the_exit_before_it_returns(tmp_path: Path) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "sleep", on_exit=exits)
    proc.start()
    wait_for_start(proc)
    proc.kill()
    ((_, detail, _),) = exits.calls  # no waiting: kill() joined the watcher
    assert detail["cause"] == "killed" and detail["signal"] == "SIGKILL" and detail["exit_code"] is None
    assert proc.state == "killed"


def test_a_paused_process_killed_is_killed(tmp_path: Path) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "sleep", on_exit=exits)
    proc.start()
    wait_for_start(proc)
    proc.pause()
    proc.kill()
    assert [d["cause"] for _, d, _ in exits.calls] == ["killed"]


@pytest.mark.parametrize("script, exit_code, sig", [("clean", 0, None), ("sleep", None, "SIGTERM")])
def test_stop_within_the_timeout_is_stopped(tmp_path: Path, script: str, exit_code: int | None,
                                            sig: str | None) -> None:
    exits = Exits()
    proc = make_process(tmp_path, script, on_exit=exits)
    proc.start()
    wait_for_start(proc)
    proc.stop(timeout_s=10)
    ((_, detail, _),) = exits.calls
    assert (detail["cause"], detail["exit_code"], detail["signal"], detail["requested"]) == ("stopped", exit_code, sig,
                                                                                            True)
    assert proc.state == "stopped"


def test_a_paused_process_asked_to_stop_is_resumed_and_stopped(tmp_path: Path, caplog) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "clean", on_exit=exits)
    proc.start()
    wait_for_start(proc)
    proc.pause()
    proc.stop(timeout_s=10)
    # On a stop timeout the harness logs the process's state and signal masks: the evidence of why.
    assert [(d["cause"], d["exit_code"]) for _, d, _ in exits.calls] == [("stopped", 0)], caplog.text


def test_a_process_started_with_its_stop_signal_blocked_here_still_gets_it(tmp_path: Path) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "clean", on_exit=exits)
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
    wait_for_start(proc)
    assert "blocked -" in signal_state(proc.pid), signal_state(proc.pid)
    proc.stop(timeout_s=10)
    assert [(d["cause"], d["exit_code"]) for _, d, _ in exits.calls] == [("stopped", 0)]


@pytest.mark.parametrize("script, died_of, frame", [
    # a runner: its stacks in its log (faulthandler names the frame the main thread is stuck in), then SIGKILL
    ("hang_in_c", "SIGKILL", "in blocked_in_c"),
    # a program that does not handle the stacks signal dies of it: still a stop timeout
    ("hang", "SIGQUIT", None),
])
def test_stop_past_the_timeout_asks_for_the_stacks_then_kills(tmp_path: Path, script: str, died_of: str,
                                                              frame: str | None) -> None:
    exits = Exits()
    config = member_config(tmp_path, script, "m0").model_copy(update={"log_path": tmp_path / "m0.log"})
    proc = FakeRunner(config, tmp_path / "configs" / "m0.json", on_exit=exits)
    proc.start()
    wait_for_start(proc)
    proc.stop(timeout_s=0.5)
    ((_, detail, _),) = exits.calls
    assert (detail["cause"], detail["signal"]) == ("stop_timeout", died_of)
    assert not proc.alive()
    if frame is not None:
        log = config.log_path.read_text()
        assert frame in log, log


def test_a_kill_from_outside_the_harness_is_exited_with_its_signal(tmp_path: Path) -> None:
    exits = Exits()
    proc = make_process(tmp_path, "sleep", on_exit=exits)
    proc.start()
    wait_for_start(proc)
    os.kill(proc.pid, signal.SIGKILL)  # e.g. the OOM killer
    assert proc.wait_exit_recorded(10)
    ((_, detail, _),) = exits.calls
    assert (detail["cause"], detail["signal"], detail["requested"]) == ("exited", "SIGKILL", False)
    assert proc.state == "exited"


def test_a_failing_callback_does_not_break_the_watcher(tmp_path: Path) -> None:
    def broken(_proc: MemberProcess, _detail: dict[str, Any]) -> None:
        raise OSError("harness log closed")

    proc = make_process(tmp_path, "crash", on_exit=broken)
    proc.start()
    assert proc.wait_exit_recorded(10)
    assert proc.exit_info is not None and proc.exit_info["cause"] == "exited"


def test_a_hosted_member_killed_with_its_host_is_recorded_once(tmp_path: Path) -> None:
    exits = Exits()
    host = HostProcess("host-m0", [sys.executable, "-c", ""], tmp_path / "host.log")  # never started
    member = HostedMember(member_config(tmp_path, "sleep", "m0"), tmp_path / "m0.json", host, state="running",
                          on_exit=exits)
    host.members["m0"] = member
    member.mark_kill("killed")
    member.ended(-signal.SIGKILL, how="its host ended")
    member.ended(-signal.SIGKILL, how="reported again by the host's own end")
    ((_, detail, _),) = exits.calls
    assert detail == {"exit_code": None, "signal": "SIGKILL", "cause": "killed", "requested": True, "pid": None,
                      "host": "host-m0"}
    assert (member.state, member.ended_how, member.exit_info) == ("killed", "its host ended", detail)
    assert member.wait_exit_recorded(0) and not member.alive()


def test_a_signal_reaches_every_live_member_of_a_host_and_a_process_of_its_own_alone(tmp_path: Path) -> None:
    host = HostProcess("host-m0", [sys.executable, "-c", ""], tmp_path / "host.log")  # never started
    hosted = [HostedMember(member_config(tmp_path, "sleep", m), tmp_path / f"{m}.json", host, state="running")
              for m in ("m0", "m1", "m2")]
    for member in hosted:
        host.members[member.member_id] = member
    hosted[2].ended(0, how="its thread in the host ended")
    assert [m.member_id for m in hosted[0].cohosted()] == ["m0", "m1"] and hosted[0].host is host
    own = make_process(tmp_path, "sleep", "m3")
    assert own.cohosted() == [own] and own.host is None


# ---- through the fleet: the harness log ----------------------------------------------------------

def harness_actions(run_dir: RunDir) -> list[HarnessAction]:
    return [e for e in read_events(run_dir.harness_log) if isinstance(e, HarnessAction)]


def test_fleet_records_one_member_exit_per_process_after_the_action_that_caused_it(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    monkeypatch.setattr(fleet_module, "MemberProcess", FakeRunner)
    run_dir = RunDir(tmp_path / "run")
    fleet = Fleet("127.0.0.1:1", "g", ["t"], run_dir, stop_timeout_s=1.0)
    with fleet:
        for name in ("sleep", "clean", "crash", "hang_in_c", "clean"):
            fleet.start(MemberSpec(name=name, client="confluent-kafka"), 1)
        for member in ("m0", "m1", "m3", "m4"):  # m2 may have crashed already
            wait_for_start(fleet.member(member))
        fleet.kill_member("m0")
        fleet.stop_member("m1")
        assert fleet.member("m2").wait_exit_recorded(10)  # the crash, unasked
        # m3 (hangs on SIGTERM) and m4 (clean) are stopped by close()
    pids = {p.member_id: p.pid for p in fleet.members.values()}
    assert all(not p.alive() for p in fleet.members.values())

    actions = harness_actions(run_dir)
    exits = {a.target: a for a in actions if a.kind == Action.MEMBER_EXIT}
    assert sorted(a.target for a in actions if a.kind == Action.MEMBER_EXIT) == ["m0", "m1", "m2", "m3", "m4"]
    assert {m: a.detail["cause"] for m, a in exits.items()} == {
        "m0": "killed", "m1": "stopped", "m2": "exited", "m3": "stop_timeout", "m4": "stopped"}
    assert exits["m2"].detail["exit_code"] == 3 and exits["m2"].detail["requested"] is False
    assert exits["m3"].detail["signal"] == "SIGKILL"
    assert all(a.detail["pid"] == pids[m] and a.mono_ms is not None for m, a in exits.items())
    assert [a.detail["slot"] for a in sorted(exits.values(), key=lambda a: a.target)] == [0, 1, 2, 3, 4]

    order = [(a.kind, a.target) for a in actions]
    for member, cause_action in (("m0", Action.MEMBER_KILL), ("m1", Action.MEMBER_STOP), ("m3", Action.MEMBER_STOP),
                                 ("m4", Action.MEMBER_STOP)):
        assert order.index((cause_action, member)) < order.index((Action.MEMBER_EXIT, member)), order
    kill, exit_m0 = (next(a for a in actions if (a.kind, a.target) == k) for k in ((Action.MEMBER_KILL, "m0"),
                                                                                  (Action.MEMBER_EXIT, "m0")))
    assert kill.ts_ms <= exit_m0.ts_ms and kill.mono_ms <= exit_m0.mono_ms


def test_fleet_passes_the_broker_session_timeout_to_its_members(tmp_path: Path) -> None:
    fleet = Fleet("127.0.0.1:1", "g", ["t"], RunDir(tmp_path / "run"), broker_session_timeout_ms=12000)
    with fleet:
        proc = fleet._new_process(0, MemberSpec(client="confluent-kafka"))
    assert proc.config.broker_session_timeout_ms == 12000


# ---- stacks asked of a live member (a wait's diagnostics) ----------------------------------------

@pytest.mark.parametrize("script", ["hang_in_c", "hang", "child_would_die"])
def test_stacks_asked_of_a_live_member_go_only_to_a_process_that_lives_through_them(tmp_path: Path,
                                                                                     script: str) -> None:
    """``hang_in_c`` catches the stacks signal as runners do and writes its frames; ``hang`` would die of it, and so
    would the child of ``child_would_die`` (the signal goes to the member's process group)."""
    config = member_config(tmp_path, script, "m0").model_copy(update={"log_path": tmp_path / "m0.log"})
    proc = FakeRunner(config, tmp_path / "configs" / "m0.json")
    proc.start()
    try:
        wait_for_start(proc)
        stacks = client_stacks(proc)
        if script == "hang_in_c":
            # a line per thread, innermost frame first: the main thread's starts where it hangs
            assert isinstance(stacks, list) and len(stacks) >= 2, stacks
            assert any(line.split(" at ", 1)[-1].startswith("blocked_in_c (") for line in stacks), stacks
        elif script == "hang":
            assert stacks == "no stacks: its process does not catch SIGQUIT (it would end it)"
        else:
            assert isinstance(stacks, str) and stacks.startswith("no stacks: processes ") and \
                stacks.endswith(" of its group do not catch SIGQUIT (it would end them)"), stacks
            assert str(proc.pid) not in stacks
        assert proc.alive() and proc.popen.poll() is None  # and the child lives: its parent waits for it
    finally:
        proc.kill()
