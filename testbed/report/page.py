"""What every report page shares: the Jinja environment, plotly.js inlined once, figure and value formatting."""

from __future__ import annotations

import datetime as dt
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from plotly.offline import get_plotlyjs

from .inputs import Missing, NoneFound

PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("testbed.report", "templates"),
        autoescape=select_autoescape(enabled_extensions=("j2", "html"), default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = format_number
    env.filters["when"] = format_instant
    return env


@lru_cache(maxsize=1)
def plotly_js() -> str:
    """The plotly.js bundle shipped with the plotly package: pages work offline, no CDN."""
    # A literal "</script>" inside the bundle would end the inline script early.
    return get_plotlyjs().replace("</script>", "<\\/script>")


def figure_html(fig: go.Figure | Missing | NoneFound, *, toolbar: bool = True) -> dict[str, Any]:
    """A template slot: {'html': div} for a figure, {'none': sentence} when the run had nothing of the kind,
    {'missing': reason} otherwise. Without ``toolbar`` the plot's buttons are hidden: on a stack of thin
    timelines they would cover the data."""
    if isinstance(fig, Missing):
        return {"missing": fig.reason}
    if isinstance(fig, NoneFound):
        return {"none": fig.sentence}
    config = PLOTLY_CONFIG if toolbar else {**PLOTLY_CONFIG, "displayModeBar": False}
    return {"html": fig.to_html(full_html=False, include_plotlyjs=False, config=config)}


def render_page(template: str, out_path: Path, **context: Any) -> Path:
    html = environment().get_template(template).render(plotly_js=plotly_js(), **context)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    # A temporary name of this process's own: runs side by side (pytest workers, two `testbed run`s) render the
    # same index page, and a shared name would let one replace the other's half-written file.
    tmp = out_path.with_name(f"{out_path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out_path)  # a reader never sees half a page
    return out_path


def relative_link(target: Path, page: Path) -> str:
    return Path(os.path.relpath(target.resolve(), page.parent.resolve())).as_posix()


def format_number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) >= 1 else f"{value:.3g}"
    return str(value)


def format_instant(ms: int | None) -> str:
    if ms is None:
        return "—"
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
