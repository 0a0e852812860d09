"""Which testbed made a run: the git revision of the checkout it runs from, or the installed package's version,
so that figures across runs can be told apart by the code that measured them."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path

from ..package_files import PACKAGE_DIR
from ..settings import PROJECT_NAME


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10,
                          check=True).stdout.strip()


def checkout_revision(folder: Path) -> str | None:
    """``<12 hex digits>`` of HEAD, ``+dirty`` when tracked files differ from it, when ``folder`` is the top of a
    git work tree; None otherwise. Only the top counts: an installed testbed sits in a virtualenv that may well be
    inside the user's own repository, whose revision says nothing about testbed's code."""
    try:
        if Path(_git(folder, "rev-parse", "--show-toplevel")).resolve() != folder.resolve():
            return None
        head = _git(folder, "rev-parse", "--short=12", "HEAD")
        dirty = _git(folder, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+dirty" if dirty else "")


@functools.cache
def testbed_revision() -> str:
    """The checkout's revision when testbed runs from one; the installed distribution's version (``0.1.0``)
    otherwise; ``unknown`` when neither can be read."""
    revision = checkout_revision(PACKAGE_DIR.parent)
    if revision:
        return revision
    try:
        return metadata.version(PROJECT_NAME)
    except metadata.PackageNotFoundError:
        return "unknown"
