"""How fast this machine runs right now: a fixed pure-Python loop and a JVM's start, each the best of a few tries
(``testbed.host.speed``, which says why both).

This machine's speed drifts from day to day and within a day (the same commands took twice as long on 2026-12-03 as
on 2026-11-28; a JVM's start three to four times as long after a day of uptime as after the kernel's memory was
compacted, 2026-12-05), so a figure means little without the speed it was taken at. The timing benchmarks print this
reference beside their own figures; compare figures across days only with it.

    .venv/bin/python benchmarks/machine_speed.py

Last line: one JSON object (milliseconds).
"""

from __future__ import annotations

import json

from testbed.host.speed import reference

__all__ = ["reference"]

if __name__ == "__main__":
    print(json.dumps(reference()))
