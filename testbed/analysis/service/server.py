"""The analysis service: ``python -m testbed.analysis.service.server FOLDER``, started by a client (``client``).

One process holds a warm Spark session (its JVM started, its code compiled, the analysis imported) and analyses
the runs its clients send, each on a session of its own (same JVM, its own SQL settings), several at once. It is
nobody's child: it forks away from the process that started it, so that it outlives that run for the next ones,
carries no owner mark (the reaper would end it with its starter) and never becomes its starter's zombie. It ends
itself after ``TESTBED_ANALYSIS_SERVICE_IDLE_S`` without a request, on SIGTERM (``testbed clean``, the end of the
pytest session that started it), and its Spark JVM ends with it (PySpark's gateway exits when its pipe closes).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import secrets
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection, Listener
from pathlib import Path

from ...cache import build_lock
from ...children import owner_identity
from ...errors import AnalysisServiceError
from ...settings import settings
from .place import SESSION_ENV, ServicePlace, ServiceState

log = logging.getLogger("testbed.analysis.service")


def _transportable(exc: BaseException) -> BaseException:
    """The exception itself when it survives pickling (testbed's errors, most Python ones), else one that says it."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - a Py4J error holds a JVM object
        return AnalysisServiceError(f"{type(exc).__name__}: {exc}")


def _gone(client: Connection) -> bool:
    """A client sends one request and then only waits: anything readable after it is the end of its connection."""
    try:
        return client.poll()
    except OSError:
        return True


class AnalysisServer:
    def __init__(self, place: ServicePlace, idle_s: float) -> None:
        self.place = place
        self.idle_s = idle_s
        self.identity = owner_identity()
        self._lock = threading.Lock()
        self._busy = 0
        self._last = time.monotonic()
        self._analysing: dict[Connection, float] = {}  # each analysis in flight: its client, since when
        self._warmed = False  # the bundled run analysed (or being analysed) once

    def serve(self) -> None:
        authkey = secrets.token_bytes(32)
        with contextlib.suppress(FileNotFoundError):
            self.place.socket.unlink()  # a service killed before it could tidy up
        listener = Listener(str(self.place.socket), family="AF_UNIX", authkey=authkey)
        signal.signal(signal.SIGTERM, lambda signum, frame: self.end("SIGTERM"))
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal of the run that started it
        self.place.write_state(ServiceState(pid=self.identity[0], started=self.identity[1], authkey=authkey.hex(),
                                            session=os.environ.get(SESSION_ENV), idle_s=self.idle_s))
        log.info("listening on %s (pid %d, ends after %.0f s idle)", self.place.socket, self.identity[0], self.idle_s)
        threading.Thread(target=self._end_when_idle, name="idle", daemon=True).start()
        while True:
            try:
                connection = listener.accept()
            except Exception as exc:  # noqa: BLE001 - a client that failed the handshake; serve the others
                log.warning("refused a connection: %s", exc)
                continue
            with self._lock:
                self._busy += 1
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: Connection) -> None:
        try:
            request = connection.recv()
            if request["op"] == "warm":  # a run starting: the JVM boots while its brokers do, then warms up
                self._warm_up()
            elif request["op"] == "analyse":
                with self._lock:
                    self._analysing[connection] = time.monotonic()
                try:
                    reply = self._analyse(request)
                finally:
                    with self._lock:
                        del self._analysing[connection]
                connection.send(reply)
        except (EOFError, OSError) as exc:  # the client went away (Ctrl-C of its run); nothing to answer
            log.info("client gone: %s", exc)
        except Exception:  # noqa: BLE001 - Spark could not start; the next analysis request says so to its client
            log.exception("request failed")
        finally:
            connection.close()
            with self._lock:
                self._busy -= 1
                self._last = time.monotonic()

    def _analyse(self, request: dict) -> tuple:
        from ..pipeline import analyse_run
        from ..spark.session import own_session

        started = time.monotonic()
        try:
            with own_session(self._spark()) as session:
                analysis = analyse_run(request["run_dir"], settings=request["settings"], spark=session)
        except BaseException as exc:  # noqa: BLE001 - sent back, raised again in the client
            log.info("analysis of %s failed: %s", request["run_dir"], exc)
            return "error", _transportable(exc), traceback.format_exc()
        log.info("analysed %s in %.2f s", request["run_dir"], time.monotonic() - started)
        return "ok", analysis

    def _warm_up(self) -> None:
        """Spark started, and once per service the bundled run analysed (``warm_analysis``): the first run's analysis
        then finds the JVM compiled. A failure is logged; the run's own analysis reports what it finds."""
        spark = self._spark()
        with self._lock:
            if self._warmed:
                return
            self._warmed = True
        from .warm_analysis import analyse_warm_run

        try:
            log.info("warm-up analysis in %.2f s", analyse_warm_run(spark))
        except Exception:  # noqa: BLE001 - the service still serves; the next real analysis meets the same cause
            log.exception("warm-up analysis failed")

    @staticmethod
    def _spark():
        from ..spark.session import get_spark

        return get_spark()

    def _end_when_idle(self) -> None:
        while True:
            time.sleep(min(5.0, self.idle_s / 4))
            now = time.monotonic()
            with self._lock:
                idle = self._busy == 0 and now - self._last > self.idle_s
                # Analyses whose clients are all gone (a kill -9 of their runs) and that have run past the idle
                # time: nobody will read them, and a stuck one must not keep the service alive for ever.
                orphaned = (bool(self._analysing) and all(map(_gone, self._analysing))
                            and now - min(self._analysing.values()) > self.idle_s)
            if idle or orphaned:
                self.end(f"idle for {self.idle_s:.0f} s" if idle else "every client of the analyses in flight gone")

    def end(self, why: str) -> None:
        """Leave no state behind for clients to find, stop Spark (bounded: a query in flight may hold it), exit."""
        log.info("ending: %s", why)
        with build_lock(self.place.lock_name):  # no client is starting a service in this folder meanwhile
            state = self.place.state()
            if state is not None and (state.pid, state.started) == self.identity:
                for path in (self.place.state_file, self.place.socket, self.place.log, self.place.previous_log,
                             self.place.spark_log):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()
                with contextlib.suppress(OSError):
                    self.place.folder.rmdir()
        if (session := sys.modules.get("testbed.analysis.spark.session")) is not None:  # Spark was started
            stopping = threading.Thread(target=session.stop_spark, daemon=True)
            stopping.start()
            stopping.join(timeout=20)
        logging.shutdown()
        os._exit(0)


# The service works beside runs: a warm-up during a run's steps, the analysis of one run while another worker's or
# trial's members rebalance. Their timing is what is measured, so the service (its Spark JVM inherits this) gives way
# to them for the CPU: a lower priority within its session, and for its session against the others (the kernel's
# autogroups: every member, and the service, starts a session of its own).
SERVICE_NICE = 10


def _yield_to_runs() -> None:
    try:
        os.nice(SERVICE_NICE)
        Path("/proc/self/autogroup").write_text(f"{SERVICE_NICE}\n")
    except OSError as exc:  # no autogroups (a kernel without them) or no right to change it: only less polite
        log.info("priority left as it was: %s", exc)


def main() -> None:
    place = ServicePlace(Path(sys.argv[1]))
    if os.fork() > 0:  # the starter waits for this child only; the service is the grandchild, adopted by init
        os._exit(0)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    # py4j says so at INFO for every thread whose connection ends: each query run side by side, a dozen lines per
    # analysis that would bury the service's own.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    _yield_to_runs()
    # Spark's own stderr goes beside the service's log.
    os.environ.setdefault("TESTBED_SPARK_LOG", str(place.spark_log))
    settings.cache_clear()
    AnalysisServer(place, settings().analysis_service_idle_s).serve()


if __name__ == "__main__":
    main()
