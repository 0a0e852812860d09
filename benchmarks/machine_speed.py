"""How fast this machine runs right now: a fixed pure-Python loop and a JVM's start, each the best of a few tries.

This machine's speed drifts from day to day (the same commands took twice as long on 2026-12-03 as on 2026-11-28,
with the machine otherwise idle and no CPU stolen), so a figure means little without the speed it was taken at. The
timing benchmarks print this reference beside their own figures; compare figures across days only with it.

    .venv/bin/python benchmarks/machine_speed.py

Last line: one JSON object (milliseconds).
"""

from __future__ import annotations

import json
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
    java = shutil.which("java")
    if java is None:
        return None
    t0 = time.perf_counter()
    subprocess.run([java, "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-version"], capture_output=True, check=True)
    return time.perf_counter() - t0


def reference() -> dict[str, float | None]:
    """The best of ``TRIES`` of each probe, in milliseconds (lower is faster); the JVM's is None without Java."""
    loops = [_loop() for _ in range(TRIES)]
    starts = [s for s in (_java_start() for _ in range(TRIES)) if s is not None]
    return {"python_loop_ms": round(min(loops) * 1000, 1),
            "java_version_ms": round(min(starts) * 1000, 1) if starts else None}


if __name__ == "__main__":
    print(json.dumps(reference()))
