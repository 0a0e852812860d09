"""How long each member took to close after the harness asked it to stop, and which closes hung.

A close starts at the harness's ``member_stop`` (SIGTERM to the runner) and ends at the member's own
``stopped`` event, written when the client's ``close()`` returned. A member that wrote no ``stopped``
event but whose process ended by itself within the stop timeout closed at its exit (``closed_ms`` from
the harness's ``member_exit``). A member the fleet had to SIGKILL after the timeout (``stop_timeout``)
did not close: its close is a hang (librdkafka#4527: close() blocked mid-rebalance), and its
``close_ms`` is unknown, never the timeout. ``during_rebalance``: the stop came while a rebalance episode
that began before it was still under way (the case those reports are about).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from ...history.events import Action
from .episodes import Episode
from ..stage import Catalogue, Measured, Metric, Unknown
from ..view.lives import MemberEvent

SCHEMA = pa.schema([("member", pa.string()), ("stop_ms", pa.int64()), ("closed_ms", pa.int64()),
                    ("close_ms", pa.int64()), ("exit_ms", pa.int64()), ("cause", pa.string()),
                    ("reason", pa.string()), ("hung", pa.bool_()), ("during_rebalance", pa.bool_())])
COLUMNS = tuple(SCHEMA.names)


def member_closes(harness: list[dict[str, Any]], by_member: dict[str, list[MemberEvent]],
                  episodes: Sequence[Episode] = ()) -> pd.DataFrame:
    """One row per stop the harness asked for; a member stopped twice (never: ids are per process) keeps the first."""
    stops: dict[str, dict[str, Any]] = {}
    for h in harness:
        target = h["target"]
        if h["kind"] == Action.MEMBER_STOP and target and target not in stops:
            stops[target] = {"stop_ms": int(h["ts_ms"]), "reason": h["detail"].get("reason") or "step"}
        elif h["kind"] == Action.MEMBER_EXIT and target in stops and "exit_ms" not in stops[target]:
            stops[target].update(exit_ms=int(h["ts_ms"]), cause=str(h["detail"].get("cause") or "exited"))
    rows = []
    for member, stop in sorted(stops.items()):
        cause = stop.get("cause")
        stopped = next((e.ts for e in by_member.get(member, []) if e.name == "stopped" and e.ts >= stop["stop_ms"]),
                       None)
        hung = cause == "stop_timeout"
        if hung:
            closed = None
        elif stopped is not None:
            closed = stopped
        elif cause in ("stopped", "exited"):
            closed = stop.get("exit_ms")
        else:  # killed while closing, or no exit recorded: when the close would have ended is unknown
            closed = None
        rows.append({"member": member, "stop_ms": stop["stop_ms"], "closed_ms": closed,
                     "close_ms": closed - stop["stop_ms"] if closed is not None else None,
                     "exit_ms": stop.get("exit_ms"), "cause": cause, "reason": stop["reason"], "hung": hung,
                     "during_rebalance": any(ep.start_ms < stop["stop_ms"] <= ep.end_ms and not ep.teardown
                                             for ep in episodes)})
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("closed_ms", "close_ms", "exit_ms"):
        frame[column] = frame[column].astype("Int64")
    frame["hung"] = frame["hung"].astype(bool)
    frame["during_rebalance"] = frame["during_rebalance"].astype(bool)
    return frame


def _finished(closes: pd.DataFrame, stat: str) -> int | Unknown:
    """A statistic of the closes that finished; unknown when none was asked for or none finished."""
    if not len(closes):
        return Unknown("no member was asked to stop")
    finished = closes["close_ms"].dropna()
    if not len(finished):
        return Unknown("no asked-for close finished (each was killed or hung)")
    return int(getattr(finished, stat)())


CATALOGUE: Catalogue[pd.DataFrame] = Catalogue(
    Metric("member_closes", "count", "stops the harness asked for (stop steps, clean bounces and scale-ins, the "
           "fleet's teardown)",
           len),
    Metric("close_p50_ms", "ms", "median time from the harness's stop request to the member's own `stopped` event "
           "(close() returned)",
           lambda c: _finished(c, "median")),
    Metric("close_max_ms", "ms", "longest of those close times; a hung close is not among them",
           lambda c: _finished(c, "max")),
    Metric("close_hangs", "count", "closes still unfinished at the fleet's stop timeout (30 s), ended by SIGKILL: a "
           "hang",
           lambda c: int(c["hung"].sum()) if len(c) else 0),
    Metric("closes_during_rebalance", "count", "stops asked for while a rebalance that began before them was under way",
           lambda c: int(c["during_rebalance"].sum()) if len(c) else 0),
)


def measured(closes: pd.DataFrame) -> Measured:
    return Measured(CATALOGUE.measure(closes), {"member_closes": closes})
