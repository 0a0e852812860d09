"""One member process: started from a MemberConfig, signalled, and never outliving the harness.

Every process is watched from its start by a daemon thread blocked in ``Popen.wait()``: the moment
it ends, the thread classifies the end (``ExitBook``) and hands it to ``on_exit`` (the fleet
writes it as a ``member_exit`` action), whoever or whatever ended it. ``Popen.wait`` is safe from
two threads: the watcher holds the Popen's waitpid lock while it blocks, and a ``stop``/``kill``
waiting beside it returns as soon as the watcher has reaped the process; both then join the watcher,
so the exit is recorded before they return.
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
from typing import Any, Literal

from ..children import child_env, describe_exit, die_with_parent, group_pids, signal_state
from ..errors import WaitTimeout
from ..history.events import ClientError
from ..history.writer import read_events
from ..members.config import MemberConfig
from ..members.launch import Launch, member_launch
from ..members.runtime import STACKS_SIGNAL, STALL_SIGNAL, UNSTALL_SIGNAL
from ..waits import wait_until
from .exits import ExitBook, ExitCallback, ExitCause

log = logging.getLogger(__name__)

ProcessState = Literal["running", "paused", "stopped", "killed", "exited"]
WATCHER_JOIN_S = 5.0  # how long a stop/kill waits for the exit to be recorded (a write to the harness log)
GROUP_END_TIMEOUT_S = 5.0  # how long a kill waits for the rest of the process group (a Java member's JVM) to end
STACKS_GRACE_S = 0.5  # between the stacks signal and the SIGKILL of a member that did not stop: the dump is ms


def wait_for_stacks(popen: subprocess.Popen) -> None:
    """The grace a process asked for its stacks gets to write them (or to die of the signal) before its SIGKILL."""
    try:
        popen.wait(timeout=STACKS_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


def last_client_error(history_path: Path) -> str | None:
    """The last ``error`` event in a member's history, as 'CODE: message (xN)': a member that never joins says why
    here (e.g. INCONSISTENT_GROUP_PROTOCOL beside members of another assignor), where a wait's diagnostics show it."""
    try:
        errors = [f"{e.code}: {e.message}" for e in read_events(history_path) if isinstance(e, ClientError)]
    except OSError:
        return None
    if not errors:
        return None
    times = errors.count(errors[-1])
    return errors[-1] + (f" (x{times})" if times > 1 else "")


@dataclass
class MemberProcess:
    config: MemberConfig
    config_path: Path
    popen: subprocess.Popen | None = None
    state: ProcessState = "stopped"
    exit_code: int | None = field(default=None)
    on_exit: ExitCallback | None = field(default=None, repr=False)
    # Its own group id (``testbed.faults.network.member_gid``) when the run may cut it off the network: iptables
    # matches its packets by it. Still root, so it reads and writes what any member does.
    gid: int | None = None
    _exits: ExitBook = field(init=False, repr=False)
    _watcher: threading.Thread | None = field(default=None, repr=False)

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
        return self.popen.pid if self.popen else None

    @property
    def node_name(self) -> None:
        """On this machine."""
        return None

    @property
    def network_rules(self) -> None:
        """This machine's iptables."""
        return None

    @property
    def host(self) -> None:
        """A process of its own: no host shared with other members."""
        return None

    def cohosted(self) -> list[MemberProcess]:
        """The live members a signal to its process reaches: itself alone."""
        return [self]

    def launch(self) -> Launch:
        return member_launch(self.config, self.config_path)

    def start(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config.model_dump(mode="json")))
        log = self.config.log_path
        out = log.open("ab") if log else subprocess.DEVNULL
        launch = self.launch()
        try:
            # Its own process group, so pause and kill reach a Java runner's JVM and a program's children too.
            self.popen = subprocess.Popen(launch.command, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=child_env(**launch.env), cwd=launch.cwd,
                                          group=self.gid, extra_groups=[] if self.gid is not None else None,
                                          preexec_fn=die_with_parent(own_group=True))
        finally:
            if log:
                out.close()
        self.state = "running"
        self._watcher = threading.Thread(target=self._watch, args=(self.popen,), daemon=True,
                                         name=f"exit-watch-{self.member_id}")
        self._watcher.start()

    def _watch(self, popen: subprocess.Popen) -> None:
        """Block until the process ends, then record how (the watcher thread's whole life)."""
        returncode = popen.wait()
        detail = self._exits.record(returncode, popen.pid)
        self.exit_code = returncode
        if detail is not None and detail["cause"] == "exited" and self.state in ("running", "paused"):
            self.state = "exited"
        self._exits.announce(self)

    @property
    def ended_how(self) -> str | None:
        """How the process ended, in words; None while it runs (or before it started)."""
        if self.popen is None or self.popen.returncode is None:
            return None
        return describe_exit(self.popen.returncode)

    def log_tail(self, lines: int) -> list[str]:
        """The last ``lines`` lines of the runner's (and for Java, the JVM's) output."""
        return output_tail(self.config.log_path, lines)

    def wait_exit_recorded(self, timeout_s: float = WATCHER_JOIN_S) -> bool:
        """Wait until the watcher has recorded the exit (True), or ``timeout_s`` passed / nothing to wait for."""
        watcher = self._watcher
        if watcher is None or watcher is threading.current_thread():
            return self.exit_info is not None
        watcher.join(timeout_s)
        return not watcher.is_alive()

    def alive(self) -> bool:
        if self.popen is None or self.popen.poll() is not None:
            if self.popen is not None and self.state in ("running", "paused"):
                self.state, self.exit_code = "exited", self.popen.returncode
            return False
        return True

    def _signal_group(self, sig: signal.Signals) -> None:
        if self.popen is not None and self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, sig)
            except ProcessLookupError:
                pass

    def request_stop(self) -> None:
        """Ask the runner to close the consumer and leave (SIGTERM), without waiting; asked once, however often
        called: a second SIGTERM adds nothing."""
        if self.alive():
            if self.state == "paused":
                self._signal_group(signal.SIGCONT)
                self.state = "running"
            if not self._exits.stop_requested:
                self._exits.ask_stop()
                self.popen.send_signal(signal.SIGTERM)

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """Clean stop: SIGTERM to the runner (it closes the consumer and leaves); SIGKILL if it hangs."""
        if not self.alive():
            return self.exit_code
        self.request_stop()
        try:
            self.exit_code = self.popen.wait(timeout=timeout_s)
            self.state = "stopped"
        except subprocess.TimeoutExpired:
            log.warning("member %s did not stop within %.0f s of its SIGTERM: %s", self.member_id, timeout_s,
                        signal_state(self.popen.pid))
            self._ask_stacks()
            self.kill(cause="stop_timeout")
        self.wait_exit_recorded()
        return self.exit_code

    def _ask_stacks(self) -> None:
        """A member that did not stop in time writes its threads' stacks to its log before the SIGKILL: the
        evidence of what it hung in (``members.runtime.STACKS_SIGNAL``)."""
        self._exits.ask_kill("stop_timeout")  # a program that does not handle the signal dies of it: same cause
        self._signal_group(STACKS_SIGNAL)
        wait_for_stacks(self.popen)

    def kill(self, cause: ExitCause = "killed") -> None:
        """SIGKILL to the whole process group; returns once the process is reaped and its exit recorded."""
        if self.popen is not None and self.popen.returncode is None:  # not yet reaped: this kill may end it
            self._exits.ask_kill(cause)
        self._signal_group(signal.SIGKILL)
        if self.popen is not None:
            self.exit_code = self.popen.wait()
            self.wait_exit_recorded()
            wait_group_ended(self.popen.pid, f"member {self.member_id}")
        self.state = "killed"

    def pause(self) -> None:
        self._signal_group(signal.SIGSTOP)
        self.state = "paused"

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)
        self.state = "running"

    def stall(self, on: bool) -> None:
        """Start or end a stall of the runner's poll loop (``members.runtime.PollStall``): the runner only,
        whose handlers exist once it wrote ``started``."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.send_signal(STALL_SIGNAL if on else UNSTALL_SIGNAL)


def output_tail(path: Path | None, lines: int) -> list[str]:
    """The last ``lines`` lines of a member's output file; none when it has none (yet)."""
    if path is None or not path.exists():
        return []
    return path.read_text(errors="replace").splitlines()[-lines:]


def wait_group_ended(pgid: int, owner: str) -> None:
    """Wait until every process of the group ``pgid`` is gone or a zombie: a JVM of many threads takes a moment
    to die after SIGKILL, and a kill must not return while any of the member still runs."""

    try:
        wait_until(lambda: not group_pids(pgid), timeout_s=GROUP_END_TIMEOUT_S, interval_s=0.02,
                   what=f"every process of {owner} (process group {pgid}) to end")
    except WaitTimeout as exc:
        log.warning("%s", exc)
