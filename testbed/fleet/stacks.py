"""Where a live member's threads stand, asked while it runs: a wait that timed out says what a stuck member waits
on, not only that it waits. The stacks signal (``members.runtime.STACKS_SIGNAL``, SIGQUIT) makes testbed's runners
and a JVM write every thread's stack to the member's log and carry on; it goes to the member's process group only
when every process of it catches the signal, since any other would die of it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import psutil

from ..children import catches, group_pids
from ..errors import WaitTimeout
from ..members.java.thread_dump import dump_reader
from ..members.python_stacks import PythonDumpReader
from ..members.runtime import STACKS_SIGNAL
from ..waits import wait_until
from .member import Member

DUMP_WAIT_S = 3.0  # a JVM writes its dump in milliseconds; its runner forwards it line by line to the log
STACKS_AT_MOST = 3  # members a wait's diagnostics ask for their stacks: each ask may take up to DUMP_WAIT_S
# A JVM client's threads worth a line: the application's and the client's own (the classic heartbeat thread, the
# consumer protocol's background thread, a Streams thread); the JVM's housekeeping threads say nothing here.
_CLIENT_THREADS = re.compile(r"^main$|kafka|consumer|heartbeat|StreamThread", re.IGNORECASE)


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # nothing written yet
        return 0


def _log_since(path: Path, offset: int) -> list[str]:
    with path.open("rb") as f:
        f.seek(offset)
        return f.read().decode(errors="replace").splitlines()


def stacks_now(member: Member, read: Callable[[list[str]], list[str] | None]) -> list[str] | str:
    """Ask a live member of this machine, in a process of its own, for its stacks without ending it, and return
    what ``read`` makes of the log lines written since the ask (None: not complete yet); else a line saying why
    there are none."""
    path, pid = member.config.log_path, member.pid
    if path is None or pid is None or member.node_name is not None or member.host is not None:
        return "no stacks: not a process of its own on this machine"
    if not member.alive():
        return "no stacks: its process is gone"
    if uncaught := [p for p in group_pids(pid) if not catches(p, STACKS_SIGNAL)]:
        if uncaught == [pid]:
            return f"no stacks: its process does not catch {STACKS_SIGNAL.name} (it would end it)"
        return (f"no stacks: processes {', '.join(map(str, uncaught))} of its group do not catch "
                f"{STACKS_SIGNAL.name} (it would end them)")
    offset = _log_size(path)
    try:
        os.killpg(pid, STACKS_SIGNAL)
    except ProcessLookupError:
        return "no stacks: its process is gone"
    try:
        return wait_until(lambda: read(_log_since(path, offset)), timeout_s=DUMP_WAIT_S, interval_s=0.1,
                          what=f"{member.member_id}'s thread dump in {path}")
    except WaitTimeout:
        return f"no stacks: no complete thread dump in its log within {DUMP_WAIT_S:.0f} s"


def _runs_jvm(pid: int) -> bool:
    for p in group_pids(pid):
        try:
            if psutil.Process(p).name() == "java":
                return True
        except psutil.Error:  # ended meanwhile
            continue
    return False


jvm_client_threads = dump_reader(_CLIENT_THREADS, "client thread")


def indented(stacks: list[str] | str) -> list[str]:
    """``stacks_now``'s answer as lines under a member's line in a wait's diagnostics."""
    return [f"    {line}" for line in ([stacks] if isinstance(stacks, str) else stacks)]


def client_stacks(member: Member) -> list[str] | str:
    """Where a live member's client threads stand, a thread dump asked now: a JVM's main and Kafka threads when its
    process group runs a JVM (its runner's own Python stacks say nothing then), else every Python thread."""
    local = member.pid is not None and member.node_name is None and member.host is None
    return stacks_now(member, jvm_client_threads if local and _runs_jvm(member.pid) else PythonDumpReader())
