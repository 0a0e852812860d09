"""Open generated reports in headless Chromium at 1280 x 800, as a person would: the headline figures and a
comparison's key rows fit the window's width, every chart is drawn with data, no script error, nothing is
fetched from the network. Screenshots of each page are kept in reports/browser-test/ (git-ignored).

Needs /usr/bin/chromium (installed by ensure_chromium() when run as root); no Kafka.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testbed.report import render_comparison, render_run
from testbed.report.browser import WINDOW, PageCheck, check_page, ensure_chromium, screenshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from report_fixtures import materialise  # noqa: E402

pytestmark = pytest.mark.integration

SHOTS = Path(__file__).resolve().parents[2] / "reports" / "browser-test"


@pytest.fixture(scope="module")
def chromium() -> Path:
    return ensure_chromium()


def keep_screenshots(page: Path, name: str) -> None:
    """The first screen a person sees, and the whole page, beside each other in reports/browser-test/."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    first = screenshot(page, SHOTS / f"{name}.png")
    whole = screenshot(page, SHOTS / f"{name}-full.png", height=6000)
    assert first.stat().st_size > 30_000 and whole.stat().st_size > 100_000  # a blank page compresses to a few kB


def assert_seen_as_meant(check: PageCheck, charts: int, must_see: int) -> None:
    assert check.errors == []
    assert check.charts == charts and check.drawn == charts and check.empty == 0
    assert check.window_px == WINDOW[0]
    assert check.must_see == must_see and check.outside == ()
    assert check.page_px <= check.window_px, "the page scrolls sideways"
    assert check.fetched == ()


def test_run_report_answers_first_and_fits_the_window(chromium: Path, tmp_path: Path) -> None:
    page = render_run(materialise(tmp_path))
    assert_seen_as_meant(check_page(page), charts=6, must_see=5)  # the five headline figures
    keep_screenshots(page, "run-report")


def test_comparison_of_a_three_point_matrix_shows_its_key_rows_within_the_window(chromium: Path, tmp_path: Path) -> None:
    points = {"20251122-090000-matrix-range": {"members.main.assignors": ["range"]},
              "20251122-090500-matrix-cooperative-sticky": {"members.main.assignors": ["cooperative-sticky"]},
              "20251122-091000-matrix-consumer-protocol": {"members.main.group_protocol": "consumer"}}
    runs = []
    for name, parameters in points.items():
        run = materialise(tmp_path, name)
        result = json.loads((run / "result.json").read_text())
        (run / "result.json").write_text(json.dumps({**result, "parameters": parameters}))
        runs.append(run)
    page = render_comparison(runs, tmp_path / "compare.html")
    # the six answer rows; one pause chart and a full-width timeline per run
    assert_seen_as_meant(check_page(page), charts=4, must_see=6)
    keep_screenshots(page, "comparison")


def test_trials_page_of_two_configurations_fits_the_window(chromium: Path, tmp_path: Path) -> None:
    from testbed.analysis.runs.trials import TrialsSummary, summarise_group
    from testbed.report.trials import render_trials

    groups = [summarise_group(label, {}, [materialise(tmp_path, f"{label}-{k}") for k in range(3)], ["fail"] * 3)
              for label in ("assignors=range", "assignors=cooperative-sticky")]
    page = render_trials(TrialsSummary(scenario="eager-vs-cooperative", repeat=3, judge="each", groups=groups),
                         tmp_path / "trials" / "summary.html")
    assert_seen_as_meant(check_page(page), charts=3, must_see=6)
    keep_screenshots(page, "trials")


def test_the_check_catches_a_script_error_an_undrawn_chart_and_a_fetch(chromium: Path, tmp_path: Path) -> None:
    page = render_run(materialise(tmp_path))
    html = page.read_text()
    # Break one figure's data: plotly throws while drawing it, so it stays without an svg.
    first_chart = html.index('class="plotly-graph-div"')  # past the inlined bundle
    broken = html[first_chart:].replace("Plotly.newPlot(", "Plotly.newPlot(undefined_variable_in_report, ", 1)
    # and ask the network for an image (port 9 on loopback: refused at once, still a request)
    page.write_text(html[:first_chart] + broken.replace("</body>", '<img src="http://127.0.0.1:9/x.png"></body>'))
    check = check_page(page)
    assert not check.ok
    assert any("undefined_variable_in_report" in e for e in check.errors)
    assert check.drawn == check.charts - 1
    assert check.fetched == ("http://127.0.0.1:9/x.png",)


def test_the_check_catches_a_headline_figure_off_the_window(chromium: Path, tmp_path: Path) -> None:
    page = render_run(materialise(tmp_path))
    html = page.read_text()
    page.write_text(html.replace('<div class="headline-cards">', '<div class="headline-cards" style="width:3000px">'))
    check = check_page(page)
    assert check.page_px > check.window_px and "headline-revocations" in check.outside and not check.ok
