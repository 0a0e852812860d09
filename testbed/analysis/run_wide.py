"""The run-wide stage: what holds whatever group kinds the run has (its length, its members) and the harness's
actions as a table."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import pyarrow as pa

from .stage import Catalogue, Measured, Metric
from .view.harness import HarnessAction
from .view.run_view import RunView

HARNESS_SCHEMA = pa.schema([("ts_ms", pa.int64()), ("kind", pa.string()), ("target", pa.string()),
                            ("detail", pa.string())])
SCHEMAS = {"harness_actions": HARNESS_SCHEMA}


def run_duration_ms(view: RunView) -> int | None:
    """From the harness's run start to its run end; without them, the default kind's members' first and last
    events (what it always measured)."""
    last = view.group(None).last_ms.values()
    start = view.windows.run_start_ms if view.windows.run_start_ms is not None else min(last, default=None)
    end = view.windows.run_end_ms if view.windows.run_end_ms is not None else max(last, default=None)
    return end - start if start is not None and end is not None else None


CATALOGUE: Catalogue[RunView] = Catalogue(
    Metric("run_duration_ms", "ms", "run_end − run_start (harness); falls back to first/last event of the history",
           run_duration_ms),
    Metric("members", "count", "member processes that wrote a `started` event", lambda view: len(view.started_rows)),
)


def harness_frame(harness: Sequence[HarnessAction]) -> pd.DataFrame:
    """The harness's actions in time order, ``detail`` as its JSON text."""
    rows = [{"ts_ms": h["ts_ms"], "kind": h["kind"], "target": h["target"],
             "detail": json.dumps(h["detail"], separators=(",", ":"))} for h in harness]
    return pd.DataFrame(rows, columns=HARNESS_SCHEMA.names)


def measured(view: RunView) -> Measured:
    return Measured(CATALOGUE.measure(view), {"harness_actions": harness_frame(view.actions)}, notes=list(view.notes))
