"""``render_comparison`` (runs side by side) and ``render_index`` (every run under a reports root)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..run.layout import RunDir
from . import charts
from .definitions import KEY_METRICS, definition
from .inputs import Got, Missing, RunOutputs, load_run
from .page import figure_html, relative_link, render_page
from .run_report import verdict


def render_comparison(run_dirs: Sequence[str | os.PathLike[str]], out_path: str | os.PathLike[str]) -> Path:
    """Write one page comparing the runs: a row each, key metrics side by side (best marked), small timelines."""
    if not run_dirs:
        raise ValueError("run_dirs is empty: give at least one run directory to compare")
    page = Path(out_path)
    runs = [load_run(d) for d in run_dirs]
    return render_page("comparison.html.j2", page, **comparison_context(runs, page))


def comparison_context(runs: list[RunOutputs], page: Path) -> dict[str, Any]:
    metrics = [name for name in KEY_METRICS if any(name in r.metric_values() for r in runs)]
    best = {name: best_runs(runs, name) for name in metrics}
    rows = []
    for i, run in enumerate(runs):
        values = run.metric_values()
        cells = []
        for name in metrics:
            m = values.get(name)
            if not isinstance(m, dict):
                cells.append({"unknown": "not in metrics.json" if isinstance(run.metrics, Got) else run.metrics.reason})
            elif m.get("value") is None:
                cells.append({"unknown": m.get("unknown") or "no value recorded"})
            else:
                cells.append({"value": m["value"], "best": i in best[name]})
        rows.append({"name": run.name, "report": _report_link(run, page), "verdict": verdict(run),
                     **run_identity(run), "cells": cells})
    return {
        "title": f"Comparison of {len(runs)} run(s)",
        "metrics": [{"name": n, "definition": definition(n), "higher_is_better": KEY_METRICS[n]} for n in metrics],
        "rows": rows,
        "timelines": [{"name": r.name, "figure": figure_html(charts.ownership_timeline(r, compact=True))} for r in runs],
    }


def best_runs(runs: list[RunOutputs], name: str) -> set[int]:
    """Indexes of the runs with the best known value of a metric; none unless two or more are known."""
    known = {}
    for i, run in enumerate(runs):
        m = run.metric_values().get(name)
        if isinstance(m, dict) and m.get("value") is not None:
            known[i] = m["value"]
    if len(known) < 2:
        return set()
    target = max(known.values()) if KEY_METRICS[name] else min(known.values())
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
