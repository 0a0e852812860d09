"""What a stage of the analysis gives back, and how it declares its metrics.

A stage reads the run view (``view.run_view.RunView``) with its settings and returns a :class:`Measured`: its
metrics, tables, examples and notes. Each metric is declared once, where it is computed: a :class:`Metric`
names it, gives its unit, what it means (the report's words) and, for the figures compared side by side, which way
is better, and reads its value off what the stage found. A stage's :class:`Catalogue` lists its metrics;
``analysis.catalog`` gathers every stage's into the names metrics.json, the scenario's expectations, the report
and docs/metrics.md use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import pandas as pd

from ..run.metrics import MetricValue

Value = int | float | None
Found = TypeVar("Found")
Better = Literal["lower", "higher"]


@dataclass(frozen=True)
class Unknown:
    """A figure that cannot be measured in this run, and why (never a silent 0)."""

    reason: str


@dataclass(frozen=True)
class Metric(Generic[Found]):
    """One figure: its name, unit and meaning, and how it is read off what its stage found (a value, None, or
    Unknown)."""

    name: str
    unit: str
    meaning: str  # one line for the report's tables; docs/metrics.md says it at length
    read: Callable[[Found], Value | Unknown]
    none: str = "no data to measure"  # why the figure is unknown when ``read`` gives None
    better: Better | None = None  # which way is better, where a comparison marks it (None: neither)

    def of(self, found: Found) -> MetricValue:
        value = self.read(found)
        if isinstance(value, Unknown):
            return MetricValue(value=None, unit=self.unit, unknown=value.reason)
        if value is None:
            return MetricValue(value=None, unit=self.unit, unknown=self.none)
        return MetricValue(value=value, unit=self.unit)


class Catalogue(Generic[Found]):
    """A stage's metrics, in the order metrics.json and the report list them."""

    def __init__(self, *metrics: Metric[Found]) -> None:
        names = [m.name for m in metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"a metric declared twice: {sorted(n for n in names if names.count(n) > 1)}")
        self.metrics = metrics

    @property
    def units(self) -> dict[str, str]:
        return {m.name: m.unit for m in self.metrics}

    def measure(self, found: Found) -> dict[str, MetricValue]:
        return {m.name: m.of(found) for m in self.metrics}

    def unknown(self, reason: str) -> dict[str, MetricValue]:
        return {m.name: MetricValue(value=None, unit=m.unit, unknown=reason) for m in self.metrics}


def declared(catalogues: Iterable[Catalogue[Any]]) -> dict[str, Metric[Any]]:
    """Name -> metric over several catalogues, in their order; a name in two of them is refused."""
    out: dict[str, Metric[Any]] = {}
    for catalogue in catalogues:
        for metric in catalogue.metrics:
            if metric.name in out:
                raise ValueError(f"metric {metric.name!r} declared by two stages")
            out[metric.name] = metric
    return out


@dataclass
class Measured:
    """What a stage (or a group kind's stages together) found: metrics, tables by name, bounded examples by
    name, notes for the reader, and what it sets of the run's own fields (``latency_source``, ``settings``)."""

    metrics: dict[str, MetricValue] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    latency_source: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, *parts: Measured) -> Measured:
        """The parts together, in their order (a later part's name wins)."""
        out = cls()
        for part in parts:
            out.metrics.update(part.metrics)
            out.tables.update(part.tables)
            out.examples.update(part.examples)
            out.notes += part.notes
            out.latency_source = part.latency_source or out.latency_source
            out.settings.update(part.settings)
        return out


def empty_tables(schemas: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Tables without a row, one per schema (a pyarrow schema or a list of column names)."""
    return {name: pd.DataFrame(columns=list(getattr(schema, "names", schema))) for name, schema in schemas.items()}
