"""Open generated reports in headless Chromium: no script error, every chart drawn, a screenshot saved.

Needs /usr/bin/chromium (installed by ensure_chromium() when run as root); no Kafka.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testbed.report import render_comparison, render_run
from testbed.report.browser import check_page, ensure_chromium, screenshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from report_fixtures import materialise  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def chromium() -> Path:
    return ensure_chromium()


def test_run_report_draws_every_chart_without_script_errors(chromium: Path, tmp_path: Path) -> None:
    run_dir = materialise(tmp_path)
    page = render_run(run_dir)
    check = check_page(page)
    assert check.errors == []
    assert check.charts == 6 and check.drawn == check.charts
    shot = screenshot(page, run_dir / "report.png")
    assert shot.stat().st_size > 50_000  # a blank page compresses to a few kB


def test_comparison_page_draws_its_small_multiples(chromium: Path, tmp_path: Path) -> None:
    runs = [materialise(tmp_path, "a"), materialise(tmp_path, "b")]
    check = check_page(render_comparison(runs, tmp_path / "compare.html"))
    assert check.ok and check.charts == 2


def test_the_check_catches_a_script_error_and_an_undrawn_chart(chromium: Path, tmp_path: Path) -> None:
    page = render_run(materialise(tmp_path))
    html = page.read_text()
    # Break one figure's data: plotly throws while drawing it, so it stays without an svg.
    first_chart = html.index('class="plotly-graph-div"')  # past the inlined bundle
    broken = html[first_chart:].replace("Plotly.newPlot(", "Plotly.newPlot(undefined_variable_in_report, ", 1)
    page.write_text(html[:first_chart] + broken)
    check = check_page(page)
    assert not check.ok
    assert any("undefined_variable_in_report" in e for e in check.errors)
    assert check.drawn == check.charts - 1
