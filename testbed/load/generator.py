"""LoadGenerator: a service that runs Locust headless, as its own processes, and owns their lifecycle.

One Locust process (``workers=0``) or a master bound to 127.0.0.1 plus ``workers`` worker
processes (workers on other machines: the master binds to the address they reach it at, ``WorkerHosts``).
Each producing process writes its own ack log (``history/acks/<producer-id>.jsonl``);
Locust's CSV stats and history, HTML report and JSON stats go to the run's ``load/`` folder.

Started in two moves when the caller knows early that a load will come (a scenario's runner, once its brokers are
up): :meth:`spawn` starts the processes, which import Locust and create their producers (its producer id fetched)
and then wait at a gate; :meth:`start` opens the gate, and the load's first acknowledgement follows in tens of
milliseconds instead of the second a Locust process takes to start. :meth:`start` alone does both.

The load is bounded: Locust stops itself after ``duration_s`` (``--run-time``), and
:meth:`LoadGenerator.wait` stops it anyway at a deadline past that. :meth:`stop` asks Locust to
stop gracefully (SIGINT: users stop, deliveries drain, stats are written), then kills what is
still running after ``stop_timeout_s``. Leaving the context, also on an exception, stops it.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Protocol

from ..cache import pythonpath_with_testbed
from ..children import LOCUST_MAIN, child_env, describe_exit, die_with_parent
from ..errors import ConfigError, TestbedError, WaitTimeout
from ..history.events import Action, HarnessAction
from ..run.layout import RunDir
from ..service import Service
from ..waits import wait_until
from .spec import PARAMS_ENV, LoadSpec, ProducerProcessParams
from .summary import LoadSummary, summarize

log = logging.getLogger(__name__)

LOCUSTFILE = Path(__file__).with_name("locustfile.py")
ActionRecorder = Callable[[HarnessAction], None]


class LoadError(TestbedError):
    """A Locust process failed; the message carries the end of its log."""


class ProcessLike(Protocol):
    """What the load needs of a process: ``subprocess.Popen``'s, or one on another machine's."""

    pid: int | None
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, sig: int) -> None: ...

    def kill(self) -> None: ...


class WorkerHosts(Protocol):
    """Where the Locust workers run when not here (``testbed.placement``): each started there, its files (log, ack
    log, finished marker) brought into the run directory, and the finish request made there too."""

    def spawn(self, role: str, locust_args: list[str], env: dict[str, str], log_path: Path) -> ProcessLike:
        """``python -m testbed.load.locust_main <locust_args>`` there, in that machine's interpreter, with ``env``
        added to what the harness gives its children there; its output to ``log_path`` (of the run directory)."""
        ...

    def touch(self, path: Path) -> None: ...

    def where(self, role: str) -> str: ...

    def master_address(self) -> str:
        """Where the Locust master listens so that every worker there reaches it (loopback when they are all on this
        machine)."""
        ...


@dataclass
class LocustProcess:
    role: str  # "single", "master" or "worker-<i>"
    producer_index: int | None  # None for the master, which produces nothing
    popen: ProcessLike
    log_path: Path
    log_file: IO[bytes] | None  # None for a worker on another machine (its log comes over with its files)

    def tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        except OSError as exc:
            return f"(no log: {exc})"
        return "\n    ".join(text)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class LoadGenerator(Service):
    """``with LoadGenerator(run_dir, bootstrap_servers=..., topic=..., rate=500, duration_s=10) as load:``.

    Pass a :class:`LoadSpec` as ``spec`` or its fields as keywords.
    """

    def __init__(self, run_dir: RunDir, spec: LoadSpec | None = None, *, recorder: ActionRecorder | None = None,
                 worker_hosts: WorkerHosts | None = None, **spec_fields: Any) -> None:
        if spec is not None and spec_fields:
            raise ConfigError(f"give either spec or spec fields, not both (got fields {sorted(spec_fields)})")
        self.spec = spec if spec is not None else LoadSpec.parse(**spec_fields)
        self.run_dir = run_dir
        self.recorder = recorder
        self.worker_hosts = worker_hosts  # the workers elsewhere (a Ray cluster's nodes); None: here
        self.processes: list[LocustProcess] = []
        self._started_at: float | None = None
        self._end_recorded = False

    # ---- where things go ---------------------------------------------------------------------

    @property
    def csv_prefix(self) -> Path:
        return self.run_dir.locust_csv_prefix

    @property
    def html_report(self) -> Path:
        return self.run_dir.locust_report

    @property
    def json_stats(self) -> Path:
        return self.run_dir.locust_stats

    @property
    def ack_logs(self) -> dict[str, Path]:
        return {self.spec.producer_id(i): self.run_dir.ack_log(self.spec.producer_id(i))
                for i in range(self.spec.processes)}

    @property
    def start_gate(self) -> Path:
        """A file whose appearance lets spawned processes start their load (``spawn``, then ``start``)."""
        return self.run_dir.load / f"{self.spec.name}.start"

    @property
    def finish_request(self) -> Path:
        return self.run_dir.load / f"{self.spec.name}.finish-requested"

    def finished_marker(self, process_index: int) -> Path:
        return self.run_dir.load / f"{self.spec.producer_id(process_index)}.finished"

    @property
    def deadline_s(self) -> float:
        """Longest a load may take from start, after which wait() stops it."""
        return self.spec.startup_timeout_s + self.spec.duration_s + self.spec.stop_timeout_s

    # ---- lifecycle ---------------------------------------------------------------------------

    def spawn(self) -> None:
        """The Locust processes started and waiting at the gate that :meth:`start` opens: their Python, Locust and
        producers made meanwhile (they connect to the brokers, which must be up, but produce nothing)."""
        if self.processes:
            raise TestbedError("this LoadGenerator was already spawned or started; make a new one per load")
        self._spawn_all(gated=True)

    def start(self) -> None:
        """The load begins: the spawned processes' gate opened (or the processes started now), and recorded."""
        if self._started_at is not None:
            raise TestbedError("this LoadGenerator was already started; make a new one per load")
        if self.processes:
            self._touch_everywhere(self.start_gate)
        else:
            self._spawn_all(gated=False)
        self._started_at = time.monotonic()
        spec = self.spec
        placed = ({"nodes": {self.spec.producer_id(p.producer_index): self.worker_hosts.where(p.role)
                             for p in self.processes if p.role.startswith("worker") and p.producer_index is not None}}
                  if self.worker_hosts is not None else {})
        self._record(Action.LOAD_START, rate=spec.rate, users=spec.users, workers=spec.workers,
                     duration_s=spec.duration_s, topic=spec.topic, producers=sorted(self.ack_logs), **placed)

    def _spawn_all(self, gated: bool) -> None:
        self.run_dir.create()
        taken = [str(p) for p in [*self.ack_logs.values(), self.start_gate] if p.exists()]
        if taken:
            raise ConfigError(f"name must be unique per run: its files already exist ({', '.join(taken)}); "
                              f"give this load another name")
        spec = self.spec
        # Locust appends ".json" to --json-file itself.
        common = ["-f", str(LOCUSTFILE), "--exit-code-on-error", "0", "--loglevel", "INFO"]
        head = ["--headless", "-u", str(spec.users), "-r", str(spec.users), "-t", spec.locust_run_time_arg,
                "--csv", str(self.csv_prefix), "--csv-full-history", "--html", str(self.html_report),
                "--json-file", str(self.json_stats.with_suffix("")), "--only-summary"]
        gate = str(self.start_gate) if gated else None
        if spec.workers == 0:
            self._spawn("single", 0, common + head, produces=True, gate=gate)
        else:
            master = self.worker_hosts.master_address() if self.worker_hosts is not None else "127.0.0.1"
            port = free_port(master)
            self._spawn("master", 0, produces=False, gate=gate, args=common + head + [
                "--master", "--master-bind-host", master, "--master-bind-port", str(port),
                "--expect-workers", str(spec.workers), "--expect-workers-max-wait", str(int(spec.startup_timeout_s))])
            for i in range(spec.workers):
                self._spawn(f"worker-{i}", i, common + ["--worker", "--master-host", master,
                                                        "--master-port", str(port)], produces=True, gate=gate)

    def _spawn(self, role: str, process_index: int, args: list[str], produces: bool, gate: str | None) -> None:
        params = ProducerProcessParams(spec=self.spec, process_index=process_index,
                                       ack_log=str(self.run_dir.ack_log(self.spec.producer_id(process_index))),
                                       failure_log=str(self.run_dir.produce_failure_log(
                                           self.spec.producer_id(process_index))),
                                       finish_request=str(self.finish_request),
                                       finished_marker=str(self.finished_marker(process_index)), start_gate=gate)
        log_path = self.run_dir.locust_log(role)
        if self.worker_hosts is not None and role.startswith("worker"):
            remote = self.worker_hosts.spawn(role, args, {PARAMS_ENV: params.model_dump_json()}, log_path)
            self.processes.append(LocustProcess(role, process_index if produces else None, remote, log_path, None))
            return
        env = child_env(**{PARAMS_ENV: params.model_dump_json(),
                           "PYTHONPATH": pythonpath_with_testbed(os.environ.get("PYTHONPATH"))})
        cmd = [sys.executable, "-m", LOCUST_MAIN, *args]
        log.info("starting locust %s: %s", role, " ".join(cmd))
        log_file = log_path.open("ab")
        # Own session: a Ctrl-C in the caller's terminal must not reach Locust before stop() does.
        # Dies with the harness: a load left running would produce against the brokers for its whole duration.
        popen = subprocess.Popen(cmd, env=env, stdout=log_file, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent())
        self.processes.append(LocustProcess(role, process_index if produces else None, popen, log_path, log_file))

    @property
    def running(self) -> bool:
        return any(p.popen.poll() is None for p in self.processes)

    def wait(self, timeout_s: float | None = None) -> dict[str, int | None]:
        """Wait for Locust to end by itself (bounded by :attr:`deadline_s`); stop it past that.

        Returns each process's exit code; raises LoadError when one failed.
        """
        if self._started_at is None:
            raise TestbedError("wait() before start()")
        remaining = self._started_at + self.deadline_s - time.monotonic()
        limit = max(0.0, remaining if timeout_s is None else min(timeout_s, remaining))
        try:
            wait_until(lambda: not self.running, timeout_s=limit, what="Locust to finish its run",
                       diagnostics=self.diagnostics, interval_s=0.1)
        except TimeoutError:
            if timeout_s is not None and timeout_s < remaining:
                raise
            log.warning("Locust ran past its deadline (%.0fs); stopping it", self.deadline_s)
            self.stop()
        codes = self.exit_codes
        failed = {role: code for role, code in codes.items() if code not in (0, None)}
        if failed:
            raise LoadError(f"Locust processes failed: {failed}\n{self.diagnostics()}")
        return codes

    def stop(self) -> None:
        """Graceful stop, then SIGTERM, then SIGKILL, each after the stop timeout.

        Graceful is SIGINT, Locust's Ctrl-C: it stops the users (deliveries drain), writes the
        HTML report, JSON and CSV stats, and has the master quit its workers. (Locust's SIGTERM
        handler stops as cleanly but skips the HTML report.) Before that, the producing processes
        are asked to stop producing and drain, so Locust's final stats include every delivery.
        """
        self._finish_producing()
        main = [p for p in self.processes if not p.role.startswith("worker")]
        workers = [p for p in self.processes if p.role.startswith("worker")]
        # The master tells its workers to quit, and waits for their last stats; signal it first.
        for group in (main, workers):
            for p in group:
                if p.popen.poll() is None:
                    p.popen.send_signal(signal.SIGINT)
            self._wait_or_kill(group)
        self._record_end("stopped")

    def _touch_everywhere(self, path: Path) -> None:
        """A file of the run's load folder made here and on the nodes of workers placed elsewhere (a request to
        every process: the start gate, the finish request)."""
        path.touch()
        if self.worker_hosts is not None:
            self.worker_hosts.touch(path)

    def _finish_producing(self) -> None:
        producing = [p for p in self.processes if p.producer_index is not None and p.popen.poll() is None]
        if not producing:
            return
        self._touch_everywhere(self.finish_request)

        def finished(p: LocustProcess) -> bool:
            assert p.producer_index is not None
            never_produced = not self.run_dir.ack_log(self.spec.producer_id(p.producer_index)).exists()
            return p.popen.poll() is not None or never_produced or self.finished_marker(p.producer_index).exists()

        try:
            wait_until(lambda: all(finished(p) for p in producing), timeout_s=self.spec.stop_timeout_s,
                       what="the producers to stop and drain", diagnostics=self.diagnostics, interval_s=0.05)
        except WaitTimeout as exc:
            log.warning("stopping Locust without a full drain: %s", exc)

    def _wait_or_kill(self, procs: list[LocustProcess]) -> None:
        for escalation in (signal.SIGTERM, signal.SIGKILL, None):
            deadline = time.monotonic() + self.spec.stop_timeout_s
            late = []
            for p in procs:
                try:
                    p.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    late.append(p)
            if not late or escalation is None:
                return
            for p in late:
                log.warning("locust %s did not stop in %.0fs; sending %s\n    %s",
                            p.role, self.spec.stop_timeout_s, escalation.name, p.tail())
                p.popen.send_signal(escalation)

    def close(self) -> None:
        """Stop whatever still runs and close log files; each step runs even if another fails."""
        errors: list[str] = []
        if self._started_at is not None:  # one spawned and never started produced nothing: killed below, unrecorded
            if self.running:
                try:
                    self.stop()
                except Exception as exc:  # noqa: BLE001 - the kill below must still run
                    errors.append(f"stopping: {exc}")
            else:
                self._record_end("finished")
        for p in self.processes:
            try:
                if p.popen.poll() is None:
                    p.popen.kill()
                    p.popen.wait(timeout=10)
                if p.log_file is not None:
                    p.log_file.close()
            except Exception as exc:  # noqa: BLE001 - each process is cleaned up independently
                errors.append(f"{p.role}: {exc}")
        if errors:
            log.error("load teardown errors: %s", "; ".join(errors))

    # ---- results -----------------------------------------------------------------------------

    def ended_early(self) -> str | None:
        """Why a wait on this load cannot succeed any more: a Locust process that ended; None while all run."""
        ended = [p for p in self.processes if p.popen.poll() is not None]
        if not ended:
            return None
        return "\n".join(f"locust {p.role} (pid {p.popen.pid}) ended ({describe_exit(p.popen.returncode)}), "
                         f"log {p.log_path}:\n    {p.tail()}" for p in ended)

    @property
    def exit_codes(self) -> dict[str, int | None]:
        return {p.role: p.popen.poll() for p in self.processes}

    def summary(self) -> LoadSummary:
        """Target vs achieved rate and failures, from the saved ack logs and Locust's JSON stats."""
        return summarize(self.spec.rate, self.ack_logs, self.json_stats, self.spec.topic)

    def diagnostics(self) -> str:
        lines = []
        for p in self.processes:
            lines.append(f"locust {p.role} (pid {p.popen.pid}, exit {p.popen.poll()}), log {p.log_path}:\n    "
                         + p.tail())
        return "\n".join(lines)

    def _record_end(self, reason: str) -> None:
        if not self._end_recorded:
            self._end_recorded = True
            self._record(Action.LOAD_END, reason=reason, exit_codes=self.exit_codes)

    def _record(self, kind: Action, **detail: object) -> None:
        if self.recorder is not None:
            self.recorder(HarnessAction(kind=kind, target=self.spec.name, detail=detail))  # type: ignore[arg-type]
