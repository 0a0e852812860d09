"""The Kafka Streams stage: what the instances' own events say about their state stores and their states, the
``streams_restorations`` table and the ``streams_*`` figures. Unknown in a run without Streams instances; their
ownership, pauses and records are measured by the other stages, as any member's.

- A restoration is one store partition restored on one instance, from its ``streams_restore`` start to its end
  (or its suspension, when the task moved on before it finished): its records and its time.
- ``streams_rebalancing_ms`` is the time no live instance was RUNNING after the application first was: the whole
  application stopped by rebalances (an instance is live from its ``started`` to its life's end: stop, kill, exit).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..stage import Catalogue, Measured, Metric, Unknown
from ..view.lives import MemberLife

ABSENT = "no Kafka Streams instance in this run"
SCHEMA = pa.schema(
    [("member", pa.string()), ("store", pa.string()), ("changelog", pa.string()), ("partition", pa.int64()),
     ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("duration_ms", pa.int64()), ("from_offset", pa.int64()),
     ("to_offset", pa.int64()), ("records", pa.int64()), ("ended", pa.string())])
SCHEMAS = {"streams_restorations": SCHEMA}


@dataclass
class StreamsFound:
    instances: int  # members that are Streams instances (their started event has a streams block)
    restorations: pd.DataFrame  # SCHEMA
    rebalancing_ms: int | None  # None: the application never was RUNNING


def _absent_or(f: StreamsFound, value: int | float | None) -> int | float | None | Unknown:
    return Unknown(ABSENT) if not f.instances else value


def _restored(f: StreamsFound) -> pd.DataFrame:
    return f.restorations[f.restorations["records"] > 0]


CATALOGUE: Catalogue[StreamsFound] = Catalogue(
    Metric("streams_restorations", "count", lambda f: _absent_or(f, len(_restored(f)))),
    Metric("streams_restored_records", "records", lambda f: _absent_or(f, int(_restored(f)["records"].sum()))),
    Metric("streams_restore_max_ms", "ms",
           lambda f: _absent_or(f, int(_restored(f)["duration_ms"].max()) if len(_restored(f)) else None),
           none="no restoration restored a record"),
    Metric("streams_rebalancing_ms", "ms", lambda f: _absent_or(f, f.rebalancing_ms),
           none="the application never was RUNNING"),
)


def streams(events: DataFrame, started: dict[str, dict], lives: dict[str, MemberLife]) -> StreamsFound:
    instances = sorted(m for m, s in started.items() if s.get("streams"))
    if not instances:
        return StreamsFound(0, pd.DataFrame(columns=SCHEMA.names), None)
    rows = events.filter(F.col("name").isin("streams_restore", "streams_state", "started")).select(
        "member", "ts_ms", "name", "phase", "store", "topic", "partition", "start_offset", "end_offset", "records",
        "to_state").collect()
    rows = sorted((r.asDict() for r in rows if r["member"] in set(instances)), key=lambda r: r["ts_ms"])
    return StreamsFound(len(instances), restorations([r for r in rows if r["name"] == "streams_restore"]),
                        rebalancing_ms(rows, lives))


def restorations(rows: list[dict]) -> pd.DataFrame:
    """Each restoration, from its start to its end or suspension, in time order; one never ended is left out."""
    open_: dict[tuple, dict] = {}
    out = []
    for r in rows:
        key = (r["member"], r["store"], r["topic"], r["partition"])
        if r["phase"] == "start":
            open_[key] = r
        elif r["phase"] in ("end", "suspended") and key in open_:
            start = open_.pop(key)
            out.append({"member": r["member"], "store": r["store"], "changelog": r["topic"],
                        "partition": int(r["partition"]), "start_ms": int(start["ts_ms"]), "end_ms": int(r["ts_ms"]),
                        "duration_ms": int(r["ts_ms"]) - int(start["ts_ms"]), "from_offset": start["start_offset"],
                        "to_offset": start["end_offset"], "records": int(r["records"] or 0), "ended": r["phase"]})
    frame = pd.DataFrame(out, columns=SCHEMA.names)
    return frame.astype({"partition": "int64", "start_ms": "int64", "end_ms": "int64", "duration_ms": "int64",
                         "records": "int64", "from_offset": "Int64", "to_offset": "Int64"})


def rebalancing_ms(rows: list[dict], lives: dict[str, MemberLife]) -> int | None:
    """Time with live instances and none of them RUNNING, from the first RUNNING of any instance to the last
    instance's end."""
    changes: list[tuple[int, int, str, str | None]] = []  # (ts, order, member, state or None for the end)
    for r in rows:
        if r["name"] == "started":
            changes.append((int(r["ts_ms"]), 0, r["member"], "CREATED"))
        elif r["name"] == "streams_state":
            changes.append((int(r["ts_ms"]), 1, r["member"], r["to_state"]))
    for member in {r["member"] for r in rows}:
        if member in lives:
            changes.append((lives[member].end_ms, 2, member, None))
    changes.sort()
    state: dict[str, str] = {}
    total, since, ever_running = 0, None, False
    for ts, _, member, to in changes:
        if to is None:
            state.pop(member, None)
        else:
            state[member] = to
        running = any(s == "RUNNING" for s in state.values())
        ever_running = ever_running or running
        stopped_all = ever_running and bool(state) and not running
        if stopped_all and since is None:
            since = ts
        elif not stopped_all and since is not None:
            total += ts - since
            since = None
    return total if ever_running else None


def measured(found: StreamsFound) -> Measured:
    return Measured(CATALOGUE.measure(found), {"streams_restorations": found.restorations})
