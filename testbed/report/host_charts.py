"""The host's samples on a run's time axis: CPU busy, waiting and steal, each role's CPU, and the saturated
intervals marked (table ``host_samples``; "saturated" is defined in docs/metrics.md, "Host").

A run saved before the sampler existed has no samples: the row says its host is unknown instead of drawing
an idle machine.
"""

from __future__ import annotations

import plotly.graph_objects as go

from .inputs import Missing, RunOutputs

# (column, legend label, line style) of each series, the machine's first, then the roles'.
SERIES = (("cpu_busy_pct", "host CPU busy", dict(color="#111111", width=2)),
          ("cpu_pressure_pct", "host: a task waiting for a CPU (share of time)", dict(color="#ff7f0e", dash="dot")),
          ("cpu_steal_pct", "host CPU steal", dict(color="#8c564b", dash="dash")),
          ("brokers_cpu_pct", "CPU: brokers", dict(width=1)), ("members_cpu_pct", "CPU: members", dict(width=1)),
          ("load_cpu_pct", "CPU: load", dict(width=1)), ("analysis_cpu_pct", "CPU: analysis", dict(width=1)),
          ("harness_cpu_pct", "CPU: harness", dict(width=1)), ("other_cpu_pct", "CPU: other processes", dict(width=1)))


def add_host_row(fig: go.Figure, out: RunOutputs, origin_ms: int, row: int) -> None:
    """Draw the host's series into ``row`` of a figure whose rows share one time axis."""
    frame = out.table("host_samples")
    if frame is None or frame.empty:
        loaded = out.tables.get("host_samples")
        why = loaded.reason if isinstance(loaded, Missing) else (
            "no host samples: this run was saved before the host sampler existed, or its host could not be sampled")
        fig.add_annotation(text=f"host unknown: {why}", xref=f"x{row} domain", yref=f"y{row} domain", x=0.5, y=0.5,
                           showarrow=False)
        return
    t = (frame["ts_ms"] - origin_ms) / 1000.0
    for column, label, line in SERIES:
        if column in frame and frame[column].notna().any():
            fig.add_trace(go.Scatter(x=t, y=frame[column], mode="lines", name=label, line=line, legendgroup="host",
                                     hovertemplate=f"{label}: %{{y:.0f}} %<extra></extra>"), row=row, col=1)
    saturated = frame[frame["saturated"].fillna(False).astype(bool)]
    if len(saturated):
        fig.add_trace(go.Scatter(
            x=(saturated["ts_ms"] - origin_ms) / 1000.0, y=[102.0] * len(saturated), mode="markers",
            name="host saturated", legendgroup="host", marker=dict(color="#d62728", symbol="square", size=5),
            customdata=saturated["saturated_by"].fillna("").to_numpy(),
            hovertemplate="saturated: %{customdata}<extra></extra>"), row=row, col=1)
    fig.update_yaxes(range=[0, 106], row=row, col=1)
