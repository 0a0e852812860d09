"""The host sampler: a service that writes how saturated the machine is, a few times a second, into the run's
history (``history/host.jsonl``, one ``host_sample`` event per interval), from the run's start to its end.

Everything runs on one small host, so the host's own saturation is a cause of pauses like any fault; the
analysis reads these samples (``testbed.analysis.view.host``) and never asks the machine itself. The loop runs on
a daemon thread, wakes every ``interval_s`` and stops when the service closes (the runner's ``ExitStack``, also
on Ctrl-C) or after ``max_s`` at the latest, whichever comes first. A host that cannot be sampled (no /proc) is
said once in the log and leaves no file: its samples are unknown, never zero.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from ..history.events import HostSample, mono_now_ms, now_ms
from ..history.writer import HistoryWriter
from ..service import Service
from . import proc
from .roles import ROLES, ProcessRoles

log = logging.getLogger(__name__)

INTERVAL_S = 0.25  # 4 samples a second: a 1 s pause spans about four intervals
MAX_S = 24 * 3600.0  # no run lasts a day; a sampler left running by a bug still ends


class HostSampler(Service):
    """``with HostSampler(run_dir.host_log): ...`` samples the host while the block runs."""

    def __init__(self, path: Path, *, interval_s: float = INTERVAL_S, max_s: float = MAX_S,
                 harness_pid: int | None = None) -> None:
        self.path = path
        self.interval_s = interval_s
        self.max_s = max_s
        self.harness_pid = harness_pid
        self.samples = 0
        self.error: str | None = None  # why sampling stopped early, if it did
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._writer: HistoryWriter | None = None

    def start(self) -> None:
        if why := proc.available():
            log.warning("host samples are not recorded: %s", why)
            return
        self._writer = HistoryWriter(self.path)
        self._thread = threading.Thread(target=self._run, name="host-sampler", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5 * self.interval_s + 5)
            if self._thread.is_alive():
                log.warning("the host sampler did not stop within %.1f s", 5 * self.interval_s + 5)
            self._thread = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def _run(self) -> None:
        try:
            roles = ProcessRoles(self.harness_pid)
            roles.cpu_seconds()  # the baseline of every process's CPU time
            before = proc.read()
            cores = proc.cores()
            deadline = mono_now_ms() + int(self.max_s * 1000)
            while not self._stop.wait(self.interval_s) and mono_now_ms() < deadline:
                after = proc.read()
                used = roles.cpu_seconds()
                figures = proc.interval_figures(before, after)
                capacity_s = max(1e-9, (after.mono_ns - before.mono_ns) / 1e9 * cores)
                by_role = {f"{role}_cpu_pct": round(100.0 * used[role] / capacity_s, 1) for role in ROLES}
                self._write(HostSample(ts_ms=now_ms(), cores=cores, **figures, **by_role))
                before = after
        except Exception as exc:  # noqa: BLE001 - a broken sampler must not break the run; its samples stop
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("the host sampler stopped: %s", self.error)

    def _write(self, sample: HostSample) -> None:
        if self._writer is not None:
            self._writer.write(sample)
            self.samples += 1
