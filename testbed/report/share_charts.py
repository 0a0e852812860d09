"""Share-group (KIP-932) figures of one run, from its saved share tables (docs/metrics.md, "Share groups").

The redelivery timeline draws ``share_timeline`` (acquisitions per member per second, by reason), never
the per-delivery table, so its size is bounded by members × seconds whatever the run's volume.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .charts import _marks, add_harness_marks
from .inputs import Missing, NoneFound, RunOutputs

# How each reason for a delivery is drawn: (colour, marker symbol, legend label).
REASON_STYLE: dict[str, tuple[str, str, str]] = {
    "first": ("rgba(120,120,120,0.45)", "square", "first delivery"),
    "released": ("#1f77b4", "circle", "redelivered: released"),
    "lock_expired": ("#ff7f0e", "diamond", "redelivered: lock expired"),
    "member_frozen": ("#9467bd", "diamond-wide", "redelivered: holder frozen"),
    "member_left": ("#2ca02c", "triangle-up", "redelivered: holder left"),
    "member_killed": ("#d62728", "x", "redelivered: holder killed"),
    "concurrent": ("#e377c2", "star", "concurrent acquisition (anomaly)"),
    "after_completion": ("#000000", "star-triangle-up", "after accept/reject (anomaly)"),
    "unjudged": ("#bcbd22", "circle-open", "redelivered: cause unjudged"),
}


NO_SHARE_DELIVERY = NoneFound("no share-group member acquired a record in this run")


def share_config(out: RunOutputs) -> dict[str, Any]:
    """The first ``share_group_config`` detail of the run (lock duration, delivery-count limit), or {}."""
    actions = out.table("harness_actions")
    if actions is None:
        return {}
    rows = actions[actions["kind"] == "share_group_config"]
    if "detail" not in rows.columns or rows.empty:
        return {}
    try:
        return json.loads(rows.iloc[0]["detail"] or "{}")
    except ValueError:
        return {}


def delivery_counts(out: RunOutputs) -> go.Figure | Missing | NoneFound:
    """Records by the highest delivery count the broker gave them, beside records by how many times the
    history saw them delivered; the delivery-count limit as a line."""
    counts = out.table("share_delivery_counts")
    if counts is None:
        return Missing(out.tables["share_delivery_counts"].reason)  # type: ignore[union-attr]
    if counts.empty:
        return NO_SHARE_DELIVERY
    fig = go.Figure()
    x = counts["delivery_count"].astype(int).to_numpy()
    fig.add_trace(go.Bar(x=x, y=counts["records"].to_numpy(), name="records by broker delivery count",
                         hovertemplate="delivery count %{x}: %{y} records<extra></extra>"))
    fig.add_trace(go.Bar(x=x, y=counts["records_by_deliveries"].to_numpy(), name="records by deliveries seen",
                         hovertemplate="delivered %{x} time(s) in the history: %{y} records<extra></extra>"))
    limit = share_config(out).get("delivery_count_limit")
    if limit is not None:
        fig.add_vline(x=int(limit), line=dict(color="#d62728", dash="dash", width=1),
                      annotation_text=f"delivery_count_limit {limit}", annotation_position="top")
    fig.update_layout(height=300, margin=dict(t=40, b=40), barmode="group", xaxis_title="delivery count",
                      yaxis_title="records", xaxis=dict(dtick=1), yaxis_type="log" if counts["records"].max() > 1000 else None)
    return fig


def redelivery_timeline(out: RunOutputs) -> go.Figure | Missing | NoneFound:
    """Acquisitions over time, one row per member: first deliveries as grey squares, redeliveries marked by
    their reason; member and broker faults shaded or drawn as lines (the harness's actions)."""
    timeline = out.table("share_timeline")
    origin = out.time_origin_ms()
    if timeline is None:
        return Missing(out.tables["share_timeline"].reason)  # type: ignore[union-attr]
    if timeline.empty:
        return NO_SHARE_DELIVERY
    if origin is None:
        return Missing("no time origin: neither harness actions nor ownership intervals")
    t = timeline.assign(x=(timeline["second"].astype("int64") * 1000 - origin) / 1000.0)
    members = sorted(t["member"].unique())
    fig = go.Figure()
    for reason, (colour, symbol, label) in REASON_STYLE.items():
        rows = t[t["reason"] == reason]
        if rows.empty:
            continue
        size = 6 + 3 * np.sqrt(rows["acquisitions"].to_numpy()) if reason == "first" else 11
        fig.add_trace(go.Scatter(
            x=rows["x"].to_numpy(), y=rows["member"].to_numpy(), mode="markers", name=label,
            marker=dict(color=colour, symbol=symbol, size=np.minimum(size, 22) if reason == "first" else size,
                        line=dict(width=1, color=colour)),
            customdata=rows["acquisitions"].to_numpy(),
            hovertemplate=f"%{{y}} at %{{x:.0f}} s: %{{customdata}} {label}<extra></extra>"))
    end_s = float(t["x"].max()) + 1
    add_harness_marks(fig, _marks(out), origin, end_s)
    lock = share_config(out).get("record_lock_duration_ms")
    title = f"acquisitions per member per second; lock {lock} ms" if lock is not None else "acquisitions per member per second"
    fig.update_layout(height=max(260, 28 * len(members) + 140), margin=dict(t=40, b=40), xaxis_title="s since run start",
                      title=dict(text=title, font_size=12), legend=dict(font_size=10))
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=members, autorange="reversed")
    return fig
