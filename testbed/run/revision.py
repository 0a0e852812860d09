"""Which testbed made a run: the git revision of this checkout, so that figures across runs can be told apart
by the code that measured them."""

from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


@functools.cache
def testbed_revision() -> str:
    """``<12 hex digits>`` of HEAD, ``+dirty`` when tracked files differ from it; the package version
    (``0.1.0``) outside a git checkout."""
    try:
        head = subprocess.run(["git", "-C", str(CHECKOUT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(CHECKOUT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        try:
            return metadata.version("testbed")
        except metadata.PackageNotFoundError:
            return "unknown"
