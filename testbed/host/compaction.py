"""The kernel's memory compacted before a run or a test session starts its JVMs.

On the virtual machines this project is built and checked on, after a day of uptime and a CI run, every JVM (brokers,
Spark, Java members) once ran three to four times slower while Python hardly changed: a JVM's start 148-183 ms
against 32-46 ms that morning, Spark's warm analysis of the README's run 12.7 s against 2.6 s. Compacting the
kernel's memory and dropping its caches brought them back to 41 ms and 4.0 s (2026-12-05; docs/testing.md, "The
machine's condition"). What slowed it is not established: free memory fragmented on purpose did not slow a JVM's
start. A compaction costs a fraction of a second, so ``testbed setup`` asks for one; the kernel compacts on its own
only when an allocation cannot be met otherwise. It needs root and a kernel with compaction; elsewhere it does
nothing.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

COMPACT_MEMORY = Path("/proc/sys/vm/compact_memory")
LARGE_ORDER = 9  # 2^9 pages of 4 KiB: 2 MiB, a huge page


def compact_memory() -> float | None:
    """Compact all of the kernel's memory zones; the seconds it took, or None where this process may not."""
    if not os.access(COMPACT_MEMORY, os.W_OK):
        return None
    t0 = time.perf_counter()
    try:
        COMPACT_MEMORY.write_text("1\n")
    except OSError:  # a read-only /proc/sys (an unprivileged container) can pass the access check
        return None
    return time.perf_counter() - t0


def free_in_large_blocks_gib(buddyinfo: Path = Path("/proc/buddyinfo")) -> float | None:
    """Free memory in blocks of 2 MiB and more (order 9 and up), in GiB: how fragmented the kernel's free memory is
    (None where the kernel does not say)."""
    page = os.sysconf("SC_PAGE_SIZE")
    try:
        lines = buddyinfo.read_text().splitlines()
    except OSError:
        return None
    free = 0
    for line in lines:  # "Node 0, zone   Normal  c0 c1 ... c10": c_k free blocks of 2^k pages
        counts = line.split()[4:]
        free += sum(int(n) << order for order, n in enumerate(counts) if order >= LARGE_ORDER)
    return round(free * page / 2**30, 1)
