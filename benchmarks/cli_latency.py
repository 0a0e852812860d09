"""How long the commands that only read files take to answer: `testbed --help`, `list`, `validate <file>`, each a
new process, median of ``--repeat``, and the heavy modules each one imported. The first `list` or `validate`
after the analysis's sources change reads the metric names from the catalog again (``--cold`` shows that case:
an empty cache directory before each call). Python's bytecode cache is used as an installation uses it (a
``PYTHONDONTWRITEBYTECODE`` of the caller's is dropped: without the cache testbed's own modules are compiled at
every call, 0.1 s more); the library floor line is what importing typer, rich, pydantic, pydantic-settings and
PyYAML alone takes, which every command but ``--help`` needs.

    .venv/bin/python benchmarks/cli_latency.py --repeat 7
    .venv/bin/python benchmarks/cli_latency.py --repeat 3 --cold

Last line: one JSON object, command -> median seconds, and the machine's speed then (benchmarks/machine_speed.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_speed import reference

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pyspark", "pandas", "pyarrow", "confluent_kafka", "docker", "plotly")
PROBE = ("import atexit, sys; from testbed.cli import main; "
         f"atexit.register(lambda: print('HEAVY', [m for m in {HEAVY!r} if m in sys.modules], file=sys.stderr)); "
         "sys.argv = ['testbed', *sys.argv[1:]]; main()")


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    heavy = next((line.split(" ", 1)[1] for line in done.stderr.splitlines() if line.startswith("HEAVY")), "?")
    return wall, heavy


LIBRARIES = "import typer, typer._adapters, rich.console, rich.table, pydantic, pydantic_settings, yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cold", action="store_true", help="an empty cache directory before each call")
    args = parser.parse_args()
    commands = {"--help": ["--help"], "list": ["list"], "validate": ["validate", "scenarios/rolling-upgrade.yaml"]}
    medians = {}
    with tempfile.TemporaryDirectory(prefix="cli-latency-") as tmp:
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
               "TESTBED_CACHE_DIR": str(Path(tmp) / "cache")}
        timed(["list"], env)  # fills the caches (metric names, bytecode) for the warm case
        for name, argv in commands.items():
            walls = []
            for _ in range(args.repeat):
                if args.cold:
                    shutil.rmtree(Path(tmp) / "cache", ignore_errors=True)
                wall, heavy = timed(argv, env)
                walls.append(wall)
            medians[name] = round(statistics.median(walls), 3)
            print(f"{name}: median {medians[name]} s of {[round(w, 2) for w in walls]}; heavy modules: {heavy}")
    floor = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", LIBRARIES], check=True)
        floor.append(time.perf_counter() - started)
    medians["library floor"] = round(statistics.median(floor), 3)
    print(f"library floor: median {medians['library floor']} s of {[round(w, 2) for w in floor]}")
    print(json.dumps({**medians, "machine": reference()}))


if __name__ == "__main__":
    main()
