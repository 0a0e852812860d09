"""Which of the run's processes uses the CPU: each process on the machine gets a role once, when first seen, and
the CPU time of the processes of each role is summed per interval.

Roles, the first that fits: ``harness`` (the process that runs the scenario: the CLI, or pytest), ``analysis``
(a Spark JVM: driver, standalone master, worker or executor, this run's or another's), ``brokers`` (a Kafka
broker's JVM, main class ``kafka.Kafka``, visible from the host although it runs in a container on the host's
network; and the Toxiproxy server in front of the brokers), ``load`` (the load generator's Locust processes,
children of the harness), ``members`` (every other descendant of the harness: member runners, their JVMs,
instrumented programs). Everything else (other sessions' processes, the Docker engine) has no role: it is the
part of the host's busy time no role accounts for. A process's CPU from its start to the sample that first sees
it, and from its last sample to its end, is not counted (at most one interval each). The kernel counts a
process's CPU in ticks (10 ms on this project's machines), so over a 250 ms interval a role's share moves in
steps of 2 % of two cores: a role busy less than that in one interval reads 0 there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import psutil

from ..children import LOCUST_MAIN

ROLES = ("brokers", "members", "load", "analysis", "harness")
ANCESTRY_DEPTH = 64  # a chain of parents longer than this is not the harness's
# A process keeps its pid across exec: a broker's container starts as its entrypoint (a shell) and becomes
# kafka.Kafka seconds later, and a child the harness forks shows the harness's own command line until it execs
# Locust or a member. A process's role is decided again from its command line while it is this young; one that
# has none by then is not the run's.
YOUNG_S = 60.0


def role_of(cmdline: Sequence[str], *, is_harness: bool, under_harness: bool) -> str | None:
    """The role of a process from its command line and its place under the harness (None: not the run's)."""
    if is_harness:
        return "harness"
    if any(a.startswith("org.apache.spark.") or a == "pyspark-shell" for a in cmdline):
        return "analysis"
    if "kafka.Kafka" in cmdline or any(os.path.basename(a) == "toxiproxy-server" for a in cmdline[:1]):
        return "brokers"
    if under_harness and LOCUST_MAIN in cmdline[:3]:
        return "load"
    return "members" if under_harness else None


@dataclass
class _Tracked:
    process: psutil.Process
    role: str | None  # None: not the run's (yet: a young process may exec into a broker)
    cpu_s: float  # user + system at the last sample
    under_harness: bool


class ProcessRoles:
    """The processes of each role on the machine, and the CPU each role used since the last call."""

    def __init__(self, harness_pid: int | None = None) -> None:
        self.harness_pid = harness_pid if harness_pid is not None else os.getpid()
        self._seen: set[int] = set()
        self._tracked: dict[int, _Tracked] = {}

    def cpu_seconds(self) -> dict[str, float]:
        """Role -> CPU seconds its processes used since the previous call (a new process counts from now)."""
        used = dict.fromkeys(ROLES, 0.0)
        pids = set(psutil.pids())
        self._seen &= pids
        for pid in sorted(pids - self._seen):
            self._seen.add(pid)
            self._track(pid)
        now_s = time.time()
        for pid, tracked in list(self._tracked.items()):
            try:
                if now_s - tracked.process.create_time() < YOUNG_S:  # an exec since the last look changes its role
                    tracked.role = self._role(pid, tracked.process, tracked.under_harness)
                elif tracked.role is None:  # grown up without becoming the run's
                    del self._tracked[pid]
                    continue
                times = tracked.process.cpu_times()
            except psutil.Error:  # ended (or its pid is another process's now: psutil checks its start time)
                del self._tracked[pid]
                continue
            now = times.user + times.system
            if tracked.role is not None:
                used[tracked.role] += max(0.0, now - tracked.cpu_s)
            tracked.cpu_s = now
        return used

    def _track(self, pid: int) -> None:
        """Track a process first seen now: one without a role only while it is young."""
        try:
            process = psutil.Process(pid)
            under = self._under_harness(process)
            role = self._role(pid, process, under)
            if role is not None or time.time() - process.create_time() < YOUNG_S:
                times = process.cpu_times()
                self._tracked[pid] = _Tracked(process, role, times.user + times.system, under)
        except psutil.Error:  # gone already, or a kernel thread without a command line
            return

    def _role(self, pid: int, process: psutil.Process, under: bool) -> str | None:
        return role_of(process.cmdline(), is_harness=pid == self.harness_pid, under_harness=under)

    def _under_harness(self, process: psutil.Process) -> bool:
        current = process
        for _ in range(ANCESTRY_DEPTH):
            parent = current.ppid()
            if parent == self.harness_pid:
                return True
            if parent <= 1:
                return False
            try:
                current = psutil.Process(parent)
            except psutil.Error:
                return False
        return False
