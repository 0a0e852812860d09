"""The preflight's report: which interpreter the command starts and which clients it has, then exit.

With ``TESTBED_INSTRUMENT_PREFLIGHT=<path>`` the sitecustomize calls ``report_and_exit(path)`` before the
program's first line: it writes ``{"python", "version", "clients": {<distribution>: <version>}}`` for each client
family the instrumentation serves (``testbed.clients``: confluent-kafka, kafka-python, aiokafka; versions from the
installed distributions' metadata, without importing any client; null when
absent) and ends the process at once, so the program never runs. ``testbed.instrument.launch.preflight``
reads the report. The first Python interpreter the command starts answers: a wrapper written in Python
(e.g. ``poetry run``) answers for itself.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Dict, Optional

from testbed.clients import FAMILIES

CLIENT_DISTRIBUTIONS = tuple(f.installation.package for f in FAMILIES.values()
                             if f.program and f.program_runtime == "python")


def installed_version(distribution: str) -> Optional[str]:
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8 has no importlib.metadata
        return None
    try:
        return metadata.version(distribution)
    except Exception:  # noqa: BLE001 - PackageNotFoundError, or broken metadata: not usable either way
        return None


def report() -> Dict[str, object]:
    return {
        "python": sys.executable,
        "version": platform.python_version(),
        "clients": {name: installed_version(name) for name in CLIENT_DISTRIBUTIONS},
    }


def report_and_exit(path: str) -> None:
    """Write the report (whole or not at all: a temp file renamed) and end the process with status 0."""
    try:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(report(), f)
        os.replace(tmp, path)
    except Exception as exc:  # noqa: BLE001 - the launcher says what it did not get
        sys.stderr.write(f"testbed instrument: preflight report failed: {exc}\n")
        sys.stderr.flush()
        os._exit(3)
    os._exit(0)
