"""The one wait helper: poll a condition until it holds, or fail with diagnostics, or fail fast."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from .errors import WaitAborted, WaitTimeout

T = TypeVar("T")
AbortCheck = Callable[[], "str | None"]


def wait_until(
    condition: Callable[[], T],
    *,
    timeout_s: float,
    what: str,
    diagnostics: Callable[[], str] | None = None,
    interval_s: float = 0.2,
    abort: AbortCheck | None = None,
    first_interval_s: float | None = None,
) -> T:
    """Return the first truthy value of ``condition()``; exceptions count as 'not yet'.

    Polled every ``interval_s``; with ``first_interval_s``, the first pause is that long and each next one twice the
    last, up to ``interval_s``: for what usually comes right within tens of milliseconds but may take seconds on a
    loaded machine (a new topic's logs), where a fixed half-second poll would add up to half a second to every wait.

    After each unmet poll, ``abort()`` says whether the target died: None while it may still come
    right, else why not, which ends the wait at once with WaitAborted carrying that message (a wait
    never outlives what it waits for). A WaitAborted from a nested wait in ``condition`` ends it too.
    On timeout, raise WaitTimeout naming ``what``, the last exception and ``diagnostics()``, which
    is built only then, so it may be expensive (group state, last log lines).
    """
    started = time.monotonic()
    deadline = started + timeout_s
    last_error: str | None = None
    pause = min(first_interval_s, interval_s) if first_interval_s is not None else interval_s
    while True:
        try:
            value = condition()
            if value:
                return value
        except WaitAborted:
            raise
        except Exception as exc:  # noqa: BLE001 - a failing probe means 'not ready yet'
            # Its text, not the exception: a kept exception holds its traceback's frames and whatever they hold (a
            # Kafka client's own method frame holds the client, then freed by a garbage collection at any later
            # moment, on any thread: librdkafka's destroy of a client whose brokers are gone can wait for ever).
            last_error = f"{type(exc).__name__}: {exc}"
        reason = _abort_reason(abort)
        if reason is not None:
            raise WaitAborted(f"stopped waiting for {what} after {time.monotonic() - started:.1f}s: {reason}")
        if time.monotonic() >= deadline:
            break
        time.sleep(pause)
        pause = min(pause * 2, interval_s)
    parts = [f"timed out after {timeout_s:.0f}s waiting for {what}"]
    if last_error is not None:
        parts.append(f"last error: {last_error}")
    if diagnostics is not None:
        try:
            parts.append(diagnostics())
        except Exception as exc:  # noqa: BLE001 - diagnostics must never hide the timeout
            parts.append(f"(diagnostics failed: {exc})")
    raise WaitTimeout("\n".join(parts))


def _abort_reason(abort: AbortCheck | None) -> str | None:
    if abort is None:
        return None
    try:
        return abort()
    except Exception:  # noqa: BLE001 - a check that cannot tell (e.g. Docker busy) is no reason to give up
        return None


def file_tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log file, for a diagnostic: never raises (it explains another error)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as exc:
        return f"(cannot read {path}: {exc})"
