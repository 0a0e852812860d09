"""``render_run(run_dir)``: one run's report.html, from its saved outputs only."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..analysis.view.started import STARTED_FIELDS
from . import charts, share_charts, streams_charts
from .definitions import definition
from .duplicate_words import cause_rows
from .group_kinds import has_share_members, has_streams, share_only
from .group_words import group_sentences
from .inputs import Got, Missing, NoneFound, RunOutputs, load_run
from .page import figure_html, relative_link, render_page
from .share_headline import answer_headlines

STATUS_WORDS = {"pass": "PASS", "fail": "FAIL", "partial": "PARTIAL", "error": "ERROR"}
# Settings the member table shows in other columns, or that only name the run (each client's spelling).
SETTINGS_SHOWN_ELSEWHERE = frozenset({"bootstrap.servers", "bootstrap_servers", "group.id", "group_id", "client.id",
                                      "client_id", "group.instance.id", "group_instance_id"})


@dataclass(frozen=True)
class Banner:
    """The verdict banner atop a run's report (and its line in the index and comparison)."""

    status: str  # pass|fail|partial|error|unknown
    headline: str
    failed: list[str]
    unknown: list[str]
    checks: list[str]
    reason: str | None


def render_run(run_dir: str | os.PathLike[str]) -> Path:
    """Write <run_dir>/report.html and return its path; missing pieces become 'not available' sections."""
    out = load_run(run_dir)
    return render_page("run.html.j2", out.run.report, **run_context(out, out.run.report))


def run_context(out: RunOutputs, page: Path) -> dict[str, Any]:
    pauses = charts.partition_pause_figures(out)
    per_partition, per_episode = (pauses, pauses) if isinstance(pauses, Missing | NoneFound) else pauses
    return {
        "name": out.name,
        "verdict": verdict(out),
        "headlines": answer_headlines(out),
        "share": has_share_members(out),
        "share_only": share_only(out),
        "share_counts": figure_html(share_charts.delivery_counts(out)) if has_share_members(out) else None,
        "share_timeline": figure_html(share_charts.redelivery_timeline(out)) if has_share_members(out) else None,
        "metrics_rows": metric_rows(out),
        "metrics_missing": out.metrics.reason if isinstance(out.metrics, Missing) else None,
        "notes": out.metrics.value.get("notes", []) if isinstance(out.metrics, Got) else [],
        "config": out.config(),
        "group_sentences": group_sentences(out.config()),
        "timeline": figure_html(charts.ownership_timeline(out)),
        "task_timeline": figure_html(streams_charts.task_timeline(out)) if has_streams(out) else None,
        "duplicates": table_rows(out, "duplicate_ownership", _duplicate_row, ["start_ms", "topic", "partition"]),
        "duplicate_causes": cause_rows(out),
        "handler_errors": table_rows(out, "handler_errors", dict, ["ts_ms", "member"]),
        "crashes": table_rows(out, "member_crashes", _crash_row, ["ts_ms", "member"]),
        "pause_per_partition": figure_html(per_partition),
        "pause_per_episode": figure_html(per_episode),
        "revocations": figure_html(charts.revocation_heatmap(out)),
        "over_time": figure_html(charts.over_time(out)),
        "broker": figure_html(charts.broker_vs_clients(out)),
        "episodes": table_rows(out, "rebalance_episodes", lambda r: _episode_row(r, out.time_origin_ms()),
                               ["start_ms", "episode_id"]),
        "scenario": _loaded(out.scenario_text),
        "members": member_rows(out),
        "links": [{"label": link.label, "href": relative_link(link.path, page)} for link in out.raw_links],
    }


def verdict(out: RunOutputs) -> Banner:
    if isinstance(out.result, Missing):
        return Banner("unknown", "verdict not available", [], [], [], out.result.reason)
    result = out.result.value
    failed = [f"{e.text} (measured {e.value:g})" for e in result.expectations if not e.passed and e.unknown is None
              and e.value is not None]
    unknown = [f"{e.text}: unknown ({e.unknown or 'not measured'})" for e in result.expectations
               if e.unknown is not None or e.value is None]
    checks = [f"{c.checker}: {c.status}" + ("" if c.count == 0 else f" ({c.count})" if c.count else " (count unknown)")
              + (f": {c.message}" if c.message else "") for c in result.checks if c.status != "valid"]
    headline = f"{STATUS_WORDS[result.status]}: {result.scenario}"
    return Banner(result.status, headline, failed, unknown, checks, result.problems)


def metric_rows(out: RunOutputs) -> list[dict[str, Any]]:
    expectations: dict[str, list[str]] = {}
    if isinstance(out.result, Got):
        for e in out.result.value.expectations:
            expectations.setdefault(e.metric, []).append(("✔ " if e.passed else "✘ ") + e.text)
    rows = []
    for name, m in out.metric_values().items():
        m = m if isinstance(m, dict) else {"value": m}
        value, why = m.get("value"), m.get("unknown")
        if value is None and why is None:
            why = "no value recorded"  # never shown as 0
        rows.append({"name": name, "value": value, "unit": m.get("unit", ""), "unknown": why,
                     "definition": definition(name), "expectations": expectations.get(name, [])})
    return rows


def member_rows(out: RunOutputs) -> dict[str, Any]:
    if isinstance(out.members, Missing):
        return {"missing": out.members.reason}
    rows = []
    for member, started in out.members.value.items():
        row = {"member": member}
        for key in STARTED_FIELDS:
            value = started.get(key)
            row[key] = ", ".join(map(str, value)) if isinstance(value, list) else value
            if key == "settings" and isinstance(value, dict):  # 'k=v; k=v' in the order built: the spec's last
                row[key] = "; ".join(f"{k}={v}" for k, v in value.items() if k not in SETTINGS_SHOWN_ELSEWHERE) or None
        rows.append(row)
    return {"columns": ["member", *STARTED_FIELDS], "rows": rows}


def table_rows(out: RunOutputs, table: str, to_row: Callable[[dict[str, Any]], dict[str, Any]],
               order: list[str]) -> dict[str, Any]:
    """Every row of a table (none dropped), in ``order``, or the reason the table is missing."""
    frame = out.table(table)
    if frame is None:
        return {"missing": out.tables[table].reason}  # type: ignore[union-attr]
    return {"rows": [to_row(r) for r in frame.sort_values(order).to_dict("records")]}


def _loaded(item: Got[Any] | Missing) -> dict[str, Any]:
    return {"missing": item.reason} if isinstance(item, Missing) else {"value": item.value}


def _clean(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    return value


def _crash_row(r: dict[str, Any]) -> dict[str, Any]:
    restart = (f"after {r['restart_in_s']:g} s" if _clean(r.get("restart_in_s")) is not None
               else f"no: {_clean(r.get('restart_refused')) or 'not restarted'}")
    return {"ts_ms": r["ts_ms"], "member": r["member"], "exit": r["exit"], "exception": _clean(r.get("exception_type")),
            "message": _clean(r.get("message")), "partitions": _clean(r.get("partitions")) or "", "restart": restart}


def _duplicate_row(r: dict[str, Any]) -> dict[str, Any]:
    return {"partition": f"{r['topic']}-{r['partition']}", "start_ms": r["start_ms"], "duration_ms": r["duration_ms"],
            "members": r["members"]}


def _episode_row(r: dict[str, Any], origin_ms: int | None) -> dict[str, Any]:
    row = {k: _clean(v) for k, v in r.items()}
    row["start_s"] = (r["start_ms"] - origin_ms) / 1000 if origin_ms is not None else None
    client, broker = row.get("duration_ms"), row.get("broker_duration_ms")
    row["broker_minus_client_ms"] = broker - client if client is not None and broker is not None else None
    return row
