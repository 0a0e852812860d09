"""``render_trials``: configurations side by side from repeated trials, on the comparison page.

Each configuration is a column whose cells are the medians over its trials with their intervals
(testbed/analysis/runs/trials.py); a metric whose intervals all overlap is marked "not different": a gap
between medians inside the intervals is noise. Pause distributions pool every trial of a configuration;
its ownership timeline is its first trial's. A page of one configuration shows its trials' spread alone.
"""

from __future__ import annotations

from pathlib import Path

from ..analysis.runs.trials import TrialsSummary
from ..run.layout import RunDir
from .comparison import Column, comparison_context, finding
from .inputs import load_run
from .page import relative_link, render_page


def trial_columns(summary: TrialsSummary, page: Path) -> list[Column]:
    columns = []
    for g in summary.groups:
        reports = [RunDir(Path(d)).report for d in g.run_dirs]
        links = [relative_link(r, page) if r.is_file() else None for r in reports]
        # a trial directory removed since the summary was written leaves its figures in the cells, not the charts
        runs = [load_run(d) for d in g.run_dirs if Path(d).is_dir()]
        columns.append(Column(label=g.label, runs=runs, intervals=g.metrics,
                              units=g.units, statuses=list(zip(g.statuses, links))))
    return columns


def render_trials(summary: TrialsSummary, out_path: Path) -> Path:
    title = f"{summary.scenario}: {summary.repeat} trial(s) per configuration"
    if summary.asked is not None and summary.asked > summary.repeat:
        title += f" (interrupted: {summary.asked} asked)"
    context = comparison_context(trial_columns(summary, out_path), out_path, title)
    return render_page("comparison.html.j2", out_path, method=summary.method, judge=summary.judge, **context)


__all__ = ["finding", "render_trials", "trial_columns"]
