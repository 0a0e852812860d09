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
from pathlib import Path

from ..cache import remember, remembered
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
    if isinstance(names := remembered(cache), list):
        return tuple(names)
    names = _declared()
    remember(cache, names)
    return names
