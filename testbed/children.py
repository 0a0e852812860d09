"""Child processes that never outlive the harness process that owns them.

Two nets. The kernel's: every child is started with ``PR_SET_PDEATHSIG=SIGKILL``, so it dies the
moment its parent does, even by SIGKILL. The mark's: every child's environment carries
``TESTBED_OWNER=<pid>:<start time>`` of the owning harness (inherited by grandchildren, e.g. a Java
member's JVM), the same owner identity the containers carry as labels, so that ``testbed clean``
and the start of the next run find and end whatever slipped through (see ``testbed.brokers.reaper``).

Linux delivers the parent-death signal when the *thread* that started the child ends: start
children from a thread that lives as long as they should (the runner's main thread does).

One child is meant to outlive its owner, briefly: the cluster's watchdog (``testbed.brokers.watchdog``), which
removes the owner's containers and volumes when the owner dies; it starts without either net, on purpose.
"""

from __future__ import annotations

import ctypes
import os
import random
import signal
import socket
from collections.abc import Callable, Mapping
from pathlib import Path

import psutil

OWNER_ENV = "TESTBED_OWNER"
# The module a load's Locust process runs (``python -m``): Locust, its producer made first (testbed.load). Its name
# tells the load's processes from the members' (testbed.host.roles) wherever they run (testbed.placement).
LOCUST_MAIN = "testbed.load.locust_main"
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL("libc.so.6", use_errno=True)  # loaded here, not in the forked child (no dlopen there)
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def owner_identity(process: psutil.Process | None = None) -> tuple[int, str]:
    """A process's pid and start time: together they name it even after its pid is reused.

    The start time is counted from the machine's boot (the kernel's clock ticks in ``/proc/<pid>/stat``), not on
    the wall clock: a step of the wall clock (NTP, a virtual machine restored from a snapshot) moves every
    process's wall-clock start time (``psutil``'s ``create_time`` is the boot time on the wall clock plus those
    ticks), and a live owner's containers were taken for leftovers: a CI run's session brokers were removed by
    the other worker's reaper after a 40 s step. Raises ``psutil.NoSuchProcess`` for a process that is gone."""
    pid = (process or psutil.Process()).pid
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        raise psutil.NoSuchProcess(pid) from None
    ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22, starttime; the name before it may hold spaces
    return pid, f"{ticks / _CLOCK_TICKS:.2f}s"


def is_alive(pid: int, started: str | None) -> bool:
    """Whether the process ``pid`` that started at ``started`` (``owner_identity``) still runs.

    A zombie does not: it is dead, waiting only for its parent to collect its exit status (a ``kill -9``'d
    run stays one until its shell or test collects it), and its things are leftovers already.
    """
    try:
        proc = psutil.Process(pid)
        return owner_identity(proc)[1] == started and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def owner_mark() -> str:
    pid, started = owner_identity()
    return f"{pid}:{started}"


def parse_owner_mark(mark: str) -> tuple[int, str] | None:
    pid, sep, started = mark.partition(":")
    return (int(pid), started) if sep and pid.isdigit() else None


def child_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment of a child: ``base`` (default: this process's), ``extra``, and this process's owner mark."""
    return {**(os.environ if base is None else base), **extra, OWNER_ENV: owner_mark()}


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIG{signum}"


def _proc_status(pid: int) -> dict[str, str] | None:
    try:
        return dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                    if ":\t" in line)
    except OSError:
        return None


def _signals(status: dict[str, str], field: str) -> set[int]:
    mask = int(status.get(field, "0"), 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def signal_state(pid: int) -> str:
    """A process's run state and the signals pending, blocked, ignored and caught (``/proc/<pid>/status``), named:
    what explains a process that did not act on a signal sent to it ("unknown" once it is gone)."""
    if (status := _proc_status(pid)) is None:
        return "unknown (gone)"
    parts = [f"state {status.get('State', '?').strip()}"]
    for field, label in (("SigPnd", "pending"), ("ShdPnd", "pending to the process"), ("SigBlk", "blocked"),
                         ("SigIgn", "ignored"), ("SigCgt", "caught")):
        parts.append(f"{label} {','.join(signal_name(n) for n in sorted(_signals(status, field))) or '-'}")
    return "; ".join(parts)


def group_pids(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``, zombies left out (a runner and its JVM, a program and its
    children)."""
    pids = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                pids.append(proc.pid)
        except (OSError, psutil.Error):  # ended meanwhile
            continue
    return sorted(pids)


def catches(pid: int, sig: signal.Signals) -> bool:
    """Whether the process has a handler for ``sig`` (so it lives through it); False once it is gone."""
    status = _proc_status(pid)
    return status is not None and int(sig) in _signals(status, "SigCgt")


def describe_exit(returncode: int) -> str:
    """A Popen return code in words: negative means killed by that signal."""
    return f"killed by {signal_name(-returncode)}" if returncode < 0 else f"exit code {returncode}"


def die_with_parent(*, own_group: bool = False) -> Callable[[], None]:
    """A ``preexec_fn``: the kernel SIGKILLs the child when this process dies, even by SIGKILL.

    With ``own_group`` the child leads its own process group, so signalling the group reaches its
    own children too (a Java member's JVM).
    """
    parent = os.getpid()

    def preexec() -> None:  # runs in the forked child, before exec: no imports, no allocation-heavy work
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        # A harness started in the background by a non-interactive shell has SIGINT ignored, and an ignored
        # signal stays ignored across exec: the child's Python would then never raise KeyboardInterrupt,
        # and Locust and the runners stop on SIGINT/SIGTERM.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        # A signal blocked in the forking thread stays blocked across exec too: a member would never see its stop.
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        if os.getppid() != parent:  # the parent died between fork and prctl: the signal will never come
            os.kill(os.getpid(), signal.SIGKILL)
        if own_group:
            os.setpgrp()

    return preexec


def terminate_as_interrupt() -> None:
    """SIGTERM unwinds like Ctrl-C, so every context manager cleans up what it started (a CLI's or a
    benchmark's main thread calls it first)."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
    # Started in the background by a non-interactive shell, Python leaves SIGINT ignored: Ctrl-C must still stop.
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Ports a child binds a moment later come from below the kernel's ephemeral range (ip_local_port_range), which it hands
# to every outgoing connection meanwhile: a port that bind(0) found free could be any client's local port before the
# child bound it (a client of a broker that started first connects from the same loopback address). Above Ray's
# default worker ports (10002-19999), whose nodes run beside the brokers in placed runs.
CHILD_PORTS = range(20_000, 32_768)
EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_ports() -> range:
    try:
        low, high = (int(v) for v in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        low, high = 32_768, 60_999  # Linux's default
    return range(low, high + 1)


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` now, for child processes to listen on (brokers, Spark): from
    ``CHILD_PORTS`` outside the ephemeral range, at random (processes side by side rarely pick the same), each one
    bound once to see that it is free; from the kernel's own choice (bind to port 0) when no such port is left."""
    ephemeral = ephemeral_ports()
    candidates = [p for p in CHILD_PORTS if p not in ephemeral]
    random.shuffle(candidates)
    ports: list[int] = []
    for port in candidates:
        if len(ports) == count:
            return ports
        with socket.socket() as s:
            try:
                s.bind((host, port))
            except OSError:  # in use (or in TIME_WAIT): the next
                continue
        ports.append(port)
    socks = []
    try:
        for _ in range(count - len(ports)):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return ports + [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()
