"""``render_trials``: configurations side by side from repeated trials, metrics as rows.

Each cell is the median over the trials with its interval (testbed/analysis/trials.py); a metric whose
intervals all overlap is marked "not different": a gap between medians inside the intervals is noise.
A page of one configuration shows its trials' spread alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plotly.graph_objects as go

from ..analysis.trials import Interval, TrialsSummary, overlap
from ..run.layout import RunDir
from .definitions import KEY_METRICS, definition
from .page import figure_html, relative_link, render_page


def finding(intervals: list[Interval], higher_is_better: bool) -> str:
    """Which configuration stands apart on a metric, if any; "not different" when every pair overlaps."""
    known = [(i, iv) for i, iv in enumerate(intervals) if iv.low is not None]
    if len(known) < 2:
        return ""
    apart = [(a, b) for x, (a, ia) in enumerate(known) for (b, ib) in known[x + 1:] if overlap(ia, ib) is False]
    return "not different" if not apart else f"{len(apart)} pair(s) apart"


def trials_context(summary: TrialsSummary, page: Path) -> dict[str, Any]:
    groups = summary.groups
    names = [n for n in KEY_METRICS if any(n in g.metrics for g in groups)]
    names += sorted({n for g in groups for n in g.metrics} - set(names))
    rows = []
    for name in names:
        intervals = [g.metrics.get(name, Interval(n=0)) for g in groups]
        rows.append({
            "name": name, "definition": definition(name), "key": name in KEY_METRICS,
            "unit": next((g.units[name] for g in groups if name in g.units), ""),
            "cells": [iv.model_dump() for iv in intervals],
            "finding": finding(intervals, KEY_METRICS.get(name, False)),
        })
    columns = [{"label": g.label, "statuses": g.statuses,
                "runs": [relative_link(RunDir(Path(d)).report, page) for d in g.run_dirs]} for g in groups]
    return {"title": f"{summary.scenario}: {summary.repeat} trial(s) per configuration", "summary": summary,
            "columns": columns, "rows": rows, "spread": figure_html(spread_figure(summary))}


def spread_figure(summary: TrialsSummary, metric: str = "max_partition_pause_ms") -> go.Figure:
    """Every trial's value of one metric, one strip per configuration, on one axis."""
    fig = go.Figure()
    for g in summary.groups:
        iv = g.metrics.get(metric)
        if iv is not None and iv.values:
            fig.add_trace(go.Box(y=iv.values, name=g.label, boxpoints="all", jitter=0.3, pointpos=0))
    fig.update_layout(height=320, margin=dict(t=30, b=40), yaxis_title=f"{metric} per trial", showlegend=False)
    return fig


def render_trials(summary: TrialsSummary, out_path: Path) -> Path:
    return render_page("trials.html.j2", out_path, **trials_context(summary, out_path))
