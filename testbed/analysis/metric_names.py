"""The names of the metrics the analysis declares, without importing the analysis.

A scenario's expectations name metrics, so validating one (``testbed validate``, ``list``, the start of a run)
needs the names; the stages that declare them (``catalog``) load pandas', pyarrow's and Spark's Python side, about
0.8 s of a command that otherwise answers in half a second. The names are read from ``catalog.CATALOG`` once and
kept in the cache directory under a fingerprint of the analysis's source files (each one's path, size and
modification time) and the package's version: an edited, added or removed stage reads them again. The catalog stays
the one place a metric is declared; this file only remembers what it said.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from pathlib import Path

from ..package_files import sources_fingerprint
from ..settings import settings

_ANALYSIS = Path(__file__).resolve().parent


def _declared() -> tuple[str, ...]:
    from .catalog import CATALOG

    return tuple(CATALOG)


@functools.cache
def metric_names() -> tuple[str, ...]:
    """Every metric name, in the catalog's order (looked up once per process)."""
    cache = settings().cache_dir / "metric-names" / f"{sources_fingerprint(_ANALYSIS)}.json"
    try:
        return tuple(json.loads(cache.read_text()))
    except (OSError, ValueError):
        pass
    names = _declared()
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        # Written beside it and renamed over it: a reader in another process never sees half a file.
        with tempfile.NamedTemporaryFile("w", dir=cache.parent, delete=False, suffix=".tmp") as out:
            json.dump(names, out)
        os.replace(out.name, cache)
    except OSError:  # a read-only cache: the names are right, only the next command is slower
        pass
    return names
