"""Members hosted many to a process (``testbed.members.host``), seen by the fleet as members like any other.

``HostProcess`` owns the OS process and its control channel; ``HostedMember`` is one member in it, with
the interface of ``MemberProcess`` so that the fleet, its waits and its actions do not care how a member
is housed. Per member through the channel: start, clean stop, stall. Per process, by signals, so every
member hosted there at once: SIGKILL, SIGSTOP/SIGCONT (and a network cut, by the process's gid).

Each member's end is reported by the host (``exit`` line, the member's own return code) or, when the host
itself ends first, taken from the host's end: a member of a SIGKILLed host died of SIGKILL.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..cache import pythonpath_with_testbed
from ..children import child_env, describe_exit, die_with_parent
from ..members.config import MemberConfig
from ..members.runtime import STACKS_SIGNAL
from .exits import ExitBook, ExitCallback, ExitCause
from .process import WATCHER_JOIN_S, ProcessState, wait_for_stacks, wait_group_ended

log = logging.getLogger(__name__)
HOST_END_TIMEOUT_S = 90.0  # the host's own wait for its members to leave (60 s) and a margin


class HostProcess:
    """One member host process: started empty, members added with ``HostedMember.start``."""

    def __init__(self, name: str, command: list[str], log_path: Path, gid: int | None = None) -> None:
        self.name = name
        self.command = command
        self.log_path = log_path
        self.gid = gid
        self.members: dict[str, HostedMember] = {}
        self.popen: subprocess.Popen | None = None
        self.paused = False
        self._reader: threading.Thread | None = None
        self._stdin_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            self.popen = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=out,
                env=child_env(PYTHONPATH=pythonpath_with_testbed(), PYTHONUNBUFFERED="1"),
                group=self.gid, extra_groups=[] if self.gid is not None else None,
                preexec_fn=die_with_parent(own_group=True))
        self._reader = threading.Thread(target=self._read, args=(self.popen.stdout,), daemon=True,
                                        name=f"host-read-{self.name}")
        self._reader.start()

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def send(self, op: str, **fields: Any) -> bool:
        """One command on the control channel; False if the host is gone."""
        if not self.alive():
            return False
        try:
            with self._stdin_lock:
                self.popen.stdin.write((json.dumps({"op": op, **fields}) + "\n").encode())
                self.popen.stdin.flush()
            return True
        except (BrokenPipeError, ValueError, OSError):
            return False

    def _read(self, stdout: IO[bytes]) -> None:
        """The reader thread's life: each member's end as the host reports it, then the host's own end."""
        for raw in stdout:
            try:
                event = json.loads(raw)
                member = self.members[event["member"]]
            except (ValueError, KeyError):
                log.warning("host %s wrote an unexpected line: %r", self.name, raw[:200])
                continue
            if event.get("event") == "exit":
                member.ended(int(event.get("code", 1)), how=f"its thread in host {self.name} ended")
        returncode = self.popen.wait()
        for member in list(self.members.values()):
            member.ended(returncode, how=f"its host {self.name} (pid {self.pid}) ended: {describe_exit(returncode)}")

    def signal(self, sig: signal.Signals) -> None:
        if self.alive():
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self.signal(signal.SIGCONT)
        self.paused = False

    def kill(self, cause: ExitCause = "killed") -> None:
        """SIGKILL the host: every member in it dies; returns once every exit is recorded."""
        if self.popen is None:
            return
        for member in self.members.values():
            member.mark_kill(cause)
        self.signal(signal.SIGKILL)
        self._join()
        wait_group_ended(self.popen.pid, f"member host {self.name}")

    def ask_stacks(self) -> None:
        """Every thread's stack to the host's log, before it is killed for a member that did not stop
        (``members.runtime.STACKS_SIGNAL``): the evidence of what that member hung in."""
        if self.popen is None:
            return
        self.signal(STACKS_SIGNAL)
        wait_for_stacks(self.popen)

    def close(self, timeout_s: float = HOST_END_TIMEOUT_S) -> None:
        """End the host: its stdin closes, it stops what still runs and exits; SIGKILL if it does not in time."""
        if self.popen is None:
            return
        if self.paused:
            self.resume()
        try:
            self.popen.stdin.close()
        except OSError:
            pass
        try:
            self.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("member host %s did not end within %.0f s: its stacks to its log, then killed",
                        self.name, timeout_s)
            self.ask_stacks()
            self.kill("stop_timeout")
        self._join()

    def _join(self) -> None:
        if self.popen is not None:
            self.popen.wait()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(WATCHER_JOIN_S)

    def log_tail(self, lines: int) -> list[str]:
        if not self.log_path.exists():
            return []
        return self.log_path.read_text(errors="replace").splitlines()[-lines:]


@dataclass
class HostedMember:
    """A member in a ``HostProcess``; the same interface as ``MemberProcess``."""

    config: MemberConfig
    config_path: Path
    host: HostProcess
    state: ProcessState = "stopped"
    exit_code: int | None = None
    on_exit: ExitCallback | None = field(default=None, repr=False)
    ended_how: str | None = field(default=None, repr=False)
    _exits: ExitBook = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._exits = ExitBook(self.on_exit)

    @property
    def exit_info(self) -> dict[str, Any] | None:
        """The member_exit detail, once ended."""
        return self._exits.detail

    @property
    def member_id(self) -> str:
        return self.config.member_id

    @property
    def pid(self) -> int | None:
        return self.host.pid

    @property
    def node_name(self) -> None:
        """On this machine (members placed on a Ray cluster run one per process)."""
        return None

    @property
    def network_rules(self) -> None:
        """This machine's iptables."""
        return None

    @property
    def gid(self) -> int | None:
        return self.host.gid

    def cohosted(self) -> list[HostedMember]:
        """The live members a signal to its process reaches: every member of its host."""
        return [m for m in self.host.members.values() if m.alive()] or [self]

    def start(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config.model_dump(mode="json")))
        self.host.members[self.member_id] = self
        if not self.host.send("start", member=self.member_id, config=str(self.config_path)):
            raise RuntimeError(f"member host {self.host.name} is gone; cannot start {self.member_id} there")
        self.state = "running"

    def ended(self, returncode: int, how: str) -> None:
        """Called once by the host's reader thread (a second call, from the host's own end, is ignored)."""
        detail = self._exits.record(returncode, self.host.pid, host=self.host.name)
        if detail is None:
            return
        self.exit_code, self.ended_how = returncode, how
        if self.state in ("running", "paused"):
            self.state = "exited" if detail["cause"] == "exited" else "killed" if self._exits.kill_cause else self.state
        self._exits.announce(self)

    def mark_kill(self, cause: ExitCause) -> None:
        self._exits.ask_kill(cause)

    def alive(self) -> bool:
        return self.exit_info is None and self.state in ("running", "paused")

    def wait_exit_recorded(self, timeout_s: float = WATCHER_JOIN_S) -> bool:
        """Wait until the exit is recorded (True), or ``timeout_s`` passed / never started."""
        return self._exits.wait_announced(timeout_s) if self.member_id in self.host.members else True

    def log_tail(self, lines: int) -> list[str]:
        return self.host.log_tail(lines)

    def request_stop(self) -> None:
        if self.alive():
            self._exits.ask_stop()
            if self.host.paused:
                self.host.resume()
            self.host.send("stop", member=self.member_id)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Clean stop through the channel; past the timeout the whole host is killed (a thread cannot be)."""
        if not self.alive():
            return self.exit_code
        self.request_stop()
        if self._exits.wait_announced(timeout_s):
            self.state = "stopped"
        else:
            log.warning("%s did not stop within %.0f s: killing its host %s and every member in it",
                        self.member_id, timeout_s, self.host.name)
            self.host.ask_stacks()
            self.kill(cause="stop_timeout")
        return self.exit_code

    def kill(self, cause: ExitCause = "killed") -> None:
        self.host.kill(cause)
        self.state = "killed"

    def pause(self) -> None:
        self.host.pause()
        for member in self.host.members.values():
            if member.alive():
                member.state = "paused"

    def resume(self) -> None:
        self.host.resume()
        for member in self.host.members.values():
            if member.alive():
                member.state = "running"

    def stall(self, on: bool) -> None:
        self.host.send("stall" if on else "unstall", member=self.member_id)
