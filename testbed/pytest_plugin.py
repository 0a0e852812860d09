"""pytest fixtures for real Kafka brokers in containers; also loadable by other repositories.

Installed as the ``testbed`` pytest plugin (entry point ``pytest11``), so ``kafka_cluster``,
``topic_factory`` and ``run_scenario`` are available wherever the package is installed. Options:
``--kafka-version`` (default: TESTBED_KAFKA_VERSION or the newest served 4.x) and
``--testbed-brokers`` (1 or 3) for the session cluster.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .analysis.service.place import SESSION_ENV
from .brokers.cluster import KafkaCluster
from .children import owner_mark
from .run.layout import RunDir
from .settings import analyse_many_runs_here, settings

if TYPE_CHECKING:
    from .run.result import RunResult
    from .scenario.loader import ScenarioRun

INTEGRATION_MARKER = "integration: needs real brokers in containers (run with -m integration)"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("testbed", "Kafka brokers in containers")
    group.addoption("--kafka-version", default=None, help="Kafka version of the session cluster")
    group.addoption("--testbed-brokers", type=int, default=1, choices=(1, 3),
                    help="number of brokers in the session cluster (1 or 3)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", INTEGRATION_MARKER)
    # A worker analyses many runs in its own Spark JVM, where the optimising compiler pays back (settings'
    # MANY_ANALYSES_JAVA_OPTS); the analysis service and the runs a test starts keep the driver's default.
    analyse_many_runs_here()
    if not hasattr(config, "workerinput"):  # the session itself, not one of its xdist workers
        # An analysis service started during this session (by a worker with no Spark session of its own, or by
        # a run a test starts) carries this mark and ends with the session.
        os.environ[SESSION_ENV] = owner_mark()
    # SIGTERM unwinds like Ctrl-C, so session fixtures tear down their brokers and fleets.
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and (session := os.environ.get(SESSION_ENV)) == owner_mark():
        from .analysis.service import stop_services

        stop_services(session=session)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test that failed beside a session cluster whose brokers stalled meanwhile says so in its report: the
    client errors it saw (timeouts, NOT_COORDINATOR, fenced brokers) were the cluster's, not the test's subject."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    said: set[int] = set()  # kafka_cluster_3 is kafka_cluster in a session of 3 brokers
    for name in ("kafka_cluster", "kafka_cluster_3"):
        cluster = funcargs.get(name)
        if isinstance(cluster, KafkaCluster) and id(cluster) not in said:
            said.add(id(cluster))
            if stalls := cluster.stalls_since(call.start - 1):
                report.sections.append((f"testbed: the brokers of {name} stalled during this test",
                                        "client errors of this test (timeouts, NOT_COORDINATOR, "
                                        "NOT_LEADER_OR_FOLLOWER, fenced brokers) may be these stalls':\n" + stalls))


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _start_cluster(config: pytest.Config, tmp: Path, brokers: int) -> KafkaCluster:
    version = config.getoption("--kafka-version") or settings().kafka_version
    return KafkaCluster(brokers=brokers, kafka_version=version, log_dir=tmp)


@pytest.fixture(scope="session")
def kafka_cluster(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """The session's cluster; broker logs are copied to a temp dir at the end."""
    brokers = pytestconfig.getoption("--testbed-brokers")
    with _start_cluster(pytestconfig, tmp_path_factory.mktemp("brokers"), brokers) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def kafka_cluster_3(pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
                    request: pytest.FixtureRequest) -> Iterator[KafkaCluster]:
    """A 3-broker cluster for replication and broker-fault tests, started only when asked for."""
    if pytestconfig.getoption("--testbed-brokers") == 3:
        yield request.getfixturevalue("kafka_cluster")
        return
    with _start_cluster(pytestconfig, tmp_path_factory.mktemp("brokers3"), 3) as cluster:
        yield cluster


TopicFactory = Callable[..., str]


@pytest.fixture
def topic_factory(kafka_cluster: KafkaCluster, request: pytest.FixtureRequest) -> Iterator[TopicFactory]:
    """``topic_factory(partitions=12, replication_factor=None, cluster=None) -> name``.

    Names are unique per call; every topic made is deleted when the test ends.
    """
    made: list[tuple[KafkaCluster, str]] = []
    test_name = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]

    def make(partitions: int = 1, replication_factor: int | None = None,
             cluster: KafkaCluster | None = None, config: dict[str, str] | None = None) -> str:
        target = cluster or kafka_cluster
        name = f"t-{test_name}-{uuid.uuid4().hex[:8]}"
        target.create_topic(name, partitions, replication_factor, config=config)
        made.append((target, name))
        return name

    yield make
    for target, name in made:
        try:
            target.delete_topic(name)
        except Exception as exc:  # noqa: BLE001 - a broker killed by the test may refuse; not the test's failure
            print(f"topic_factory: could not delete {name}: {exc}")


@pytest.fixture
def run_dir(tmp_path: Path) -> RunDir:
    """A fresh run directory laid out as testbed.run.layout describes."""
    return RunDir(tmp_path / "run").create()


@pytest.fixture
def run_scenario() -> Callable[..., RunResult]:
    """``run_scenario(run, reports, cluster=None) -> RunResult``: one scenario run end to end under
    ``reports``, then its report.html and the index of ``reports``, as ``testbed run`` does."""
    from .report import render_after_run
    from .scenario.runner import ScenarioRunner

    def run(scenario_run: ScenarioRun, reports: Path, cluster: KafkaCluster | None = None) -> RunResult:
        result = ScenarioRunner(scenario_run, reports, cluster=cluster).execute()
        render_after_run(result.files, reports)
        return result

    return run
