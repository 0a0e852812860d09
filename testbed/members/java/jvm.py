"""The JVM under a Java runner: started with its stderr in the member's log and dying with the runner, signals
forwarded, and the whole read loop of a program that prints its events as JSON lines (testbed's share member and
Streams application, Kafka's VerifiableConsumer), each program's lines written by a ``LineWriter`` of its own.

The JVM shares the runner's process group, so SIGKILL, SIGSTOP and the stacks signal (SIGQUIT: its thread dump,
which it prints on stdout and the read loop passes to the log) sent to the group reach it; SIGTERM and SIGINT
to the runner are forwarded to it as SIGTERM, which each program answers with its clean shutdown.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ...children import die_with_parent
from ...run.layout import RunDir
from ..client_settings import properties_text
from ..config import MemberConfig
from ..runtime import MemberHistory


def run_properties_path(config: MemberConfig) -> Path | None:
    """In a run, where a Java member's properties go: ``configs/<member>.properties`` beside its config, kept with the
    run (what the JVM ran with) and never left in the temporary directory by a runner that is killed; None outside."""
    if config.run_dir is None:
        return None
    path = RunDir(config.run_dir).configs / f"{config.member_id}.properties"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def properties_file(config: MemberConfig, props: dict[str, str]) -> Iterator[Path]:
    """The member's settings as the JVM reads them (a Java properties file): ``run_properties_path`` in a run,
    outside one beside the member's history (``<member>.properties``): kept with what the JVM wrote, never left in
    the temporary directory by a runner that is killed."""
    path = run_properties_path(config) or config.history_path.parent / f"{config.member_id}.properties"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(properties_text(props))
    yield path


def start_jvm(cmd: list[str], log_path: Path | None) -> subprocess.Popen[bytes]:
    """The JVM, its stdout piped to the runner, its stderr appended to ``log_path`` (None: the runner's)."""
    stderr = open(log_path, "ab") if log_path else None
    try:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, preexec_fn=die_with_parent())
    finally:
        if stderr is not None:
            stderr.close()


def forward_stop(jvm: subprocess.Popen[bytes], on_stop: Callable[[], None] | None = None) -> None:
    """SIGTERM and SIGINT to the runner: ``on_stop``, then SIGTERM to the JVM if it still runs."""

    def _forward(signum: int, _frame: object) -> None:
        if on_stop is not None:
            on_stop()
        if jvm.poll() is None:
            jvm.send_signal(signal.SIGTERM)

    signal.signal(signal.SIGTERM, _forward)
    signal.signal(signal.SIGINT, _forward)


class LineWriter:
    """Writes a member's history from its JVM's JSON lines (``{"name": ..., "timestamp": ms, ...}``): ``started``
    once, before anything else (at ``startup_complete``, or at the first other line), ``client_error`` as
    ``error`` (a fatal one makes the stop an error), ``shutdown_complete`` as ``stopped``; every other line goes
    to ``event``."""

    def __init__(self, config: MemberConfig, jvm_pid: int, stop_reason: str = "clean") -> None:
        self.config = config
        self.history = MemberHistory(config)
        self.jvm_pid = jvm_pid
        self.started = False
        self.stopped = False  # the JVM's shutdown_complete was written as ``stopped``
        self.stop_reason = stop_reason

    def write_started(self, ts: int | None = None) -> None:
        if not self.started:
            self.started_event(ts)
            self.started = True

    def stopping(self) -> None:
        """The runner was asked to stop (the JVM gets its SIGTERM next): the stop to come is a clean one."""
        self.stop_reason = "clean"

    def take(self, line: str) -> bool:
        """One line of the JVM's stdout; False when it is not the program's (a JVM's thread dump, a warning)."""
        try:
            obj = json.loads(line) if line.startswith("{") else None
        except ValueError:
            return False
        if not isinstance(obj, dict):
            return False
        self.line(obj)
        return True

    def line(self, obj: dict[str, Any]) -> None:
        name, ts = obj.get("name"), obj.get("timestamp")
        if name == "startup_complete":
            self.write_started(ts)
            return
        self.write_started()
        if name == "client_error":
            fatal = bool(obj.get("fatal"))
            self.history.error(str(obj.get("code")), str(obj.get("message")), fatal=fatal, ts_ms=ts)
            if fatal:
                self.stop_reason = "error"
        elif name == "shutdown_complete":
            self.history.stopped(self.stop_reason, ts_ms=ts)
            self.stopped = True
        else:
            self.event(str(name), obj, ts)

    def started_event(self, ts: int | None) -> None:
        raise NotImplementedError

    def event(self, name: str, obj: dict[str, Any], ts: int | None) -> None:
        """A line of the program's own kind; one it does not know is left out."""


def drive_json_lines(config: MemberConfig, cmd: list[str], make_writer: Callable[[int], LineWriter], what: str) -> int:
    """Run ``cmd`` and write each JSON line it prints through ``make_writer(jvm pid)``; a JVM that ends without
    its ``shutdown_complete`` leaves a fatal ``JVM_EXIT`` error naming ``what`` and its last other output. The
    runner's exit code: 0 after a clean stop."""
    jvm = start_jvm(cmd, config.log_path)
    writer = make_writer(jvm.pid)
    forward_stop(jvm, writer.stopping)
    unparsed: deque[str] = deque(maxlen=5)
    assert jvm.stdout is not None
    for raw in jvm.stdout:
        line = raw.decode(errors="replace").strip()
        if not writer.take(line) and line:
            unparsed.append(line)
            print(line, file=sys.stderr)  # the member's log: a JVM's thread dump (STACKS_SIGNAL) among them
    code = jvm.wait()
    writer.write_started()
    if not writer.stopped:
        # The JVM ended without shutdown_complete: a crash, a kill, or a refused configuration.
        detail = f"{what} exited with {code} before shutdown_complete"
        if unparsed:
            detail += "; last output: " + " | ".join(unparsed)
        writer.history.error("JVM_EXIT", detail, fatal=True)
        writer.history.stopped("error")
    writer.history.close()
    return 0 if writer.stopped and writer.stop_reason != "error" else 1


__all__ = ["LineWriter", "drive_json_lines", "forward_stop", "start_jvm"]
