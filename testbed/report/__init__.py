"""HTML reports rendered from a run's saved outputs: one run, a comparison of runs, and an index.

``testbed report RUN_DIR`` calls :func:`render_run`, ``testbed run`` :func:`render_after_run`; nothing
here reads a live cluster.
"""

from .after_run import render_after_run
from .comparison import render_comparison, render_index
from .run_report import render_run

__all__ = ["render_after_run", "render_comparison", "render_index", "render_run"]
