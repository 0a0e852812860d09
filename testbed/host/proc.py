"""The machine-wide figures of a host sample, read from Linux's /proc: pure parsers of the files' text and the
figures of the interval between two readings.

/proc/stat's aggregate ``cpu`` line counts every core's time in ticks (user, nice, system, idle, iowait, irq,
softirq, steal; guest time is already inside user and nice, so it is left out); ``procs_running`` is the
number of runnable tasks at the instant it is read, the reading thread included. /proc/pressure/<resource>
(PSI, Linux 4.20+) gives ``total``, the microseconds some task waited, cumulative: its growth over an
interval is the share of the interval something waited, which a 10-second average would blur over a 1 s pause.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class CpuTimes:
    busy: int  # not idle, not iowait (steal included: the core was not ours to use)
    steal: int
    iowait: int
    total: int


@dataclass(frozen=True)
class Reading:
    """The machine at one instant; ``mono_ns`` is when it was read."""

    mono_ns: int
    cpu: CpuTimes
    run_queue: int
    load1: float
    mem_available_pct: float
    cpu_stall_us: int | None  # PSI cpu some total; None without /proc/pressure
    memory_stall_us: int | None


def cpu_times(stat: str) -> CpuTimes:
    fields = [int(v) for v in next(ln for ln in stat.splitlines() if ln.startswith("cpu ")).split()[1:9]]
    fields += [0] * (8 - len(fields))  # very old kernels lack steal
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return CpuTimes(busy=total - idle - iowait, steal=steal, iowait=iowait, total=total)


def procs_running(stat: str) -> int:
    return int(next(ln for ln in stat.splitlines() if ln.startswith("procs_running")).split()[1])


def mem_available_pct(meminfo: str) -> float:
    values = {ln.split(":")[0]: int(ln.split()[1]) for ln in meminfo.splitlines() if ":" in ln and ln.split()[1:]}
    return 100.0 * values["MemAvailable"] / values["MemTotal"]


def stall_total_us(pressure: str) -> int:
    """The ``some`` line's cumulative stall in µs."""
    line = next(ln for ln in pressure.splitlines() if ln.startswith("some "))
    return int(line.rsplit("total=", 1)[1])


def _pressure(resource: str, root: Path) -> int | None:
    try:
        return stall_total_us((root / "pressure" / resource).read_text())
    except (OSError, StopIteration, ValueError):
        return None  # no PSI on this kernel (or it is switched off): the figure is unknown, not 0


def read(root: Path = PROC) -> Reading:
    stat = (root / "stat").read_text()
    return Reading(
        mono_ns=time.monotonic_ns(), cpu=cpu_times(stat),
        # The reading thread is itself running while it reads: it is not load.
        run_queue=max(0, procs_running(stat) - 1),
        load1=float((root / "loadavg").read_text().split()[0]),
        mem_available_pct=mem_available_pct((root / "meminfo").read_text()),
        cpu_stall_us=_pressure("cpu", root), memory_stall_us=_pressure("memory", root))


def available(root: Path = PROC) -> str | None:
    """Why the host cannot be sampled here (None: it can)."""
    try:
        read(root)
    except (OSError, StopIteration, KeyError, ValueError) as exc:
        return f"{root}/stat, loadavg and meminfo unreadable ({type(exc).__name__}: {exc}); not a Linux host?"
    return None


def cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def interval_figures(before: Reading, after: Reading) -> dict[str, float | int | None]:
    """The machine-wide fields of a ``HostSample`` over the interval between two readings."""
    ticks = max(1, after.cpu.total - before.cpu.total)
    interval_us = max(1, (after.mono_ns - before.mono_ns) // 1_000)

    def share(stall_before: int | None, stall_after: int | None) -> float | None:
        if stall_before is None or stall_after is None:
            return None
        return round(min(100.0, 100.0 * (stall_after - stall_before) / interval_us), 1)

    return {
        "interval_ms": int(interval_us // 1_000),
        "cpu_busy_pct": round(100.0 * (after.cpu.busy - before.cpu.busy) / ticks, 1),
        "cpu_steal_pct": round(100.0 * (after.cpu.steal - before.cpu.steal) / ticks, 1),
        "cpu_iowait_pct": round(100.0 * (after.cpu.iowait - before.cpu.iowait) / ticks, 1),
        "run_queue": after.run_queue,
        "load1": after.load1,
        "mem_available_pct": round(after.mem_available_pct, 1),
        "cpu_pressure_pct": share(before.cpu_stall_us, after.cpu_stall_us),
        "memory_pressure_pct": share(before.memory_stall_us, after.memory_stall_us),
    }
