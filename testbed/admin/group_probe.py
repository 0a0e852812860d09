"""Group descriptions from a child process, so that a crash inside librdkafka's admin client cannot take the
harness down with it.

With confluent-kafka 2.16.1, describing a group right after its coordinator's broker was SIGKILLed can
abort the describing process (``Assertion eonce->refcnt > 0 failed`` in
``rd_kafka_enq_once_del_source_return``: librdkafka #4605; docs/runner.md). The harness describes the group in every
``wait_stable``, every coordinator-targeted step and while waiting for a run's group coordinator (a shared
cluster's broker may still be coming back from the last run's faults), exactly when coordinator faults
happen, so it asks a child process instead: ``GroupProbe.describe`` sends the group id on the child's stdin and reads one JSON
line back. A child that dies, or does not answer in time, is replaced and the call raises ``ProbeError``,
which a wait counts as "not yet" like any other failed describe.

The child: ``python -m testbed.admin.group_probe <bootstrap servers>``, one line in, one line out.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from typing import IO, Any

from ..children import child_env, describe_exit, die_with_parent
from ..errors import TestbedError
from .kafka_admin import GroupView, KafkaAdmin, MemberView

START_TIMEOUT_S = 30.0
log = logging.getLogger(__name__)


class ProbeError(TestbedError):
    """The describe did not come back: the child failed, died or hung (it has been replaced)."""


def view_to_json(view: GroupView) -> dict[str, Any]:
    return {"group_id": view.group_id, "state": view.state, "assignor": view.assignor,
            "group_type": view.group_type, "coordinator": view.coordinator,
            "members": [{"member_id": m.member_id, "client_id": m.client_id, "instance_id": m.instance_id,
                         "partitions": sorted([t, p] for t, p in m.partitions)} for m in view.members]}


def view_from_json(data: dict[str, Any]) -> GroupView:
    members = tuple(MemberView(m["member_id"], m["client_id"], m["instance_id"],
                               frozenset((t, int(p)) for t, p in m["partitions"])) for m in data["members"])
    return GroupView(data["group_id"], data["state"], data["assignor"], data["group_type"], members,
                     data["coordinator"])


class GroupProbe:
    """``GroupProbe(bootstrap).describe(group_id)``; ``close()`` ends the child. Thread-safe."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.command = [sys.executable, "-m", "testbed.admin.group_probe", bootstrap_servers]
        self._proc: subprocess.Popen | None = None
        self._stderr: IO[bytes] | None = None  # a file, not a pipe: librdkafka's warnings must never block it
        self._lock = threading.Lock()
        self.restarts = 0  # children replaced after a death or a hang (diagnostics)

    def _child(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._stderr = tempfile.TemporaryFile()
            self._proc = subprocess.Popen(
                self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=child_env(),
                preexec_fn=die_with_parent(), text=True, bufsize=1)
        return self._proc

    def start(self) -> None:
        """Start the child now, from this thread: the kernel ends a child when the thread that started it
        ends (``testbed.children``), so the thread that owns the run should start it."""
        with self._lock:
            self._child()

    def describe(self, group_id: str, timeout_s: float = 10.0) -> GroupView:
        with self._lock:
            proc = self._child()
            try:
                proc.stdin.write(json.dumps({"group_id": group_id, "timeout_s": timeout_s}) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self._replace(f"could not ask the probe: {exc}")
            # A fresh child needs its imports first; then the describe has its own timeout.
            line = self._read_line(proc, timeout_s + START_TIMEOUT_S)
            answer = json.loads(line)
            if "error" in answer:
                raise ProbeError(answer["error"])
            return view_from_json(answer["view"])

    def _read_line(self, proc: subprocess.Popen, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._replace(f"no answer in {timeout_s:.0f} s")
            ready, _, _ = select.select([proc.stdout], [], [], left)
            if ready:
                line = proc.stdout.readline()
                if line:
                    return line
                proc.wait(timeout=5)
                self._replace(f"the probe process died ({describe_exit(proc.returncode)}): {self._stderr_tail()}")

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace").strip()[-500:]

    def _replace(self, why: str) -> None:
        self._kill()
        self.restarts += 1
        log.warning("group probe replaced: %s", why)
        raise ProbeError(f"group describe failed, probe replaced: {why}")

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc is not None:
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        with self._lock:
            self._kill()


def _serve(bootstrap_servers: str) -> None:
    admin = KafkaAdmin(bootstrap_servers)
    for line in sys.stdin:
        ask = json.loads(line)
        try:
            answer: dict[str, Any] = {"view": view_to_json(admin.describe_group(ask["group_id"], ask["timeout_s"]))}
        except Exception as exc:  # noqa: BLE001 - every failure is the caller's "not yet"
            answer = {"error": f"{type(exc).__name__}: {exc}"}
            admin.close()
            admin = KafkaAdmin(bootstrap_servers)  # after a coordinator error, a fresh client finds the new one
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _serve(sys.argv[1])
