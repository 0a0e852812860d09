"""``render_comparison`` (runs side by side) and ``render_index`` (every run under a reports root).

A comparison puts metrics in rows and runs (or configurations of repeated trials) in columns, so it fits
any width with the answer's rows first; trials give each cell its median and interval, and a row whose
intervals all overlap says "not different".
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.runs.trials import Interval, overlap
from ..run.layout import RunDir
from .comparison_charts import pause_distributions, stacked_timelines
from .definitions import ANSWER_METRICS, KEY_METRICS, STREAMS_KEY_METRICS, definition
from .group_kinds import has_streams
from .host_note import host_note
from .inputs import Got, Missing, RunOutputs, load_run
from .page import figure_html, relative_link, render_page
from .run_report import verdict


@dataclass(frozen=True)
class Column:
    """One column of a comparison: a run, or the repeated trials of one configuration (a matrix point)."""

    label: str
    runs: list[RunOutputs]
    report: str | None = None  # link to the run's report (single runs)
    intervals: dict[str, Interval] | None = None  # trials: each metric's median and interval (analysis/runs/trials.py)
    units: dict[str, str] = field(default_factory=dict)
    statuses: list[tuple[str, str | None]] = field(default_factory=list)  # trials: (verdict, report link) each

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError(f"comparison column {self.label!r} has no run: it needs at least one run directory")

    def metric_names(self) -> set[str]:
        if self.intervals is not None:
            return set(self.intervals)
        return {name for run in self.runs for name in run.metric_values()}

    def unit(self, name: str) -> str | None:
        if name in self.units:
            return self.units[name]
        m = self.runs[0].metric_values().get(name)
        return m.get("unit") if isinstance(m, dict) else None


def render_comparison(run_dirs: Sequence[str | os.PathLike[str]], out_path: str | os.PathLike[str]) -> Path:
    """Write one page comparing the runs: metrics as rows, a column per run, pauses and timelines side by side."""
    if not run_dirs:
        raise ValueError("run_dirs is empty: give at least one run directory to compare")
    page = Path(out_path)
    runs = [load_run(d) for d in run_dirs]
    labels = [point_label(run) for run in runs]
    if len(set(labels)) < len(labels):  # the same point twice, or runs of no matrix: their names tell them apart
        labels = [run.name for run in runs]
    columns = [Column(label, [run], report=_report_link(run, page)) for label, run in zip(labels, runs)]
    return render_page("comparison.html.j2", page, **comparison_context(columns, page, f"Comparison of {len(runs)} run(s)"))


def point_label(run: RunOutputs) -> str:
    """The matrix point of a run (its result.json parameters, the trial number left out), else its name."""
    parameters = run.result.value.parameters if isinstance(run.result, Got) else {}
    shown = [f"{key.rsplit('.', 1)[-1]}={'+'.join(map(str, v)) if isinstance(v, list) else v}"
             for key, v in parameters.items() if key not in ("trial", "expect")]
    return ", ".join(shown) or run.name


BETTER = {**KEY_METRICS, **STREAMS_KEY_METRICS}  # True: a larger value is better


def comparison_context(columns: list[Column], page: Path, title: str) -> dict[str, Any]:
    present = set().union(*(c.metric_names() for c in columns))
    key = [name for name in KEY_METRICS if name in present]
    if any(has_streams(run) for c in columns for run in c.runs):
        key += [name for name in STREAMS_KEY_METRICS if name in present]
    labels = [c.label for c in columns]
    pauses, pauses_absent = pause_distributions(labels, [c.runs for c in columns])
    trials = any(c.intervals is not None for c in columns)
    return {
        "title": title,
        "trials": trials,
        "columns": [{"label": c.label, "run": c.runs[0].name if len(c.runs) == 1 else None, "report": c.report, "statuses": c.statuses, "runs": len(c.runs),
                     "verdict": verdict(c.runs[0]) if c.intervals is None else None, "host": host_note(c.runs),
                     **run_identity(c.runs[0])}
                    for c in columns],
        "key_rows": [metric_row(columns, name) for name in key],
        "other_rows": [metric_row(columns, name) for name in sorted(present - set(key))],
        "pauses": figure_html(pauses),
        "pauses_absent": pauses_absent,
        "timelines": [{**t, "figure": figure_html(t["figure"], toolbar=False)}
                      for t in stacked_timelines(labels, [c.runs[0] for c in columns])],
    }


def metric_row(columns: list[Column], name: str) -> dict[str, Any]:
    """One metric across the columns: a value per run, or a median and interval per configuration of trials."""
    best = best_columns(columns, name)
    cells = [_trial_cell(c, name) if c.intervals is not None else _run_cell(c.runs[0], name, i in best)
             for i, c in enumerate(columns)]
    unit = next((u for u in (c.unit(name) for c in columns) if u), "")
    intervals = [c.intervals.get(name, Interval(n=0)) for c in columns if c.intervals is not None]
    return {"name": name, "definition": definition(name), "unit": unit, "answer": name in ANSWER_METRICS,
            "higher_is_better": BETTER.get(name), "cells": cells,
            "finding": finding(intervals) if len(intervals) == len(columns) else ""}


def _run_cell(run: RunOutputs, name: str, best: bool) -> dict[str, Any]:
    m = run.metric_values().get(name)
    if not isinstance(m, dict):
        return {"unknown": "not in metrics.json" if isinstance(run.metrics, Got) else run.metrics.reason}
    if m.get("value") is None:
        return {"unknown": m.get("unknown") or "no value recorded"}
    return {"value": m["value"], "best": best}


def _trial_cell(column: Column, name: str) -> dict[str, Any]:
    iv = (column.intervals or {}).get(name, Interval(n=0, unknown=len(column.runs)))
    if iv.median is None:
        return {"unknown": f"unknown in {iv.unknown} trial(s)"}
    return {"interval": iv.model_dump()}


def finding(intervals: list[Interval]) -> str:
    """Which configurations stand apart on a metric, if any; "not different" when every pair of intervals
    overlaps: a gap between medians inside the intervals is noise, not a finding."""
    known = [iv for iv in intervals if iv.low is not None]
    if len(known) < 2:
        return ""
    apart = [(a, b) for x, a in enumerate(known) for b in known[x + 1:] if overlap(a, b) is False]
    return "not different" if not apart else f"{len(apart)} pair(s) apart"


def best_columns(columns: list[Column], name: str) -> set[int]:
    """Indexes of the single-run columns with the best known value; none unless two or more are known, and
    none for a metric outside BETTER (better is not defined there) or among trials (intervals decide)."""
    if name not in BETTER or any(c.intervals is not None for c in columns):
        return set()
    known = {}
    for i, c in enumerate(columns):
        m = c.runs[0].metric_values().get(name)
        if isinstance(m, dict) and m.get("value") is not None:
            known[i] = m["value"]
    if len(known) < 2 or len(set(known.values())) == 1:  # a tie of every run is no one's best
        return set()
    target = max(known.values()) if BETTER[name] else min(known.values())
    return {i for i, v in known.items() if v == target}


def run_identity(run: RunOutputs) -> dict[str, str]:
    """Assignor, protocol and client versions, from metrics.json config or the members' started events."""
    config = run.config()
    members = run.members.value if isinstance(run.members, Got) else {}
    assignors = config.get("assignors") or sorted(
        {a for s in members.values() for a in (s.get("assignors") or [])}
        | {s["remote_assignor"] for s in members.values() if s.get("remote_assignor")}
    )
    protocols = sorted({s.get("group_protocol") or "classic" for s in members.values()})
    clients = sorted({f"{s.get('client')} {s.get('client_version')}" for s in members.values() if s.get("client")})
    return {
        "assignors": ", ".join(assignors) or "unknown",
        "protocol": config.get("protocol") or ("/".join(protocols) if protocols else "unknown"),
        "clients": ", ".join(clients) or "unknown",
    }


def render_index(reports_root: str | os.PathLike[str]) -> Path:
    """Write <reports_root>/index.html listing every run directory, newest first, with verdict and links."""
    root = Path(reports_root)
    if not root.is_dir():
        raise FileNotFoundError(f"reports_root {str(root)!r} is not a directory")
    page = root / "index.html"
    entries = [index_entry(d, page) for d in sorted(root.iterdir()) if _is_run_dir(d)]
    entries.sort(key=lambda e: (e["started_ms"], e["name"]), reverse=True)
    return render_page("index.html.j2", page, title=f"Runs in {root.name}", entries=entries)


def index_entry(run_dir: Path, page: Path) -> dict[str, Any]:
    run = load_run(run_dir)
    started = None
    if isinstance(run.result, Got):
        started = run.result.value.started_ms
    elif isinstance(run.metrics, Got):
        started = (run.metrics.value.get("windows") or {}).get("run_start_ms")
    v = verdict(run)
    return {
        "name": run.name,
        "scenario": run.result.value.scenario if isinstance(run.result, Got) else "—",
        "started_ms": started if started is not None else int(run_dir.stat().st_mtime * 1000),
        "started_known": started is not None,
        "verdict": v,
        "report": _report_link(run, page),
        "run_link": relative_link(run_dir, page) + "/",
        **run_identity(run),
    }


def _is_run_dir(path: Path) -> bool:
    run = RunDir(path)
    return path.is_dir() and any(p.exists() for p in (run.result, run.history, run.analysis))


def _report_link(run: RunOutputs, page: Path) -> str | None:
    return relative_link(run.run.report, page) if run.run.report.is_file() else None


__all__ = ["Missing", "render_comparison", "render_index"]
