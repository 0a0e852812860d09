"""Project-wide pytest setup: strict markers, the `integration` marker and the testbed fixtures.

The fixtures live in testbed/pytest_plugin.py, which is also installed as a pytest plugin (entry
point `testbed`) so other repositories get them; here it is registered only if the entry point
did not load it already (e.g. when running from a checkout that is not pip-installed).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

import pytest

from testbed import pytest_plugin
from testbed.children import describe_exit
from testbed.host.compaction import free_in_large_blocks_gib
from testbed.host.speed import describe, reference

# Under pytest-xdist (the README's test command: `-n 2`) the tests that run whole scenarios (a
# cluster, a fleet, load, the analysis), the longest of the suite at a minute and more each, are handed out
# first, so that no worker starts one while the others are done; the short integration tests fill the gaps. The
# unit tests are one work unit that one worker runs in turn: most of them run the Spark pipeline, which is CPU-bound,
# and one warm JVM runs them in 3-4 minutes where three JVMs side by side on 2 cores took 7.6.
UNIT_TESTS, UNIT_SCOPE = "tests/unit/", "unit tests"
# A test that runs a scenario through the `run_scenario` fixture is one of them; these run whole runs otherwise
# (`testbed run` in a subprocess, a standalone Spark cluster).
WHOLE_RUN_FILES = ("test_installed_package.py", "test_repeat_trials.py", "test_spark_cluster.py",
                   "test_program_crash_loop.py")

# Modules whose tests share a costly module-scoped fixture run as one work unit, so that one worker sets it up once
# (test_spark_cluster's standalone cluster: three JVMs and an executor, set up on both workers when split;
# test_ray_placement's Ray cluster of two nodes: two of its runs side by side, each with its own Ray cluster, held
# the machine at a load of 33 on 2 cores in a CI run of 2026-12-05).
SHARED_SETUP_FILES = ("tests/integration/test_spark_cluster.py", "tests/integration/test_ray_placement.py")

# A user's repository, run from outside this checkout against the installed wheel by
# tests/integration/test_installed_package.py; collected here it would test the checkout instead.
collect_ignore_glob = ["examples/your-repository/*"]


# A test still running after this long (the longest takes about 3.5 minutes on a loaded CI machine) is stuck: where
# each thread is goes to its failure's report, then its process ends (xdist's crash handling, below, reports the
# test failed and goes on with the rest). pytest's own faulthandler_timeout (pyproject.toml), later, stays for a hang
# that holds the GIL, where this Python timer cannot run; its dump lists every thread's stack with no thread names
# and the main thread last but with its innermost frames first, which a CI log cut to its tail loses.
STUCK_S_ENV, STUCK_DIR_ENV = "TESTBED_STUCK_TEST_S", "TESTBED_STUCK_TESTS_DIR"
STUCK_EXIT = 3


def pytest_configure(config: pytest.Config) -> None:
    config.option.strict_markers = True
    if not hasattr(config, "workerinput"):  # the controller: its xdist workers inherit the folder
        os.environ[STUCK_DIR_ENV] = tempfile.mkdtemp(prefix="pytest-stuck-tests-")
    if not config.pluginmanager.has_plugin("testbed"):
        config.pluginmanager.register(pytest_plugin, "testbed")
        pytest_plugin.pytest_configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and (folder := os.environ.pop(STUCK_DIR_ENV, None)):
        shutil.rmtree(folder, ignore_errors=True)


# The machine's speed and the fragmentation of its free memory at the session's start and end, in the session's
# summary: a suite that took twice its usual time on a slow or fragmented machine says so in the tail of its log,
# which is all a CI log keeps (docs/testing.md, "The machine's condition").
_MACHINE_AT_START: list[str] = []


def _machine_now() -> str:
    large = free_in_large_blocks_gib()
    return describe(reference(tries=2)) + ("" if large is None else f", {large} GiB free in blocks of 2 MiB and more")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):
        _MACHINE_AT_START.append(_machine_now())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and _MACHINE_AT_START:
        terminalreporter.write_line(f"the machine at the session's start: {_MACHINE_AT_START[0]}; "
                                    f"at its end: {_machine_now()}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> object:
    timer = threading.Timer(_stuck_after_s(), _end_stuck_test, args=(item.nodeid,))
    timer.daemon = True
    timer.start()
    try:
        return (yield)
    finally:
        timer.cancel()


def _stuck_after_s() -> float:
    return float(os.environ.get(STUCK_S_ENV) or 600)


def _stuck_report_path(worker: str) -> Path | None:
    folder = os.environ.get(STUCK_DIR_ENV)
    return Path(folder) / f"{worker}.txt" if folder else None


_RUNNER_FOLDERS = tuple(f"{os.sep}{name}{os.sep}" for name in ("_pytest", "pluggy", "execnet", "xdist"))


def _end_stuck_test(nodeid: str) -> None:
    frames = sys._current_frames()
    main = threading.main_thread().ident
    # Every thread running Python, also those threading does not list (started by C code, such as librdkafka's
    # background thread delivering admin results, or by execnet); the main thread (the test's) last, innermost
    # frame last: what a log cut to its tail keeps.
    names = {t.ident: t.name for t in threading.enumerate()}
    idents = sorted((i for i in frames if i != threading.get_ident()), key=lambda i: i == main)
    lines = [f"{nodeid} was still running after {_stuck_after_s():.0f} s; where each thread was:"]
    for ident in idents:
        name = names.get(ident, f"unlisted thread {ident}")
        lines.append(f"--- thread {name!r}{' (the test)' if ident == main else ''}, innermost call last:")
        calls = [c for c in traceback.extract_stack(frames[ident]) if not any(
            part in c.filename for part in _RUNNER_FOLDERS)]
        lines.extend(line.rstrip() for line in traceback.format_list(calls[-25:]))
    text = "\n".join(lines) + "\n"
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is not None and (path := _stuck_report_path(worker)) is not None:  # for the controller's report
        path.write_text(text)
    sys.stderr.write(text)
    sys.stderr.flush()
    os._exit(STUCK_EXIT)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first (a stable sort: the order within each class stays the collection order)."""
    def weight(item: pytest.Item) -> int:
        if (item.get_closest_marker("scenario") or "run_scenario" in getattr(item, "fixturenames", ())
                or item.path.name in WHOLE_RUN_FILES):
            return 0
        return 1 if item.get_closest_marker("integration") else 2

    items.sort(key=weight)


try:
    from xdist.scheduler import LoadScopeScheduling
    from xdist.workermanage import WorkerController
except ImportError:  # pytest-xdist is a dev dependency: without it the suite runs serially, as before
    pass
else:
    class _UnitTestsTogether(LoadScopeScheduling):
        """One work unit of all the unit tests (the largest, so handed out first), one of each module of
        ``SHARED_SETUP_FILES``, one of each other test. (``xdist_group`` marks with ``--dist loadgroup`` should say
        the same, but did not group here: pytest 9.2, xdist 3.8.)"""

        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith(UNIT_TESTS):
                return UNIT_SCOPE
            module = nodeid.split("::", 1)[0]
            return module if module in SHARED_SETUP_FILES else nodeid

        # A worker that dies mid-test (a crash in a client library's C code, the kernel's OOM killer) is replaced,
        # and xdist 3.8's scope scheduling then hung the session until CI's limit ended it (seen: 88 minutes): it put
        # every work unit of the dead worker back, the finished ones too, and a worker handed one with nothing left
        # to run, or a single test, waits forever for the next (pytest-xdist #1323, #1327; fixed upstream after 3.8).
        # The two methods below are xdist's own, less those two faults, and less a third (#1371): the test the worker
        # died on, already reported failed, is not run again to take the next worker down too.

        def remove_node(self, node: WorkerController) -> str | None:
            workload = self.assigned_work.pop(node)
            crashed = next((nodeid for unit in workload.values() for nodeid, done in unit.items() if not done),
                           None)
            if crashed is None:
                return None
            for scope, unit in workload.items():
                unit.pop(crashed, None)
                if not all(unit.values()):
                    self.workqueue[scope] = unit
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        def _reschedule(self, node: WorkerController) -> None:
            """Hand out units until the node holds two tests to run (a worker starts a test once it holds the next
            one or knows there is none), and tell it there is none once the queue is empty."""
            if node.shutting_down:
                return
            while self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
                self._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()

    def pytest_handlecrashitem(crashitem: str, report: pytest.TestReport, sched: object) -> None:
        """A test that a worker ended as stuck: where it was stuck, in its failure's report."""
        path = _stuck_report_path(report.node.gateway.id)
        if path is not None and path.exists():
            report.longrepr = f"{report.longrepr}\n{path.read_text()}"
            path.unlink()

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling:
        return _UnitTestsTogether(config, log)

    def _oom_kills() -> int | None:
        """How many processes the kernel's OOM killer has ended since boot (None where it does not say)."""
        try:
            counters = dict(line.split(" ", 1) for line in Path("/proc/vmstat").read_text().splitlines())
            return int(counters["oom_kill"])
        except (OSError, KeyError, ValueError):
            return None

    _OOM_KILLS_AT_START = _oom_kills()

    def pytest_testnodedown(node: WorkerController, error: object | None) -> None:
        """How a worker that died ended, which xdist does not say. One that prints no stack (faulthandler prints
        one for a crash in C code or a timeout) was killed: by the kernel's OOM killer, or by a process."""
        if not error:
            return
        popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
        try:
            code = popen.wait(timeout=10) if popen is not None else None
        except subprocess.TimeoutExpired:
            code = None
        now = _oom_kills()
        oom = ("unknown" if now is None or _OOM_KILLS_AT_START is None
               else f"{now - _OOM_KILLS_AT_START} processes")
        reporter = node.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"[{node.gateway.id}] the worker's process ended: "
                                f"{'status unknown' if code is None else describe_exit(code)}; the kernel's OOM "
                                f"killer has ended {oom} since this session began")
