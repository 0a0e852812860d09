"""How fast this machine runs right now: a fixed pure-Python loop and a JVM's start, each the best of a few tries.

The two probes can drift apart: on the 2-core virtual machines this project is built on, after a day of uptime and a
CI run, a JVM's start went from 32-46 ms to 130-180 ms while the Python loop
stayed within 10 %, and Spark's analysis of a small run took 12.7 s instead of 2.6-4.0 s; compacting the kernel's
memory and dropping its caches brought the JVM's start back to 41 ms (``compaction``; docs/testing.md, "The machine's
condition"). So a timing means little without both figures beside it: the benchmarks print them with their own
figures, and the project's test suite prints them at its start and at its end.
"""

from __future__ import annotations

import shutil
import subprocess
import time

LOOP = 5_000_000  # about 0.25 s on a 2024 desktop core under Python 3.11
TRIES = 3


def _loop() -> float:
    t0 = time.perf_counter()
    total = 0
    for i in range(LOOP):
        total += i
    return time.perf_counter() - t0


def _java_start() -> float | None:
    """Seconds to a JVM's ``-version``; None without a JVM that answers it (a probe never stops what asked for it)."""
    java = shutil.which("java")
    if java is None:
        return None
    t0 = time.perf_counter()
    try:
        subprocess.run([java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-version"], capture_output=True, check=True,
                       timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return time.perf_counter() - t0


def reference(tries: int = TRIES) -> dict[str, float | None]:
    """The best of ``tries`` of each probe, in milliseconds (lower is faster); the JVM's is None without one."""
    loops = [_loop() for _ in range(tries)]
    starts = [s for s in (_java_start() for _ in range(tries)) if s is not None]
    return {"python_loop_ms": round(min(loops) * 1000, 1),
            "java_version_ms": round(min(starts) * 1000, 1) if starts else None}


def describe(speed: dict[str, float | None]) -> str:
    """One line for a person: ``Python loop 146 ms, a JVM's start 41 ms``."""
    java = speed["java_version_ms"]
    return (f"Python loop {speed['python_loop_ms']:.0f} ms, a JVM's start "
            + (f"{java:.0f} ms" if java is not None else "unknown (no JVM answered)"))
