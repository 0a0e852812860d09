"""Every metric the analysis writes, with its unit and meaning, and every table with its schema, gathered from the
stages that compute them (``stage.Catalogue``, each kind's ``SCHEMAS``): the names metrics.json, the scenario's
expectations, the report and docs/metrics.md use."""

from __future__ import annotations

import pyarrow as pa

from . import host, run_wide
from .kinds import KINDS
from .stage import Metric, declared

METRICS: dict[str, Metric] = declared([run_wide.CATALOGUE, *(c for kind in KINDS for c in kind.catalogues),
                                       host.CATALOGUE])
CATALOG: dict[str, str] = {name: metric.unit for name, metric in METRICS.items()}
SCHEMAS: dict[str, pa.Schema] = {**run_wide.SCHEMAS, **{n: s for kind in KINDS for n, s in kind.tables.items()},
                                 **host.SCHEMAS}
TABLES = tuple(SCHEMAS)
