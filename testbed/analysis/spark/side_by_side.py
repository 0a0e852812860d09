"""Independent queries of one analysis run side by side, each on a thread of its own.

A small run's query costs more in its planning (on the driver, one thread per query) than in its tasks; run side
by side, one query's planning overlaps another's tasks and the driver's other core. Each thread's jobs go to the
fair scheduler's pool of the thread that started them (a new thread would start in the default pool).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, TypeVar

from pyspark.sql import SparkSession

from .session import scheduler_pool

T = TypeVar("T")


def side_by_side(spark: SparkSession, *queries: Callable[[], Any]) -> list[Any]:
    """Each of ``queries`` (callables without arguments), the first on this thread and each other on one of its
    own; their results in their order. All have ended when it returns or raises (the first failure, in order),
    so that nothing they read is released under them."""
    if len(queries) <= 1:
        return [query() for query in queries]
    pool_name = spark.sparkContext.getLocalProperty("spark.scheduler.pool")
    with ThreadPoolExecutor(len(queries) - 1, thread_name_prefix="query") as pool:
        others = [pool.submit(in_pool, spark, pool_name, query) for query in queries[1:]]
        try:
            first = queries[0]()
        finally:
            wait(others)
    return [first, *(other.result() for other in others)]


def in_pool(spark: SparkSession, name: str | None, query: Callable[[], T]) -> T:
    """``query()`` with its jobs in the fair scheduler's pool ``name`` (None: the default pool)."""
    if name is None:
        return query()
    with scheduler_pool(spark, name):
        return query()
