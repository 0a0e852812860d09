"""Measurement pipeline: a saved run directory in, metrics and tables out (docs/metrics.md).

``analyse``, ``analyse_run``, ``get_spark`` and ``stop_spark`` load Spark's Python side on first use: the scenario
format reads this package's settings model and metric names without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import analyse, analyse_run
    from .spark.session import get_spark, stop_spark

__all__ = ["analyse", "analyse_run", "get_spark", "stop_spark"]


def __getattr__(name: str) -> Any:
    if name in ("analyse", "analyse_run"):
        from . import pipeline
        return getattr(pipeline, name)
    if name in ("get_spark", "stop_spark"):
        from .spark import session
        return getattr(session, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
