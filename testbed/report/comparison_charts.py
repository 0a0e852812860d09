"""Charts that put runs side by side: pause distributions on one axis, ownership timelines on one time axis.

A comparison's columns are runs, or the trials of one configuration (pooled). Every figure is drawn from
the runs' saved tables; a run lacking one is named with the reason instead of silently left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from testbed.history.events import FAULTS, Action

from . import charts
from .inputs import Got, Missing, RunOutputs

POINTS_MAX = 2_000  # above this many pauses in a column, only the outliers are drawn as points


@dataclass(frozen=True)
class Origin:
    """Zero of a run's comparison time axis, and what it is."""

    ms: int
    what: str  # "first bounce", "first fault" or "run start"


def comparison_origin(run: RunOutputs) -> Origin | None:
    """A run's first bounce, else its first fault, else its start: runs line up at the moment that costs."""
    marks = run.harness.value if isinstance(run.harness, Got) else []
    for kinds, what in (({Action.BOUNCE_START}, "first bounce"), (FAULTS, "first fault")):
        starts = [m.start_ms for m in marks if m.kind in kinds]
        if starts:
            return Origin(min(starts), what)
    start = run.time_origin_ms()
    return Origin(start, "run start") if start is not None else None


def pause_distributions(labels: Sequence[str], columns: Sequence[Sequence[RunOutputs]]) -> tuple[go.Figure | Missing,
                                                                                                 list[str]]:
    """One box of single partition pauses per column, on one axis; and why a column has none to show."""
    fig, absent = go.Figure(), []
    for label, runs in zip(labels, columns):
        lengths, unread = [], 0
        for run in runs:
            pauses = run.tables["partition_pauses"]
            if isinstance(pauses, Missing):
                absent.append(f"{label} ({run.name}): {pauses.reason}")
                unread += 1
                continue
            frame = pauses.value
            lengths.extend(frame.loc[frame["kind"] == "pause", "pause_ms"].tolist())
        if not lengths:
            if unread < len(runs):
                absent.append(f"{label}: no partition pause")
            continue
        fig.add_trace(go.Box(y=lengths, name=label, boxpoints="all" if len(lengths) <= POINTS_MAX else "outliers",
                             jitter=0.4, pointpos=0, marker_size=4,
                             hovertemplate=f"{label}: %{{y}} ms<extra></extra>"))
    if not fig.data:
        return Missing("no run has a partition pause to show" + (f" ({'; '.join(absent)})" if absent else "")), absent
    fig.update_layout(height=360, margin=dict(t=20, b=40), showlegend=False, yaxis_title="single partition pause (ms)",
                      xaxis_type="category")
    return fig, absent


def stacked_timelines(labels: Sequence[str], runs: Sequence[RunOutputs]) -> list[dict]:
    """One ownership timeline per run, full width, every one on the same axis: seconds since its first bounce."""
    origins = [comparison_origin(r) for r in runs]
    spans = []
    for run, origin in zip(runs, origins):
        owners = run.table("ownership_intervals")
        if origin is not None and owners is not None and len(owners):
            spans.append(((owners["start_ms"].min() - origin.ms) / 1000, (owners["end_ms"].max() - origin.ms) / 1000))
    x_range = (min(s[0] for s in spans), max(s[1] for s in spans)) if spans else None
    out = []
    for label, run, origin in zip(labels, runs, origins):
        if origin is None:
            figure: go.Figure | Missing = Missing("no time origin: neither harness actions nor ownership intervals")
        else:
            figure = charts.ownership_timeline(run, compact=True, origin_ms=origin.ms, x_range=x_range,
                                               axis_title=f"s since {origin.what}")
        out.append({"label": label, "run": run.name, "origin": origin.what if origin else None, "figure": figure})
    return out
