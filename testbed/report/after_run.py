"""The pages every finished run gets, interrupted and failed ones too: its report.html and the index
of the reports root it was saved under. Called by whoever ran it (the CLI, the pytest plugin)."""

from __future__ import annotations

import logging
import traceback
from pathlib import Path

from ..run.layout import RunDir
from .comparison import render_index
from .run_report import render_run

log = logging.getLogger(__name__)


def render_after_run(run: RunDir, reports_root: Path) -> Path | None:
    """The run's report.html, or None when rendering failed: then its traceback is in report-error.txt
    and nothing is raised, since the history and result.json stand without a report."""
    try:
        page = render_run(run.root)
        render_index(reports_root)
        return page
    except Exception as exc:  # noqa: BLE001 - say what failed; the saved run is what matters
        log.error("rendering the report failed: %s", exc)
        run.report_error.write_text(traceback.format_exc())
        return None
