"""``render_trends``: every run under a folder, each key figure over time, and where it moved beyond the
trials' interval from one testbed revision to the next (testbed.analysis.runs.across_runs).

One chart per key metric: x = when the run started, one series per configuration (scenario and matrix point),
hover names the run, its trial and revision. Above them, the changes, worse ones first, and below, how many runs
each configuration has per revision. The runs table itself is beside the page (runs.csv, runs.parquet).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ..analysis.runs.across_runs import MIN_RUNS
from .definitions import KEY_METRICS, definition
from .page import figure_html, render_page

MAX_CONFIGURATIONS_PER_CHART = 12  # beyond this the legend is noise: the busiest configurations are drawn


def _label(row: pd.Series) -> str:
    return f"{row['scenario']} [{row['point']}]" if row["point"] else str(row["scenario"])


def trend_figure(table: pd.DataFrame, metric: str) -> go.Figure:
    fig = go.Figure()
    known = table[table[metric].notna()]
    busiest = known.groupby("configuration").size().sort_values(ascending=False).index[:MAX_CONFIGURATIONS_PER_CHART]
    for configuration in sorted(busiest):
        runs = known[known["configuration"] == configuration]
        fig.add_trace(go.Scatter(
            x=pd.to_datetime(runs["started_ms"], unit="ms", utc=True), y=runs[metric], mode="lines+markers",
            name=configuration, text=[f"{r.run}<br>trial {r.trial}, revision {r.testbed_revision}"
                                      for r in runs.itertuples()],
            hovertemplate="%{y}<br>%{text}<extra>%{fullData.name}</extra>"))
    fig.update_layout(title=metric, height=340, margin={"l": 50, "r": 10, "t": 40, "b": 40},
                      legend={"font": {"size": 10}}, showlegend=True)
    return fig


def change_rows(found: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for change in found.itertuples():
        lower_is_better = KEY_METRICS.get(change.metric) is False
        higher_is_better = KEY_METRICS.get(change.metric) is True
        worse = (change.direction == "higher" and lower_is_better) or (change.direction == "lower" and higher_is_better)
        better = (change.direction == "higher" and higher_is_better) or (change.direction == "lower" and lower_is_better)
        rows.append({**change._asdict(), "judgement": "worse" if worse else "better" if better else "moved",
                     "key": change.metric in KEY_METRICS, "definition": definition(change.metric)})
    rows.sort(key=lambda r: (r["judgement"] != "worse", not r["key"], r["scenario"], r["metric"]))
    return rows


def render_trends(table: pd.DataFrame, found: pd.DataFrame, out_path: Path, title: str) -> Path:
    table = table.assign(configuration=table.apply(_label, axis=1) if len(table) else pd.Series(dtype=str))
    metrics = [m for m in KEY_METRICS if m in table.columns and table[m].notna().any()]
    charts = [{"metric": m, "definition": definition(m), **figure_html(trend_figure(table, m))} for m in metrics]
    per_revision = (table.groupby(["configuration", "testbed_revision"]).size().reset_index(name="runs")
                    .to_dict("records") if len(table) else [])
    return render_page("trends.html.j2", out_path, title=title, runs=len(table), charts=charts,
                       changes=change_rows(found), per_revision=per_revision, min_runs=MIN_RUNS,
                       configurations=table["configuration"].nunique() if len(table) else 0,
                       revisions=table["testbed_revision"].nunique() if len(table) else 0,
                       unanalysed=int(table[metrics].isna().all(axis=1).sum()) if metrics else len(table))
