"""``render_run(run_dir)``: one run's report.html, from its saved outputs only."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.view.started import STARTED_FIELDS
from .definitions import definition
from .group_words import group_sentences
from .inputs import Got, Missing, RunOutputs, load_run
from .kind_reports import answer_headlines, kind_sections
from .page import relative_link, render_page

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
    sections, figures = kind_sections(out)
    return {
        "name": out.name,
        "verdict": verdict(out),
        "headlines": answer_headlines(out),
        "kind_sections": sections,
        **figures,
        "metrics_rows": metric_rows(out),
        "metrics_missing": out.metrics.reason if isinstance(out.metrics, Missing) else None,
        "notes": out.metrics.value.get("notes", []) if isinstance(out.metrics, Got) else [],
        "config": out.config(),
        "group_sentences": group_sentences(out.config()),
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
    if result.partial and result.status != "partial":  # PARTIAL says so itself
        headline += " (partial: the run stopped before its end; the figures cover what ran)"
    if isinstance(out.metrics, Missing) and result.analysis_error is None and (result.expectations or result.checks):
        headline += (f" (judged on an analysis no longer in the run's folder: {out.metrics.reason}; "
                     "`testbed report` analyses the run again)")
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


def _loaded(item: Got[Any] | Missing) -> dict[str, Any]:
    return {"missing": item.reason} if isinstance(item, Missing) else {"value": item.value}
