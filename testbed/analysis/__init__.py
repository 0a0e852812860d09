"""Measurement pipeline: a saved run directory in, metrics and tables out (docs/metrics.md)."""

from .metrics import CATALOG, TABLES, MetricValue, Metrics, RunConfig
from .pipeline import analyse
from .spark import get_spark, stop_spark

__all__ = ["CATALOG", "TABLES", "MetricValue", "Metrics", "RunConfig", "analyse", "get_spark", "stop_spark"]
