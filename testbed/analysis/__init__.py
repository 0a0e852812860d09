"""Measurement pipeline: a saved run directory in, metrics and tables out (docs/metrics.md)."""

from .pipeline import analyse
from .spark import get_spark, stop_spark

__all__ = ["analyse", "get_spark", "stop_spark"]
