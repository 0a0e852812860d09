"""The one wait helper: poll a condition until it holds, or fail with diagnostics."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from .errors import WaitTimeout

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T],
    *,
    timeout_s: float,
    what: str,
    diagnostics: Callable[[], str] | None = None,
    interval_s: float = 0.2,
) -> T:
    """Return the first truthy value of ``condition()``; exceptions count as 'not yet'.

    On timeout, raise WaitTimeout naming ``what``, the last exception and ``diagnostics()``, which
    is built only then, so it may be expensive (group state, last log lines).
    """
    deadline = time.monotonic() + timeout_s
    last_error: BaseException | None = None
    while True:
        try:
            value = condition()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - a failing probe means 'not ready yet'
            last_error = exc
        if time.monotonic() >= deadline:
            break
        time.sleep(interval_s)
    parts = [f"timed out after {timeout_s:.0f}s waiting for {what}"]
    if last_error is not None:
        parts.append(f"last error: {type(last_error).__name__}: {last_error}")
    if diagnostics is not None:
        try:
            parts.append(diagnostics())
        except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the timeout
            parts.append(f"(diagnostics failed: {exc})")
    raise WaitTimeout("\n".join(parts))
