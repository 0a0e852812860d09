"""Plotly figures of one run, built from its saved tables; each returns a figure or ``Missing``.

Times are seconds since the run's start (``origin_ms``) so axes and payloads stay small. Up to
TIMELINE_MAX_ROWS partitions, every ownership interval is drawn, merged into one bar trace per member
instead of one shape each. A larger run (a 1,000-member group over 10,000 partitions has 130,000
intervals) gets the density view instead, which a browser opens in seconds: blocks of partitions by
time bins, coloured by the share of the block owned, with every duplicate ownership drawn over it; the
intervals themselves are in tables/ownership_intervals.parquet. Harness marks of one kind closer than
1/MARK_RESOLUTION of the run merge into one line (a fleet start is one line, not 1,000).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from testbed.history.events import Action

from .host_charts import add_host_row
from .inputs import HarnessMark, Missing, NoneFound, RunOutputs
from .series import latency_series, rates

PALETTE: list[str] = qualitative.Dark24 + qualitative.Light24 + qualitative.Alphabet
ROW_PX = 14
TIMELINE_MAX_ROWS = 200  # partitions drawn one row each; above, rows are blocks of partitions
TIMELINE_BINS = 300  # time bins of the density view
MARK_RESOLUTION = 500  # instants of one kind closer than run length / this are drawn as one line

# How each harness action is drawn: (colour, dash or None for a band, legend label).
MARK_STYLE: dict[Action, tuple[str, str | None, str]] = {
    Action.BOUNCE_START: ("rgba(31,119,180,0.12)", None, "bounce"),
    Action.MEMBER_PAUSE: ("rgba(255,127,14,0.18)", None, "member paused"),
    Action.MEMBER_STALL: ("rgba(188,189,34,0.20)", None, "member poll loop stalled"),
    Action.BROKER_PAUSE: ("rgba(80,80,80,0.18)", None, "broker paused"),
    Action.MEMBER_PARTITION: ("rgba(148,103,189,0.18)", None, "member partitioned"),
    Action.BROKER_PARTITION: ("rgba(140,86,75,0.18)", None, "broker partitioned"),
    Action.BROKER_LATENCY: ("rgba(23,190,207,0.15)", None, "broker latency"),
    Action.MEMBER_KILL: ("#d62728", "dash", "member killed"),
    Action.MEMBER_STOP: ("#7f7f7f", "dot", "member stopped"),
    Action.MEMBER_START: ("#2ca02c", "dot", "member started"),
    Action.MEMBER_CRASH: ("#8b0000", "solid", "program crashed"),
    Action.MEMBER_RESTART: ("#8b0000", "dot", "program restarted"),
    Action.BROKER_KILL: ("#000000", "dash", "broker killed"),
    Action.BROKER_STOP: ("#444444", "dot", "broker stopped"),
    Action.BROKER_START: ("#444444", "dashdot", "broker started"),
    Action.BROKER_RESTART: ("#000000", "dashdot", "broker restarted"),
    Action.SCALE_OUT: ("#2ca02c", "dashdot", "scale out"),
    Action.SCALE_IN: ("#9467bd", "dashdot", "scale in"),
    Action.ADD_PARTITIONS: ("#8c564b", "dashdot", "partitions added"),
    Action.FEATURES_UPGRADE: ("#17becf", "dashdot", "feature levels raised"),
    Action.NODE_LOST: ("#d62728", "longdash", "node lost"),
    Action.INTERRUPTED: ("#d62728", "solid", "interrupted"),
}


def member_colours(members: Sequence[str]) -> dict[str, str]:
    """One colour per member, stable for a given set of members across every chart of a page."""
    return {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(sorted(members))}


def _secs(ms: pd.Series | int, origin_ms: int) -> pd.Series | float:
    return (ms - origin_ms) / 1000.0


def _partition_labels(frame: pd.DataFrame) -> pd.Series:
    return frame["topic"].astype(str) + "-" + frame["partition"].astype(int).astype(str)


def add_harness_marks(fig: go.Figure, marks: Sequence[HarnessMark], origin_ms: int, run_end_s: float | None) -> None:
    """Instants as vertical lines, spans (bounces, pauses) as bands, over the whole plot height."""
    shown: set[str] = set()
    shapes: list[dict] = []
    merge_s = (run_end_s or 0.0) / MARK_RESOLUTION
    last_line: dict[str, float] = {}
    for mark in sorted(marks, key=lambda m: m.start_ms):
        colour, dash, label = MARK_STYLE.get(mark.kind, ("#bcbd22", "dot", mark.kind))
        x0 = _secs(mark.start_ms, origin_ms)
        if dash is not None:
            if label in last_line and x0 - last_line[label] < merge_s:
                continue
            last_line[label] = x0
        shape = dict(xref="x", yref="paper", y0=0, y1=1, name=label, legendgroup=label, showlegend=label not in shown,
                     layer="above", x0=x0)  # translucent, so bands stay visible over the ownership bars
        shown.add(label)
        if dash is None:
            x1 = _secs(mark.end_ms, origin_ms) if mark.end_ms is not None else (run_end_s if run_end_s is not None else x0)
            shape.update(type="rect", x1=x1, fillcolor=colour, line_width=0)
        else:
            shape.update(type="line", x1=x0, line=dict(color=colour, dash=dash, width=1))
        shapes.append(shape)
    # One assignment: add_shape re-validates every earlier shape, quadratic in their number.
    fig.update_layout(shapes=list(fig.layout.shapes) + shapes)


def _marks(out: RunOutputs) -> list[HarnessMark]:
    return list(out.harness.value) if not isinstance(out.harness, Missing) else []


def _run_end_s(out: RunOutputs, origin_ms: int) -> float | None:
    owners = out.table("ownership_intervals")
    return float(_secs(owners["end_ms"].max(), origin_ms)) if owners is not None and len(owners) else None


def _timed_table(out: RunOutputs, name: str, empty_reason: str) -> tuple[pd.DataFrame, int] | Missing:
    """A table with rows and the run's time origin, or why a chart of it cannot be drawn."""
    frame = out.table(name)
    origin = out.time_origin_ms()
    if frame is None:
        return Missing(out.tables[name].reason)  # type: ignore[union-attr]
    if frame.empty or origin is None:
        return Missing(empty_reason)
    return frame, origin


def ownership_timeline(out: RunOutputs, *, compact: bool = False, origin_ms: int | None = None,
                       x_range: tuple[float, float] | None = None, axis_title: str = "s since run start",
                       ) -> go.Figure | Missing:
    """Every ownership interval; ``compact`` (comparisons) draws thin rows without a legend. ``origin_ms``
    and ``x_range`` put several runs on one time axis (a comparison's: seconds since each run's first bounce)."""
    got = _timed_table(out, "ownership_intervals", "no ownership intervals: no member was ever assigned a partition")
    if isinstance(got, Missing):
        return got
    owners, origin = got
    origin = origin if origin_ms is None else origin_ms
    if owners[["topic", "partition"]].drop_duplicates().shape[0] > TIMELINE_MAX_ROWS:
        fig = ownership_density(out, owners, origin, compact=compact)
    else:
        fig = _ownership_bars(out, owners, origin, compact)
    fig.update_xaxes(title_text=axis_title, range=list(x_range) if x_range else None)
    return fig


def _ownership_bars(out: RunOutputs, owners: pd.DataFrame, origin: int, compact: bool) -> go.Figure:
    owners = owners.sort_values(["topic", "partition", "start_ms"])
    owners = owners.assign(label=_partition_labels(owners), t0=_secs(owners["start_ms"], origin),
                           width=(owners["end_ms"] - owners["start_ms"]) / 1000.0)
    order = list(dict.fromkeys(owners["label"]))
    colours = member_colours(owners["member"].unique())
    fig = go.Figure()
    for member, rows in owners.groupby("member", sort=True):
        fig.add_trace(go.Bar(
            orientation="h", y=rows["label"], base=rows["t0"].to_numpy(), x=rows["width"].to_numpy(),
            name=str(member), marker_color=colours[member], marker_line_width=0, width=0.8,
            customdata=rows["end_reason"].to_numpy(),
            hovertemplate=f"{member}<br>%{{y}}<br>from %{{base:.2f}} s for %{{x:.2f}} s<br>ended: %{{customdata}}<extra></extra>",
        ))
    dups = out.table("duplicate_ownership")
    if dups is not None and len(dups):
        fig.add_trace(go.Bar(
            orientation="h", y=_partition_labels(dups), base=_secs(dups["start_ms"], origin).to_numpy(),
            x=(dups["duration_ms"].clip(lower=1) / 1000.0).to_numpy(), width=1.0, name="duplicate ownership",
            marker=dict(color="rgba(214,39,40,0.35)", line=dict(color="#d62728", width=2), pattern_shape="x"),
            customdata=dups["members"].to_numpy(),
            hovertemplate="duplicate ownership<br>%{y}: %{customdata}<br>from %{base:.2f} s for %{x:.3f} s<extra></extra>",
        ))
    add_harness_marks(fig, _marks(out), origin, _run_end_s(out, origin))
    rows_px = max(3, ROW_PX // 3) if compact else ROW_PX
    fig.update_layout(
        barmode="overlay", height=max(160 if compact else 320, rows_px * len(order) + (60 if compact else 160)),
        showlegend=not compact, margin=dict(l=60 if compact else 90, r=10, t=10 if compact else 30, b=30),
        legend=dict(orientation="v", font_size=10),
    )
    fig.update_yaxes(categoryorder="array", categoryarray=order, autorange="reversed",
                     showticklabels=not compact or len(order) <= 12, tickfont_size=9)
    return fig


def ownership_density(out: RunOutputs, owners: pd.DataFrame, origin: int, *, compact: bool = False) -> go.Figure:
    """Blocks of partitions (rows, in topic and partition order) by time bins: the share of the block's
    partition-time that had an owner (1 = all owned; above 1 only where two members owned one partition).
    Pauses show as pale cells; duplicate ownership is drawn over them from its own table."""
    keys = owners[["topic", "partition"]].drop_duplicates().sort_values(["topic", "partition"])
    per_row = -(-len(keys) // TIMELINE_MAX_ROWS)
    index = {(t, int(p)): i for i, (t, p) in enumerate(keys.itertuples(index=False))}
    row_labels = [f"{keys.iloc[i]['topic']}-{int(keys.iloc[i]['partition'])}"
                  f"{'' if per_row == 1 else '..' + str(int(keys.iloc[min(i + per_row, len(keys)) - 1]['partition']))}"
                  for i in range(0, len(keys), per_row)]
    t0 = (_secs(owners["start_ms"], origin)).to_numpy()
    t1 = (_secs(owners["end_ms"], origin)).to_numpy()
    rows = np.array([index[(t, int(p))] // per_row for t, p in zip(owners["topic"], owners["partition"])])
    end = float(t1.max()) if len(t1) else 1.0
    edges = np.linspace(0.0, max(end, 1e-3), TIMELINE_BINS + 1)
    share = np.zeros((len(row_labels), TIMELINE_BINS))
    for row in range(len(row_labels)):
        mine = rows == row
        if not mine.any():
            continue
        # Owned time up to each edge, summed over the row's intervals: F(x) = sum clip(x - t0, 0, t1 - t0).
        covered = np.clip(edges[None, :] - t0[mine, None], 0.0, (t1[mine] - t0[mine])[:, None]).sum(axis=0)
        share[row] = np.diff(covered)
    partitions_in_row = np.diff(np.append(np.arange(0, len(keys), per_row), len(keys)))
    share /= partitions_in_row[:, None] * np.diff(edges)[None, :]
    centres = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure(go.Heatmap(
        z=np.round(share, 3), x=centres, y=row_labels, zmin=0, zmax=1, colorscale=DENSITY_SCALE,
        colorbar=dict(title="owned", len=0.6) if not compact else None, showscale=not compact,
        hovertemplate="%{y}<br>%{x:.1f} s: %{z:.0%} of the partition-time owned<extra></extra>",
    ))
    dups = out.table("duplicate_ownership")
    if dups is not None and len(dups):
        dup_rows = [row_labels[index[(t, int(p))] // per_row] for t, p in zip(dups["topic"], dups["partition"])]
        fig.add_trace(go.Bar(
            orientation="h", y=dup_rows, base=_secs(dups["start_ms"], origin).to_numpy(),
            x=(dups["duration_ms"].clip(lower=1) / 1000.0).to_numpy(), width=1.0, name="duplicate ownership",
            marker=dict(color="rgba(214,39,40,0.35)", line=dict(color="#d62728", width=2)),
            customdata=dups["members"].to_numpy(),
            hovertemplate="duplicate ownership<br>%{y}: %{customdata}<br>from %{base:.2f} s for %{x:.3f} s<extra></extra>",
        ))
    add_harness_marks(fig, _marks(out), origin, end)
    fig.update_layout(
        height=max(160 if compact else 320, (4 if compact else 6) * len(row_labels) + (60 if compact else 160)),
        margin=dict(l=60 if compact else 120, r=10, t=10 if compact else 30, b=30), showlegend=not compact,
        title=None if compact else dict(text=f"{len(keys)} partitions in {len(row_labels)} rows of {per_row}: "
                                             "share of each row's partition-time with an owner", font_size=12))
    fig.update_yaxes(autorange="reversed", showticklabels=not compact, tickfont_size=9, type="category")
    return fig


# Unowned is what the eye must find: pale red at 0, through white, to the owned colour at 1.
DENSITY_SCALE = [[0.0, "#d62728"], [0.5, "#f7f7f7"], [0.9, "#9ecae1"], [1.0, "#2171b5"]]

PAUSE_CAUSES = ("rebalance", "member_freeze", "member_partition", "member_death", "member_stop", "broker_fault",
                "host_saturated", "none")


def partition_pause_figures(out: RunOutputs) -> tuple[go.Figure, go.Figure] | Missing | NoneFound:
    """(pause lengths by cause, one strip per rebalance episode or cause), from the availability gaps."""
    pauses = out.table("partition_pauses")
    if pauses is None:
        return Missing(out.tables["partition_pauses"].reason)  # type: ignore[union-attr]
    real = pauses[pauses["kind"] == "pause"]
    if real.empty:
        return NoneFound("no partition paused in this run: no acknowledged record ever waited while nobody "
                         "processed its partition, after the partition's first processing")
    by_cause = go.Figure()
    for cause in PAUSE_CAUSES:
        rows = real[real["cause"] == cause]
        if len(rows):
            by_cause.add_trace(go.Histogram(x=rows["pause_ms"].to_numpy(), name=cause, nbinsx=40,
                                            hovertemplate=f"{cause}: %{{x}} ms, %{{y}} pauses<extra></extra>"))
    by_cause.update_layout(height=300, margin=dict(t=30, b=40), barmode="stack", xaxis_title="single pause (ms)",
                           yaxis_title="pauses", bargap=0.05, legend_title_text="cause")
    group = real["episode_id"].map(lambda e: f"episode {int(e)}" if pd.notna(e) else None)
    group = group.where(group.notna(), real["cause"])
    # a pause shorter than the uncertainty of the clocks it was measured across (members on other machines) says so
    marked = (real["within_clock_uncertainty"].eq(True) if "within_clock_uncertainty" in real  # null: not known
              else pd.Series(False, index=real.index))
    clocks = marked.map(lambda m: ", shorter than the clocks' uncertainty" if m else "")
    per_episode = go.Figure(go.Box(x=group.to_numpy(), y=real["pause_ms"].to_numpy(), boxpoints="all", jitter=0.4,
                                   pointpos=0, name="partition pause",
                                   customdata=real[["partition", "cause"]].assign(clocks=clocks).to_numpy(),
                                   hovertemplate="partition %{customdata[0]} (%{customdata[1]}): %{y} ms"
                                                 "%{customdata[2]}<extra></extra>"))
    per_episode.update_layout(height=320, margin=dict(t=30, b=40), xaxis_title="rebalance episode (or cause outside one)",
                              yaxis_title="partition pause (ms)", xaxis_type="category")
    return by_cause, per_episode


def revocation_heatmap(out: RunOutputs) -> go.Figure | Missing | NoneFound:
    revs = out.table("revocations")
    if revs is None:
        return Missing(out.tables["revocations"].reason)  # type: ignore[union-attr]
    if revs.empty:
        return NoneFound("no revocation in this run: no member lost or gave up a partition")
    episode = revs["episode_id"].map(lambda e: "outside" if pd.isna(e) else f"#{int(e)}")
    counts = revs.assign(episode=episode).pivot_table(index="member", columns="episode", values="partition",
                                                      aggfunc="count", fill_value=0)
    needless = revs.assign(episode=episode, needless=revs["needless"].fillna(False).astype(int)).pivot_table(
        index="member", columns="episode", values="needless", aggfunc="sum", fill_value=0
    ).reindex_like(counts).fillna(0)
    columns = sorted(counts.columns, key=lambda c: (c == "outside", int(c[1:]) if c != "outside" else 0))
    counts, needless = counts[columns], needless[columns]
    fig = go.Figure(go.Heatmap(
        z=counts.to_numpy(), x=columns, y=list(counts.index), customdata=needless.to_numpy(), colorscale="Reds",
        hovertemplate="%{y} in episode %{x}: %{z} revoked (%{customdata} needless)<extra></extra>",
        colorbar_title="revoked",
    ))
    fig.update_layout(height=max(260, 16 * len(counts) + 120), margin=dict(t=30, b=40), xaxis_type="category",
                      xaxis_title="rebalance episode", yaxis_title="member")
    return fig


def over_time(out: RunOutputs) -> go.Figure | Missing:
    """Throughput, lag, end-to-end latency and the host's saturation on one shared time axis, with the harness
    markers."""
    got = _timed_table(out, "timeseries", "the timeseries table is empty: nothing was processed")
    if isinstance(got, Missing):
        return got
    ts, origin = got
    series = rates(ts, origin / 1000.0)
    latency = out.tables["latency_timeseries"]
    lat = latency if isinstance(latency, Missing) else latency_series(latency.value, origin)
    fig = make_subplots(rows=4, cols=1, shared_xaxes=True, vertical_spacing=0.05,
                        subplot_titles=("throughput (records/s)", "lag (records)",
                                        "end-to-end latency per batch (ms, upper bound from produce_ts_min)",
                                        "host: CPU, % of all cores (saturated intervals marked above)"))
    for col, name in (("processed", "processed"), ("processed_unique", "processed (first time)"),
                      ("produced", "produced (acked)")):
        if series[col].notna().any():
            fig.add_trace(go.Scatter(x=series["t"], y=series[col], mode="lines", name=name), row=1, col=1)
    if series["lag"].notna().any():
        fig.add_trace(go.Scatter(x=series["t"], y=series["lag"], mode="lines", name="lag"), row=2, col=1)
    else:
        fig.add_annotation(text="lag not available: no ack logs", xref="x2 domain", yref="y2 domain", x=0.5, y=0.5,
                           showarrow=False)
    if not isinstance(lat, Missing) and len(lat):
        for col in ("p50", "p99", "max"):
            fig.add_trace(go.Scatter(x=lat["t"], y=lat[col], mode="lines", name=f"latency {col}"), row=3, col=1)
    else:
        why = lat.reason if isinstance(lat, Missing) else "no processed batch carries produce_ts_min_ms"
        fig.add_annotation(text=f"latency not available: {why}", xref="x3 domain", yref="y3 domain", x=0.5, y=0.5,
                           showarrow=False)
    add_host_row(fig, out, origin, row=4)
    add_harness_marks(fig, _marks(out), origin, _run_end_s(out, origin))
    fig.update_layout(height=940, margin=dict(t=40, b=40), hovermode="x unified")
    fig.update_xaxes(title_text="s since run start", row=4, col=1)
    return fig


def broker_vs_clients(out: RunOutputs) -> go.Figure | Missing | NoneFound:
    """Each episode as the clients saw it beside the broker's prepare→stabilized span and its log events."""
    episodes = out.table("rebalance_episodes")
    if episodes is not None and episodes.empty:
        return NoneFound("no rebalance episode in this run: no member joined, left, was fenced or died after the "
                         "group first formed")
    got = _timed_table(out, "rebalance_episodes", "no time origin: neither harness actions nor ownership intervals")
    if isinstance(got, Missing):
        return got
    episodes, origin = got
    broker = out.table("broker_rebalances")
    fig = go.Figure()
    fig.add_trace(go.Bar(orientation="h", y=["clients"] * len(episodes), base=_secs(episodes["start_ms"], origin).to_numpy(),
                         x=(episodes["duration_ms"] / 1000.0).to_numpy(), name="client episode", width=0.5,
                         customdata=episodes[["episode_id", "trigger"]].to_numpy(),
                         hovertemplate="episode %{customdata[0]} (%{customdata[1]})<br>%{x:.3f} s<extra></extra>"))
    paired = episodes.dropna(subset=["broker_prepare_ms", "broker_stabilized_ms"])
    if len(paired):
        fig.add_trace(go.Bar(orientation="h", y=["broker"] * len(paired),
                             base=_secs(paired["broker_prepare_ms"], origin).to_numpy(),
                             x=((paired["broker_stabilized_ms"] - paired["broker_prepare_ms"]) / 1000.0).to_numpy(),
                             name="broker prepare→stabilized", width=0.5, customdata=paired["episode_id"].to_numpy(),
                             hovertemplate="episode %{customdata}: broker %{x:.3f} s<extra></extra>"))
    if broker is not None and len(broker):
        for event, rows in broker.groupby("event"):
            fig.add_trace(go.Scatter(x=_secs(rows["ts_ms"], origin), y=[f"broker: {event}"] * len(rows), mode="markers",
                                     name=f"broker {event}", customdata=rows["generation"].to_numpy(),
                                     hovertemplate=f"{event} gen/epoch %{{customdata}}<extra></extra>"))
    add_harness_marks(fig, _marks(out), origin, _run_end_s(out, origin))
    fig.update_layout(barmode="overlay", height=320, margin=dict(t=30, b=40), xaxis_title="s since run start")
    return fig
