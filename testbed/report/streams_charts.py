"""Kafka Streams figures of one run: the task timeline (docs/metrics.md, "Kafka Streams instances").

One row per task: its active spans as solid bars and its standby spans as thin pale ones, in the instance's
colour (the colours of the ownership timeline), the restorations drawn over them hatched on the row of their
task, and each move's wait for its assignment as a grey bar from the old owner's last processing, under the
active bars (the old owner lists a task as active until its close, so what shows is the gap).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from ..analysis.streams.tasks import task_partition
from .charts import ROW_PX, _marks, _secs, _timed_table, add_harness_marks, member_colours
from .inputs import Missing, RunOutputs


def task_timeline(out: RunOutputs) -> go.Figure | Missing:
    got = _timed_table(out, "streams_task_spans", "no Streams instance listed a task")
    if isinstance(got, Missing):
        return got
    spans, origin = got
    order = sorted(spans["task"].unique(), key=_task_order)
    colours = member_colours(sorted(spans["member"].unique()))
    fig = go.Figure()
    _add_waits(fig, out.table("streams_task_moves"), origin)  # first: the active bars cover all but the gap
    for (member, role), rows in sorted(spans.groupby(["member", "role"], sort=True), key=lambda g: g[0][1]):
        active = role == "active"
        fig.add_trace(go.Bar(
            orientation="h", y=rows["task"], base=_secs(rows["start_ms"], origin).to_numpy(),
            x=((rows["end_ms"] - rows["start_ms"]) / 1000.0).to_numpy(), width=0.7 if active else 0.25,
            name=f"{member} {role}", legendgroup=str(member), marker_color=colours[member], marker_line_width=0,
            opacity=1.0 if active else 0.45,
            hovertemplate=f"{member} {role}<br>task %{{y}}<br>from %{{base:.2f}} s for %{{x:.2f}} s<extra></extra>"))
    _add_restorations(fig, out.table("streams_restorations"), order, origin)
    add_harness_marks(fig, _marks(out), origin, float(_secs(spans["end_ms"].max(), origin)))
    fig.update_layout(barmode="overlay", height=max(280, ROW_PX * 2 * len(order) + 160),
                      margin=dict(l=70, r=10, t=30, b=30), legend=dict(orientation="v", font_size=10))
    fig.update_yaxes(categoryorder="array", categoryarray=order, autorange="reversed", tickfont_size=9)
    fig.update_xaxes(title_text="s since run start")
    return fig


def _task_order(task: str) -> tuple[int, int] | tuple[float, str]:
    group, _, partition = task.partition("_")
    return (int(group), int(partition)) if group.isdigit() and partition.isdigit() else (float("inf"), task)


def _add_waits(fig: go.Figure, moves: pd.DataFrame | None, origin: int) -> None:
    """Each move's assignment wait: from the old owner's last processing to the new owner's assignment."""
    if moves is None or moves.empty:
        return
    waits = moves.dropna(subset=["last_old_ms", "assigned_ms"])
    if waits.empty:
        return
    fig.add_trace(go.Bar(
        orientation="h", y=waits["task"], base=_secs(waits["last_old_ms"].astype("int64"), origin).to_numpy(),
        x=((waits["assigned_ms"] - waits["last_old_ms"]).astype("int64").clip(lower=1) / 1000.0).to_numpy(),
        width=0.9, name="waiting for its assignment", marker=dict(color="rgba(120,120,120,0.55)"),
        customdata=waits[["from_member", "to_member", "held_as"]].to_numpy(),
        hovertemplate="task %{y}: %{customdata[0]} -> %{customdata[1]} (held as %{customdata[2]})"
                      "<br>waited %{x:.2f} s for its assignment<extra></extra>"))


def _add_restorations(fig: go.Figure, restored: pd.DataFrame | None, order: list[str], origin: int) -> None:
    """Restorations on the row of each task of their partition (a store's changelog partition is its task's)."""
    if restored is None or restored.empty:
        return
    by_partition: dict[int, list[str]] = {}
    for task in order:
        partition = task_partition(task)
        if partition is not None:
            by_partition.setdefault(partition, []).append(task)
    rows = [(task, r) for r in restored.itertuples() for task in by_partition.get(int(r.partition), [])]
    if not rows:
        return
    fig.add_trace(go.Bar(
        orientation="h", y=[t for t, _ in rows], base=[float(_secs(int(r.start_ms), origin)) for _, r in rows],
        x=[max(int(r.duration_ms), 1) / 1000.0 for _, r in rows], width=0.9, name="restoring its store",
        marker=dict(color="rgba(0,0,0,0.15)", line=dict(color="#333", width=1), pattern_shape="/"),
        customdata=[[r.member, int(r.records)] for _, r in rows],
        hovertemplate="task %{y} restoring on %{customdata[0]}<br>%{customdata[1]} records in %{x:.2f} s"
                      "<extra></extra>"))
