"""What member processes cost the machine: memory, CPU, threads and descriptors, read with psutil.

A member's cost is its process tree's (a Java member's wrapper and its JVM); a hosted member's is its host's
share. ``usage`` reads a set of processes once; ``MemberUsageSampler`` follows every member process a run starts
(found as children of this process by their command line), keeping each one's last CPU reading so that a
process that ends (a bounced member) still counts with what it spent.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psutil

MEMBER_MODULE = "testbed.members."  # every member runner and host runs as ``python -m testbed.members.<name>``


def tree(pid: int) -> list[psutil.Process]:
    """A process and all its descendants (a Java runner's JVM); [] if it is gone."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def usage(procs: list[psutil.Process]) -> dict[str, float]:
    """Summed RSS (MB, 10^6 bytes), CPU seconds, threads and descriptors of ``procs`` (those still there)."""
    total = {"rss_mb": 0.0, "cpu_s": 0.0, "threads": 0, "fds": 0}
    for proc in procs:
        try:
            with proc.oneshot():
                cpu = proc.cpu_times()
                total["rss_mb"] += proc.memory_info().rss / 1e6
                total["cpu_s"] += cpu.user + cpu.system
                total["threads"] += proc.num_threads()
                total["fds"] += proc.num_fds()
        except psutil.NoSuchProcess:
            continue
    return total


def member_processes() -> list[psutil.Process]:
    """Every member process started from this process, with its descendants (JVMs)."""
    found: dict[int, psutil.Process] = {}
    for child in psutil.Process().children(recursive=True):
        try:
            if child.pid in found or not any(arg.startswith(MEMBER_MODULE) for arg in child.cmdline()):
                continue
        except psutil.Error:  # ended meanwhile
            continue
        found.update((p.pid, p) for p in tree(child.pid))
    return list(found.values())


@dataclass
class MemberUsageSampler:
    """Samples every member process of this process every ``interval_s`` in a thread, until ``stop``.

    ``peak_rss_mb``: the highest summed RSS seen at one sample; ``cpu_s``: CPU seconds spent by member processes,
    each counted to its last sample (a process that ends between samples loses at most one interval);
    ``wall_s``: the time member processes were seen running. Per member: peak RSS / members, and the mean share
    of one core, ``cpu_s / wall_s / members``.
    """

    interval_s: float = 2.0
    peak_rss_mb: float = 0.0
    _cpu_by_pid: dict[tuple[int, float], float] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _first_seen: float = 0.0  # the first and last samples that found member processes: the time they ran
    _last_seen: float = 0.0

    def start(self) -> MemberUsageSampler:
        self._thread = threading.Thread(target=self._loop, name="member-usage", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()

    def __enter__(self) -> MemberUsageSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def cpu_s(self) -> float:
        return sum(self._cpu_by_pid.values())

    @property
    def wall_s(self) -> float:
        """Seconds between the first and the last sample that found member processes."""
        return self._last_seen - self._first_seen

    def sample(self) -> None:
        rss = 0.0
        procs = member_processes()
        if procs:
            self._last_seen = time.monotonic()
            self._first_seen = self._first_seen or self._last_seen
        for proc in procs:
            try:
                with proc.oneshot():
                    cpu = proc.cpu_times()
                    rss += proc.memory_info().rss / 1e6
                    # keyed by pid and start time: a pid the system reuses is another process
                    self._cpu_by_pid[(proc.pid, proc.create_time())] = cpu.user + cpu.system
            except psutil.Error:
                continue
        self.peak_rss_mb = max(self.peak_rss_mb, rss)

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval_s):
                return

    def per_member(self, members: int) -> dict[str, float | None]:
        """Peak memory and CPU per member over the sampled time; unknown (None) without samples or members."""
        if self.wall_s <= 0 or members <= 0:
            return {"rss_mb_per_member": None, "cpu_pct_per_member": None}
        return {"rss_mb_per_member": round(self.peak_rss_mb / members, 1),
                "cpu_pct_per_member": round(self.cpu_s / self.wall_s / members * 100, 2)}
