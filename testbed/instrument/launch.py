"""Starting a program under the instrumentation: its environment, and a preflight of its interpreter.

This module runs in testbed's own interpreter (the fleet, the CLI); the rest of the package runs in the
program's. The contract with the program's interpreter is three environment variables:

- ``PYTHONPATH``: ``testbed/instrument/site`` (the ``sitecustomize``) and testbed's import root (testbed.package_files) first, then the
  program's own ``PYTHONPATH``;
- ``TESTBED_INSTRUMENT``: the path of the member's config as JSON (a ``MemberConfig`` dumped with
  ``model_dump(mode="json")``, or ``{"member_id", "history_path", "command"}``), read by
  ``testbed.instrument.config``;
- ``PYTHONUNBUFFERED=1``, so the program's output reaches its log as it is written.

The program must be started by a Python that reads ``PYTHONPATH`` and runs ``sitecustomize`` (not
``-E``, ``-I`` or ``-S``); ``preflight`` checks that, and that it has the client, before a run counts on it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from testbed.children import child_env, die_with_parent

from ..cache import pythonpath_with_testbed
from ..clients import FAMILIES
from .config import CONFIG_ENV, PREFLIGHT_ENV

SITE_DIR = Path(__file__).resolve().parent / "site"
# The oldest release of each client the instrumentation is written against (its family's declaration).
SUPPORTED = {name: f.instrumented_since for name, f in FAMILIES.items()
             if f.instrumented_since is not None and f.program_runtime == "python"}
OUTPUT_TAIL_LINES = 15


def instrumented_pythonpath(base: Mapping[str, str]) -> str:
    """The site dir and testbed's import root, then ``base``'s own PYTHONPATH."""
    return os.pathsep.join([str(SITE_DIR), pythonpath_with_testbed(base.get("PYTHONPATH"))])


def instrumented_env(config_path: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The environment additions that instrument a Python program started with ``base``'s environment."""
    return {
        "PYTHONPATH": instrumented_pythonpath(base),
        CONFIG_ENV: str(config_path),
        "PYTHONUNBUFFERED": "1",
    }


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def check_report(report: dict, client: str, client_version: str | None) -> str | None:
    """None if the reported interpreter has ``client`` in a version testbed instruments (and the one asked for)."""
    python = report.get("python") or "?"
    clients = report.get("clients") or {}
    found = clients.get(client)
    minimum = ".".join(map(str, SUPPORTED[client]))
    if not found:
        others = ", ".join(f"{name} {v}" for name, v in clients.items() if v)
        return (f"command: its interpreter {python} (Python {report.get('version', '?')}) has no {client}"
                f"{f' (it has {others})' if others else ''}; testbed instruments {client} >= {minimum}")
    if version_tuple(found) < SUPPORTED[client]:
        return f"command: its interpreter {python} has {client} {found}; testbed instruments {client} >= {minimum}"
    if client_version is not None and version_tuple(found) != version_tuple(client_version):
        return (f"command: its interpreter {python} has {client} {found}, the spec says client_version "
                f"{client_version}")
    return None


def _tail(path: Path) -> str:
    lines = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return "\n".join(lines[-OUTPUT_TAIL_LINES:]) or "(no output)"


def preflight(command: Sequence[str], cwd: Path | str | None, env: Mapping[str, str], client: str,
              client_version: str | None, timeout_s: float = 60) -> str | None:
    """Start ``command`` as a member would start, up to its Python's sitecustomize, and check its interpreter.

    None when the interpreter has ``client`` in a supported version (equal to ``client_version`` when
    given), else what is wrong, for the user. The program itself never runs: the sitecustomize reports
    and exits first. The command runs in its own process group, killed at the end whatever happened.
    """
    if client not in SUPPORTED:
        raise ValueError(f"client: one of {', '.join(SUPPORTED)}, got {client!r}")
    shown = " ".join(command)
    with tempfile.TemporaryDirectory(prefix="testbed-preflight-") as tmp:
        report_path, output_path = Path(tmp) / "report.json", Path(tmp) / "output.log"
        child = {key: value for key, value in env.items() if key != CONFIG_ENV}
        child.update(PYTHONPATH=instrumented_pythonpath(env), **{PREFLIGHT_ENV: str(report_path)})
        with output_path.open("wb") as output:
            try:
                proc = subprocess.Popen(list(command), cwd=cwd, env=child_env(child), stdin=subprocess.DEVNULL,
                                        stdout=output, stderr=subprocess.STDOUT,
                                        preexec_fn=die_with_parent(own_group=True))
            except OSError as exc:
                return f"command: {shown!r} could not start: {exc}"
            try:
                returncode = _wait_for_report(proc, report_path, timeout_s)
            finally:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                proc.wait()
        if report_path.exists():
            return check_report(json.loads(report_path.read_text()), client, client_version)
        if returncode is not None:
            return (f"command: {shown!r} exited with {returncode} before its Python reported (it must start "
                    f"a Python interpreter that reads PYTHONPATH: not -E, -I or -S); its output:\n"
                    f"{_tail(output_path)}")
        return (f"command: it did not start a Python interpreter with testbed's instrumentation (no sitecustomize "
                f"report within {timeout_s:.0f}s); it must start a Python that reads PYTHONPATH (not -E, -I or -S). "
                f"{shown!r} printed:\n{_tail(output_path)}")


def _wait_for_report(proc: subprocess.Popen, report_path: Path, timeout_s: float) -> int | None:
    """The process's exit status if it ended first, None once the report is there or the time is up."""
    deadline = time.monotonic() + timeout_s
    while not report_path.exists():
        try:
            return proc.wait(timeout=0.05)  # the pace of the checks: waiting on the process itself
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                return None
    return None


def python_attach(config_dir: Path, member_id: str, history_path: Path, command: Sequence[str],
                  base: Mapping[str, str]) -> dict[str, str]:
    """The environment additions that put a Python program under testbed.instrument (its config in ``config_dir``)."""
    config_path = config_dir / "config.json"
    config_path.write_text(json.dumps({"member_id": member_id, "history_path": str(history_path),
                                       "command": list(command)}))
    return instrumented_env(config_path, base)


Attach = Callable[[Path, str, Path, Sequence[str], Mapping[str, str]], dict]


def run_instrumented(command: Sequence[str], history_path: Path, member_id: str,
                     attach: Attach = python_attach) -> int:
    """``testbed instrument``: run ``command`` under the instrumentation, outside a scenario, to its end.

    Its history goes to ``history_path`` (appended to). ``attach`` gives the environment that instruments it
    (default a Python program's; the CLI passes the Java agent's for a JVM program). SIGINT and SIGTERM sent to this
    process are passed on to the program's process group (it runs in its own, so a Ctrl-C reaches it once).
    Returns the program's exit status, 128 + N when signal N ended it, as a shell reports it.
    """
    history_path = history_path.resolve()
    with tempfile.TemporaryDirectory(prefix="testbed-instrument-") as tmp:
        env = {**os.environ, **attach(Path(tmp), member_id, history_path, command, os.environ)}
        proc = subprocess.Popen(list(command), env=child_env(env), preexec_fn=die_with_parent(own_group=True))

        def forward(signum: int, _frame: object) -> None:
            try:
                os.killpg(proc.pid, signum)
            except ProcessLookupError:
                pass

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            returncode = proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return returncode if returncode >= 0 else 128 - returncode
