"""Rows of the analysis's tables as the report's tables show them: every row (none dropped), in a stated order,
or the reason the table is missing; blanks (None, NaN, NA) as None."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from .inputs import RunOutputs


def table_rows(out: RunOutputs, table: str, to_row: Callable[[dict[str, Any]], dict[str, Any]],
               order: list[str]) -> dict[str, Any]:
    """Every row of a table (none dropped), in ``order``, or the reason the table is missing."""
    frame = out.table(table)
    if frame is None:
        return {"missing": out.tables[table].reason}  # type: ignore[union-attr]
    return {"rows": [to_row(r) for r in frame.sort_values(order).to_dict("records")]}


def clean(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return value


def crash_row(r: dict[str, Any]) -> dict[str, Any]:
    restart = (f"after {r['restart_in_s']:g} s" if clean(r.get("restart_in_s")) is not None
               else f"no: {clean(r.get('restart_refused')) or 'not restarted'}")
    return {"ts_ms": r["ts_ms"], "member": r["member"], "exit": r["exit"], "exception": clean(r.get("exception_type")),
            "message": clean(r.get("message")), "partitions": clean(r.get("partitions")) or "", "restart": restart}


def duplicate_row(r: dict[str, Any]) -> dict[str, Any]:
    return {"partition": f"{r['topic']}-{r['partition']}", "start_ms": r["start_ms"], "duration_ms": r["duration_ms"],
            "members": r["members"]}


def episode_row(r: dict[str, Any], origin_ms: int | None) -> dict[str, Any]:
    row = {k: clean(v) for k, v in r.items()}
    row["start_s"] = (r["start_ms"] - origin_ms) / 1000 if origin_ms is not None else None
    client, broker = row.get("duration_ms"), row.get("broker_duration_ms")
    row["broker_minus_client_ms"] = broker - client if client is not None and broker is not None else None
    return row
