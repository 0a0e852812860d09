"""Frames of rows the driver already holds (ownership intervals, spans, markers, members) as Spark local relations.

``spark.createDataFrame(rows, ddl)`` makes an RDD of pickled rows (a scan of default parallelism's partitions,
each a task of a few rows, and a job to broadcast it); an Arrow table of the same rows becomes a local relation,
which a broadcast join reads on the driver with no job at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType


@lru_cache(maxsize=None)
def _schemas(ddl: str) -> tuple[StructType, pa.Schema]:
    struct = StructType.fromDDL(ddl)
    assert isinstance(struct, StructType), ddl
    return struct, to_arrow_schema(struct)


def local_frame(spark: SparkSession, rows: Sequence[tuple], ddl: str) -> DataFrame:
    """A DataFrame of ``rows`` (tuples in the order of ``ddl``'s columns, e.g. ``"member string, ts long"``)."""
    struct, schema = _schemas(ddl)
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    table = pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)
    return spark.createDataFrame(table, struct)
