"""One member process: started from a MemberConfig, signalled, and never outliving the harness."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..members.config import MemberConfig
from ..members.envs import python_for

RUNNER_MODULES = {
    "confluent-kafka": "testbed.members.confluent",
    "kafka-python": "testbed.members.kafka_python",
    "java": "testbed.members.java",
}
ProcessState = Literal["running", "paused", "stopped", "killed", "exited"]
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _die_with_harness() -> None:
    """Runs in the child before exec: the kernel SIGKILLs it if the harness dies, even by SIGKILL."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setpgrp()  # its own process group, so pause and kill reach a Java runner's JVM too


@dataclass
class MemberProcess:
    config: MemberConfig
    config_path: Path
    popen: subprocess.Popen | None = None
    state: ProcessState = "stopped"
    exit_code: int | None = field(default=None)

    @property
    def member_id(self) -> str:
        return self.config.member_id

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def command(self) -> list[str]:
        spec = self.config.spec
        # The Java runner is a Python wrapper around the JVM; it runs in the project's own interpreter.
        python = sys.executable if spec.client == "java" else python_for(spec.client, spec.client_version)
        return [str(python), "-m", RUNNER_MODULES[spec.client], "--config", str(self.config_path)]

    def start(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config.model_dump(mode="json")))
        log = self.config.log_path
        out = log.open("ab") if log else subprocess.DEVNULL
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "PYTHONUNBUFFERED": "1"}
        try:
            self.popen = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_harness)
        finally:
            if log:
                out.close()
        self.state = "running"

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
        """Ask the runner to close the consumer and leave (SIGTERM), without waiting."""
        if self.alive():
            if self.state == "paused":
                self._signal_group(signal.SIGCONT)
                self.state = "running"
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
            self.kill()
        return self.exit_code

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        if self.popen is not None:
            self.exit_code = self.popen.wait()
        self.state = "killed"

    def pause(self) -> None:
        self._signal_group(signal.SIGSTOP)
        self.state = "paused"

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)
        self.state = "running"
