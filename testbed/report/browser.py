"""Open a report in headless Chromium: read back its self-check (charts drawn, script errors), take a screenshot.

Uses Debian's chromium (``/usr/bin/chromium``), installed on demand by :func:`ensure_chromium`. The page
itself records script errors and counts drawn charts (see templates/base.html.j2); ``--dump-dom`` hands
that record back after the page's virtual time has run out, so no DevTools client is needed.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
HEADLESS_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run")
INSTALL_TIMEOUT_S = 900
PAGE_TIMEOUT_S = 120
_SELFCHECK = re.compile(r'<div id="report-selfcheck"([^>]*)>')
_ATTR = re.compile(r'data-(\w+)="([^"]*)"')


class BrowserError(RuntimeError):
    """Chromium is missing and cannot be installed, or it failed to load a page."""


@dataclass(frozen=True)
class PageCheck:
    charts: int  # .plotly-graph-div elements on the page
    drawn: int  # of those, the ones plotly drew an svg into
    errors: list[str]  # script errors, unhandled rejections and console.error calls

    @property
    def ok(self) -> bool:
        return not self.errors and self.drawn == self.charts


def ensure_chromium() -> Path:
    """Path of a chromium binary; installs Debian's package if absent (root only). Idempotent."""
    found = shutil.which("chromium") or (str(CHROMIUM) if CHROMIUM.exists() else None)
    if found:
        return Path(found)
    if os.geteuid() != 0:
        raise BrowserError("chromium is not installed and this user is not root: run `apt-get install -y chromium` as root")
    for command in (["apt-get", "install", "-y", "chromium"], ["apt-get", "update"], ["apt-get", "install", "-y", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                              env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        if command[1] == "install" and done.returncode == 0 and CHROMIUM.exists():
            return CHROMIUM
    raise BrowserError(f"`apt-get install -y chromium` failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")


def _run_chromium(extra: list[str], page: Path) -> subprocess.CompletedProcess[str]:
    binary = ensure_chromium()
    with tempfile.TemporaryDirectory(prefix="testbed-chromium-") as profile:
        args = [str(binary), *HEADLESS_FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:  # subprocess.run kills the child before raising
            raise BrowserError(f"chromium did not finish {page} within {PAGE_TIMEOUT_S} s") from e
    if done.returncode != 0:
        raise BrowserError(f"chromium exited {done.returncode} on {page}: {done.stderr.strip()[-2000:]}")
    return done


def check_page(page: Path, *, virtual_time_ms: int = 20_000) -> PageCheck:
    """Load the page, let its scripts run, and return what its self-check recorded."""
    done = _run_chromium([f"--virtual-time-budget={virtual_time_ms}", "--dump-dom"], page)
    match = _SELFCHECK.search(done.stdout)
    if match is None:
        tail = done.stderr.strip()[-1500:]
        raise BrowserError(f"{page}: no #report-selfcheck in the DOM (the load handler never ran); chromium said: {tail}")
    attrs = {k: html.unescape(v) for k, v in _ATTR.findall(match.group(1))}
    return PageCheck(charts=int(attrs["charts"]), drawn=int(attrs["drawn"]), errors=list(json.loads(attrs["errors"])))


def screenshot(page: Path, out: Path, *, width: int = 1400, height: int = 5000, virtual_time_ms: int = 20_000) -> Path:
    """Save a PNG of the page's top ``height`` pixels."""
    _run_chromium([f"--virtual-time-budget={virtual_time_ms}", f"--window-size={width},{height}",
                   "--hide-scrollbars", f"--screenshot={out.resolve()}"], page)
    if not out.is_file():
        raise BrowserError(f"chromium wrote no screenshot at {out}")
    return out
