"""The failures stage: what the consumer group's members reported going wrong (failed offset commits, client
errors, the user's handler raising on a batch), the ``handler_errors`` table and the failure figures."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..stage import Catalogue, Measured, Metric
from ..view.run_view import GroupView

SCHEMA = pa.schema(
    [("member", pa.string()), ("ts_ms", pa.int64()), ("error_type", pa.string()), ("message", pa.string()),
     ("records", pa.int64()), ("ranges", pa.string()), ("action", pa.string())])


@dataclass
class Failures:
    counts: dict[str, int]  # event name (``committed`` with an error, ``error``) -> how many
    handler_errors: pd.DataFrame


CATALOGUE: Catalogue[Failures] = Catalogue(
    Metric("commit_failures", "count", "offset commits the clients reported as failed (committed events with an error)",
           lambda f: f.counts.get("committed", 0)),
    Metric("client_errors", "count", "error events in member histories (e.g. INCONSISTENT_GROUP_PROTOCOL, fencing)",
           lambda f: f.counts.get("error", 0)),
    Metric("handler_errors", "count", "batches the user's handler raised on (not processed; the member skipped them "
           "or stopped)",
           lambda f: len(f.handler_errors)),
    Metric("handler_error_records", "records", "records in the batches the user's handler raised on",
           lambda f: int(f.handler_errors["records"].sum())),
)


def failures(view: GroupView) -> Failures:
    """The counts come from the run view's summary of each member (one query for every stage)."""
    summary = view.summary.values()
    counts = {"committed": sum(s.failed_commits for s in summary), "error": sum(s.errors for s in summary)}
    wrote_handler_errors = any("handler_error" in s.names for s in summary)
    return Failures(counts, handler_error_frame(view.events) if wrote_handler_errors else _frame([]))


def handler_error_frame(events: DataFrame) -> pd.DataFrame:
    """Every ``handler_error`` of the members' histories: the user's handler raised on a batch."""
    rows = events.filter(F.col("name") == "handler_error").select(
        "member", "ts_ms", "error_type", "message", "records", F.to_json("ranges").alias("ranges"), "action"
    ).orderBy("ts_ms").collect()
    return _frame([r.asDict() for r in rows])


def _frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=SCHEMA.names).astype({"records": "int64"})


def measured(found: Failures) -> Measured:
    return Measured(CATALOGUE.measure(found), {"handler_errors": found.handler_errors})
