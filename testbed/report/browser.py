"""Open a report in headless Chromium as a person would see it: read back its self-check, list what it fetched.

Uses Debian's chromium (``/usr/bin/chromium``), installed on demand by :func:`ensure_chromium`. The page
itself records script errors, drawn and empty charts, and the must-see elements that stick out of the
window sideways (see templates/base.html.j2); ``--dump-dom`` hands that record back after the page's
virtual time has run out, so no DevTools client is needed. What the page fetched comes from Chromium's
own network log (``--log-net-log``), not from the page: a request the page's scripts could hide still
shows there.
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
WINDOW = (1280, 800)  # a laptop's browser window: what must be seen has to fit its width
_SELFCHECK = re.compile(r'<div id="report-selfcheck"([^>]*)>')
_ATTR = re.compile(r'data-(\w+)="([^"]*)"')


class BrowserError(RuntimeError):
    """Chromium is missing and cannot be installed, or it failed to load a page."""


@dataclass(frozen=True)
class PageCheck:
    charts: int  # .plotly-graph-div elements on the page
    drawn: int  # of those, the ones plotly drew an svg into
    errors: list[str]  # script errors, unhandled rejections and console.error calls
    empty: int = 0  # charts none of whose traces holds a point
    window_px: int = 0  # the window's inner width
    page_px: int = 0  # the page's scroll width: above window_px, it scrolls sideways
    must_see: int = 0  # elements marked .must-see (headline figures, a comparison's key rows)
    outside: tuple[str, ...] = ()  # of those, the ones not inside the window's width
    fetched: tuple[str, ...] = ()  # URLs the page asked the network for

    @property
    def ok(self) -> bool:
        return (not self.errors and self.drawn == self.charts and not self.empty and not self.outside
                and not self.fetched)


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


def _run_chromium(extra: list[str], page: Path) -> tuple[subprocess.CompletedProcess[str], tuple[str, ...]]:
    """Chromium's output and the URLs the page itself requested from the network."""
    binary = ensure_chromium()
    with tempfile.TemporaryDirectory(prefix="testbed-chromium-") as profile:
        net_log = Path(profile) / "net-log.json"
        args = [str(binary), *HEADLESS_FLAGS, f"--user-data-dir={profile}", f"--log-net-log={net_log}", *extra,
                page.resolve().as_uri()]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:  # subprocess.run kills the child before raising
            raise BrowserError(f"chromium did not finish {page} within {PAGE_TIMEOUT_S} s") from e
        if done.returncode != 0:
            raise BrowserError(f"chromium exited {done.returncode} on {page}: {done.stderr.strip()[-2000:]}")
        return done, page_requests(net_log)


def page_requests(net_log: Path) -> tuple[str, ...]:
    """URLs requested on behalf of a file:// page, from a Chromium net log.

    Chromium itself calls home now and then whatever the flags (update and time checks); those requests
    carry no page's network isolation key, so they are told apart from the page's own by that key.
    """
    try:
        log = json.loads(net_log.read_text())
    except (OSError, ValueError) as e:
        raise BrowserError(f"chromium's net log {net_log} is unreadable ({e}): what the page fetched is unknown") from e
    start_job = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return tuple(sorted({e["params"]["url"] for e in log["events"] if e.get("type") == start_job
                         and str(e.get("params", {}).get("network_isolation_key", "")).startswith("file://")}))


def check_page(page: Path, *, virtual_time_ms: int = 20_000, window: tuple[int, int] = WINDOW) -> PageCheck:
    """Load the page in a window of ``window`` pixels, let its scripts run, and return what its self-check
    recorded and what it fetched."""
    done, fetched = _run_chromium([f"--virtual-time-budget={virtual_time_ms}", f"--window-size={window[0]},{window[1]}",
                                   "--hide-scrollbars", "--dump-dom"], page)
    match = _SELFCHECK.search(done.stdout)
    if match is None:
        tail = done.stderr.strip()[-1500:]
        raise BrowserError(f"{page}: no #report-selfcheck in the DOM (the load handler never ran); chromium said: {tail}")
    attrs = {k: html.unescape(v) for k, v in _ATTR.findall(match.group(1))}
    return PageCheck(charts=int(attrs["charts"]), drawn=int(attrs["drawn"]), errors=list(json.loads(attrs["errors"])),
                     empty=int(attrs["empty"]), window_px=int(attrs["window"]), page_px=int(attrs["page"]),
                     must_see=int(attrs["mustsee"]), outside=tuple(json.loads(attrs["outside"])), fetched=fetched)


def screenshot(page: Path, out: Path, *, width: int = WINDOW[0], height: int = WINDOW[1],
               virtual_time_ms: int = 20_000) -> Path:
    """Save a PNG of the page's top ``height`` pixels (by default the first screen a person sees)."""
    _run_chromium([f"--virtual-time-budget={virtual_time_ms}", f"--window-size={width},{height}",
                   "--hide-scrollbars", f"--screenshot={out.resolve()}"], page)
    if not out.is_file():
        raise BrowserError(f"chromium wrote no screenshot at {out}")
    return out
