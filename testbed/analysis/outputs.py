"""The Parquet tables (schemas in docs/metrics.md) and metrics.json, written for local paths or URIs."""

from __future__ import annotations

import io

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

from ..run.layout import LAYOUT
from ..run.metrics import Metrics
from .catalog import SCHEMAS
from .spark.sources import join, write_bytes


def to_table(name: str, frame: pd.DataFrame) -> pa.Table:
    """Cast to the documented schema so every run's tables read alike (empty ones included)."""
    schema = SCHEMAS[name]
    frame = frame.reindex(columns=schema.names)
    arrays = [pa.array(frame[f.name].astype(object).where(frame[f.name].notna(), None).tolist(), type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)


def write_outputs(spark: SparkSession, run_dir: str, metrics: Metrics,
                  frames: dict[str, pd.DataFrame]) -> dict[str, pa.Table]:
    """Write the tables and metrics.json; return the tables as written."""
    tables = {name: to_table(name, frame) for name, frame in frames.items()}
    for name, table in tables.items():
        buf = io.BytesIO()
        pq.write_table(table, buf)
        write_bytes(spark, join(run_dir, LAYOUT.table(name).as_posix()), buf.getvalue())
    write_bytes(spark, join(run_dir, LAYOUT.metrics.as_posix()), metrics.model_dump_json(indent=2).encode())
    return tables
