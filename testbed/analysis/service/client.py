"""A run analysed on the warm analysis service (started on first use), or in this process when it cannot be.

The service runs the same pipeline (``pipeline.analyse_run``) on a Spark JVM that is already up and compiled, so a
run's analysis costs its queries and not a JVM start; runs, ``matrix`` points, trials and pytest workers started with
the same code and settings share it (``place``). A Spark cluster (``TESTBED_SPARK_MASTER``, ``spark_master()``),
``TESTBED_ANALYSIS_SERVICE=false``, a run whose histories are large (``LARGE_INPUT_BYTES``: its own JVM, compiled for
it), or a service that cannot be started or dies mid-request: the run is analysed in this process, as before the
service existed, with a warning for the last.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from ...cache import build_lock
from ...children import OWNER_ENV
from ...errors import AnalysisServiceError, WaitAborted, WaitTimeout
from ...run.layout import RunDir
from ...settings import settings
from ...waits import wait_until
from ..settings import AnalysisSettings
from ..spark.location import LARGE_INPUT_BYTES, is_local, is_remote, master
from .place import ServicePlace, current_place, every_place, make_folder

if TYPE_CHECKING:  # the result's tables are pandas frames: pandas is imported when one arrives, not before the run
    from ..analysed import Analysis

log = logging.getLogger(__name__)
_STARTER_EXIT_S = 30.0  # the started interpreter only forks the service and exits
_END_S = 30.0  # a SIGTERM'd service stops its Spark first (bounded at 20 s there)


def analyse_run(run_dir: str | Path, *, settings: AnalysisSettings | None = None) -> Analysis:
    """Every measurement of one run, written beside it and returned (``pipeline.analyse_run``), on the analysis
    service when this process analyses on a local Spark master, else here. A local path is made absolute first,
    wherever it is analysed: the service's working directory is not the caller's."""
    where = str(run_dir)
    if not is_remote(where) and not where.startswith("file://"):
        where = str(Path(where).resolve())
    if shared() and not _large(where):
        try:
            return analyse_on_service(where, settings or AnalysisSettings())
        except AnalysisServiceError as exc:
            log.warning("%s: analysing in this process instead", exc)
    from ..pipeline import analyse_run as analyse_here

    return analyse_here(where, settings=settings)


def shared() -> bool:
    """Whether this process's analyses go to the service: enabled, on a local master (a cluster's driver is this
    process, as a ``spark_master`` block or a ``spark://`` setting asks), and no Spark session here already. A
    process that has one (a pytest worker whose tests used Spark) has it warm: shipping its runs to another JVM,
    colder than its own, would only add a JVM to the machine."""
    return settings().analysis_service and is_local(master()) and not _session_here()


def _large(run_dir: str) -> bool:
    """A run on this machine whose histories are ``LARGE_INPUT_BYTES`` or more: analysed in this process, on a
    session started for its size (the optimising compiler, more memory) instead of on the service's JVM, which is
    compiled for small runs: a large run's analysis is long enough that a JVM's start is a small part of it."""
    if is_remote(run_dir):
        return False
    run = RunDir(Path(run_dir.removeprefix("file://")))
    return run.history_bytes() >= LARGE_INPUT_BYTES


def _session_here() -> bool:
    session = sys.modules.get("testbed.analysis.spark.session")  # never imported: no session, and no need to load it
    return session is not None and session.has_session()


def warm_up() -> None:
    """At the start of a run: the service started if none is, and its Spark booted, while the run's brokers and
    fleet start; nothing here waits for it (a thread does, and a failure is the analysis's to report)."""
    if shared():
        threading.Thread(target=_warm, name="analysis-service-warm-up", daemon=True).start()


def _warm() -> None:
    try:
        connection = _connect(current_place())
        connection.send({"op": "warm"})
        connection.close()
    except Exception as exc:  # noqa: BLE001 - the analysis tries again and says what failed
        log.debug("analysis service warm-up failed: %s", exc)


def analyse_on_service(run_dir: str, analysis_settings: AnalysisSettings) -> Analysis:
    """The run (an absolute path or a URI) analysed on the service, started first if none runs."""
    place = current_place()
    gone: BaseException | None = None
    for _ in range(2):  # a service that ended itself (idle) just as this request came: start another, once
        connection = _connect(place)
        try:
            connection.send({"op": "analyse", "run_dir": run_dir, "settings": analysis_settings})
            reply = connection.recv()
        except (EOFError, OSError) as exc:
            gone = exc
            continue
        finally:
            connection.close()
        if reply[0] == "ok":
            return reply[1]
        _, error, remote_traceback = reply
        error.add_note(f"raised in the analysis service ({place.log}):\n{remote_traceback}")
        raise error
    raise AnalysisServiceError(f"the analysis service in {place.folder} went away twice during a request ({gone}); "
                               f"its log:\n{place.log_tail()}")


def _connect(place: ServicePlace) -> Connection:
    """A connection to the place's service, started first if none answers (one starter at a time)."""
    if (connection := _try_connect(place)) is not None:
        return connection
    try:
        with build_lock(place.lock_name):
            if (connection := _try_connect(place)) is not None:  # another process started it meanwhile
                return connection
            _start(place)
            return wait_until(lambda: _try_connect(place), timeout_s=settings().analysis_service_start_timeout_s,
                              what="the analysis service to answer", abort=lambda: _failed_to_start(place),
                              diagnostics=lambda: f"its log ({place.log}):\n{place.log_tail()}")
    except (WaitTimeout, WaitAborted) as exc:
        raise AnalysisServiceError(str(exc)) from None
    except OSError as exc:  # no folder, lock or socket to be had here (a read-only temp directory, say)
        raise AnalysisServiceError(f"the analysis service in {place.folder} cannot start: {exc}") from exc


def _try_connect(place: ServicePlace) -> Connection | None:
    state = place.state()
    if state is None or not state.alive():
        return None
    try:
        return Client(str(place.socket), family="AF_UNIX", authkey=bytes.fromhex(state.authkey))
    except (OSError, EOFError, ValueError):  # ending, or its socket gone with it
        return None


def _failed_to_start(place: ServicePlace) -> str | None:
    if place.state() is None and "Traceback (most recent call last)" in place.log_tail(200):
        return f"the analysis service failed before it listened; its log ({place.log}):\n{place.log_tail()}"
    return None


def _start(place: ServicePlace) -> None:
    make_folder(place)
    if place.log.exists():  # a killed service's: kept for a look, out of the way of this start's failure check
        place.log.replace(place.previous_log)
    # Not the owner's mark: the reaper ends marked processes with their owner, and the service outlives its starter.
    env = {k: v for k, v in (place.environment or os.environ).items() if k != OWNER_ENV}
    with place.log.open("ab") as out:
        starter = subprocess.Popen([sys.executable, "-m", "testbed.analysis.service.server", str(place.folder)],
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)  # not in the run's process group: its Ctrl-C is not ours
    try:
        code = starter.wait(timeout=_STARTER_EXIT_S)
    except subprocess.TimeoutExpired:
        starter.kill()
        raise AnalysisServiceError(f"the analysis service's starter did not exit in {_STARTER_EXIT_S:.0f} s; "
                                   f"its log ({place.log}):\n{place.log_tail()}") from None
    if code != 0:
        raise AnalysisServiceError(f"the analysis service could not start (exit code {code}); its log "
                                   f"({place.log}):\n{place.log_tail()}")


def stop_services(*, session: str | None = None) -> list[str]:
    """End this user's analysis services (only those the pytest session ``session`` started, when given) and
    remove their folders, and the folders of services already gone. Returns what was ended."""
    ended = []
    for place in every_place():
        state = place.state()
        if session is not None and (state is None or state.session != session):
            continue
        if state is not None and state.alive():
            ended.append(_end(state.pid, place))
        shutil.rmtree(place.folder, ignore_errors=True)
    return ended


def _end(pid: int, place: ServicePlace) -> str:
    what = f"analysis service (pid {pid}, {place.folder.name})"
    try:
        process = psutil.Process(pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=_END_S)
        except psutil.TimeoutExpired:
            process.kill()
            return f"{what}, killed after {_END_S:.0f} s"
    except psutil.NoSuchProcess:
        pass
    return what
