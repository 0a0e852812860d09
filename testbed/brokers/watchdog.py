"""A watchdog that reaps what its owner leaves when it dies: our own Ryuk (testcontainers' reaper, whose
image cannot be pulled here).

Every member and Locust process dies with the harness through the parent-death signal
(``testbed.children``), but the brokers run in containers the Docker engine keeps, on volumes it keeps.
Without this watchdog a ``kill -9`` of a run leaves them until the next cluster start or ``testbed clean``.

``Watchdog.start()`` (the cluster's start, before its first volume) starts ``python -m
testbed.brokers.watchdog``: a process of its own session, started *without* the parent-death signal
(it must outlive its owner to clean up after it), which holds the read end of a pipe whose only write end
stays in the owner. However the owner ends, ``kill -9`` included, the kernel closes that write end and the
watchdog reads end-of-file, also when the owner died before the watchdog got that far: it holds the read end
from its first instruction, so the owner need not wait for it (``Watchdog.ready``, once the brokers are up,
confirms that it started: its Python and the Docker client's import take about 0.3 s, spent beside the
brokers' start):

- the owner wrote ``RELEASE`` first (``Watchdog.release``, the cluster's close, after removing its
  containers and volumes itself): the watchdog exits at once, touching nothing;
- else the owner died: once it is gone (a zombie counts as gone) the watchdog reaps whatever carries its
  owner mark (``reaper.reap_leftovers(owner_pid=...)``: its processes that escaped the parent-death
  signal, its containers and their data volumes, and network cuts of owners that are gone), writes what it
  removed to its log and exits.

It never reaps a live owner's things: an end-of-file from an owner that still runs (it closed the pipe
without releasing) makes it wait for that owner's end. It carries no owner mark itself, so another run's
reaping never takes it for a leftover; ``REAP_DEADLINE_S`` bounds a reaping that hangs on the engine.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..children import OWNER_ENV, is_alive, owner_identity, parse_owner_mark
from ..errors import TestbedError
from ..waits import file_tail

log = logging.getLogger(__name__)

RELEASE = b"release\n"
READY = "ready"
READY_TIMEOUT_S = 60.0  # a loaded 2-core machine takes seconds to start a Python that imports docker
EXIT_TIMEOUT_S = 10.0
OWNER_POLL_S = 0.2
REAP_DEADLINE_S = 300  # the engine answers a removal in seconds; a hung one must not keep a watchdog forever

Reap = Callable[[int], list[str]]


class WatchdogError(TestbedError):
    """The watchdog process did not start."""


@dataclass
class Watchdog:
    """The owner's side: the watchdog process and the pipe's write end, held by this process only."""

    process: subprocess.Popen[str]
    write_end: int
    log_path: Path

    @classmethod
    def start(cls, log_path: Path) -> "Watchdog":
        """A watchdog of this process, started (``ready`` confirms it said so); its output goes to ``log_path``
        (appended)."""
        # os.pipe's ends are not inheritable: no other child (member, Locust, a program) holds the write end,
        # which would keep the pipe open after this process died.
        read_end, write_end = os.pipe()
        pid, started = owner_identity()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != OWNER_ENV}  # not a leftover of anyone: see the docstring
        try:
            with log_path.open("a") as out:
                process = subprocess.Popen(
                    [sys.executable, "-m", "testbed.brokers.watchdog", "--fd", str(read_end), "--owner", f"{pid}:{started}"],
                    pass_fds=(read_end,), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=out, text=True,
                    env=env, start_new_session=True)  # its own session: a Ctrl-C at the terminal is the owner's
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        return cls(process, write_end, log_path)

    def ready(self) -> None:
        """Wait until the watchdog said it is ready (once, after ``start``); a watchdog that did not start is a
        WatchdogError (the owner's close then releases it with whatever it started)."""
        stdout = self.process.stdout
        assert stdout is not None
        ready, _, _ = select.select([stdout], [], [], READY_TIMEOUT_S)
        line = stdout.readline().strip() if ready else ""
        stdout.close()  # it writes nothing more there
        if line != READY:
            state = "still starting" if self.process.poll() is None else f"exited ({self.process.returncode})"
            raise WatchdogError(f"the watchdog process did not start ({state} after {READY_TIMEOUT_S:.0f} s); "
                                f"its log {self.log_path} ends:\n{file_tail(self.log_path)}")

    def release(self, *, everything_removed: bool = True) -> None:
        """The owner's close. With ``everything_removed`` (its containers and volumes are gone) the watchdog exits
        without reaping; else it stays and reaps what is left once the owner has ended (never a live owner's)."""
        if self.write_end >= 0:
            try:
                if everything_removed:
                    os.write(self.write_end, RELEASE)
            except OSError:  # the watchdog is gone already: nothing to tell
                pass
            os.close(self.write_end)
            self.write_end = -1
        if self.process.stdout is not None:  # never read when the owner's start failed before ``ready``
            self.process.stdout.close()
        if not everything_removed:
            return
        try:
            self.process.wait(timeout=EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            log.error("the watchdog (pid %s) did not exit when released; killed", self.process.pid)


def watch(read_end: int, owner: tuple[int, str], reap: Reap, poll_s: float = OWNER_POLL_S) -> list[str] | None:
    """Block until the pipe's write end closes; then None if the owner released it, else wait until the
    owner is gone and return what ``reap(owner_pid)`` removed."""
    said = b""
    while chunk := os.read(read_end, 64):
        said += chunk
    if RELEASE in said:
        return None
    while is_alive(*owner):  # the pipe closed, but its owner still runs: its things are not ours yet
        time.sleep(poll_s)
    return reap(owner[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Reap a testbed owner's containers, volumes and processes "
                                                 "when it dies (started by testbed.brokers.cluster).")
    parser.add_argument("--fd", type=int, required=True, help="the read end of the owner's pipe")
    parser.add_argument("--owner", required=True, help="the owner's mark, <pid>:<start time>")
    args = parser.parse_args(argv)
    owner = parse_owner_mark(args.owner)
    if owner is None:
        parser.error(f"--owner must be <pid>:<start time>, got {args.owner!r}")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is for the owner, who then releases us
    from .reaper import reap_leftovers  # the Docker client: imported before saying ready, so a broken one shows

    try:
        print(READY, flush=True)
    except BrokenPipeError:  # an owner that died before reading it; the pipe's end-of-file below tells the rest
        pass
    devnull = os.open(os.devnull, os.O_WRONLY)  # nothing reads stdout after that: no later write may fail
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    reaped = watch(args.fd, owner, lambda pid: _reap_within_deadline(reap_leftovers, pid))
    if reaped is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        print(f"{stamp} watchdog: owner {args.owner} died; reaped: {', '.join(reaped) or 'nothing'}",
              file=sys.stderr, flush=True)
    return 0


def _reap_within_deadline(reap: Callable[..., list[str]], owner_pid: int) -> list[str]:
    signal.alarm(REAP_DEADLINE_S)  # its default action ends this process
    try:
        return reap(owner_pid=owner_pid)
    finally:
        signal.alarm(0)


if __name__ == "__main__":
    sys.exit(main())
