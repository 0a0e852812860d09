"""The analysis service: a real service process and its Spark JVM, found by the code and settings it analyses
with, analysing a run exactly as this process would, sending errors back as raised, ending itself when idle, by
``stop_services`` (``testbed clean``, the end of the pytest session that started it) and replaced when killed.

Services started here carry this pytest session's mark, so the session ends whatever a failed test left."""

from __future__ import annotations

import os
import signal
import uuid
from multiprocessing import Pipe
from pathlib import Path

import pandas as pd
import psutil
import pytest

from histories import scenarios
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.pipeline import analyse_run as analyse_here
from testbed.analysis.settings import AnalysisSettings
from testbed.analysis.service import client, warm_analysis
from testbed.analysis.service.place import SESSION_ENV, ServicePlace, current_place, make_folder
from testbed.analysis.service.server import SERVICE_NICE, AnalysisServer, _gone
from testbed.analysis.spark import location
from testbed.children import OWNER_ENV
from testbed.errors import NoMemberHistory
from testbed.run.layout import RunDir
from testbed.settings import RUN_ONLY_SETTINGS, Settings
from testbed.waits import wait_until

pytestmark = pytest.mark.usefixtures("fresh_settings")


def test_a_run_analysed_on_the_service_is_the_run_analysed_here(tmp_path: Path, spark) -> None:  # noqa: F811
    here_dir = scenarios.eager_rolling_bounce(tmp_path / "here")
    there_dir = scenarios.eager_rolling_bounce(tmp_path / "there")
    here = analyse_here(str(here_dir), spark=spark)
    assert not client.shared(), "a process with a session of its own analyses in it"
    there = client.analyse_on_service(str(there_dir), AnalysisSettings())
    state = current_place().state()
    assert state is not None and state.pid != os.getpid(), "analysed on the service, not in this process"
    assert there.metrics.run_dir == str(there_dir)
    assert there.metrics.model_dump(exclude={"run_dir"}) == here.metrics.model_dump(exclude={"run_dir"})
    assert sorted(there.tables) == sorted(here.tables)
    for name, table in here.tables.items():
        pd.testing.assert_frame_equal(there.tables[name], table, obj=name)
    assert (there_dir / "analysis" / "metrics.json").is_file(), "the service writes the outputs beside the run"
    again = client.analyse_on_service(str(there_dir), AnalysisSettings())
    assert current_place().state().pid == state.pid, "a second request finds the same service"
    assert again.metrics == there.metrics


def test_the_warm_up_run_is_the_eager_rolling_bounce_and_leaves_nothing_behind(tmp_path: Path, spark,  # noqa: F811
                                                                            monkeypatch) -> None:
    """The bundled run analyses to the figures of the hand-made history it was written from, in a copy that is
    removed afterwards (the package's folder stays as shipped)."""
    shipped = sorted(p for p in warm_analysis.WARM_RUN.rglob("*"))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    analysed: list[Path] = []
    from testbed.analysis import pipeline

    def analyse_and_keep(run, *, spark, real=pipeline.analyse_run):
        analysed.append(real(run, spark=spark).metrics)

    monkeypatch.setattr(pipeline, "analyse_run", analyse_and_keep)
    assert warm_analysis.analyse_warm_run(spark) > 0
    built = analyse_here(str(scenarios.eager_rolling_bounce(tmp_path / "built")), spark=spark).metrics
    (metrics,) = analysed
    assert {k: v.value for k, v in metrics.metrics.items()} == {k: v.value for k, v in built.metrics.items()}
    assert metrics.metrics["needless_revocations"].value == 4 and metrics.metrics["stop_the_world_ms"].value == 6000
    assert [p.name for p in tmp_path.iterdir()] == ["built"], "the warm-up's copy is removed"
    assert sorted(p for p in warm_analysis.WARM_RUN.rglob("*")) == shipped


def test_a_service_warms_up_on_its_first_warm_request_only(monkeypatch, tmp_path: Path) -> None:
    runs: list[object] = []
    monkeypatch.setattr(AnalysisServer, "_spark", staticmethod(lambda: "the session"))
    monkeypatch.setattr(warm_analysis, "analyse_warm_run", lambda spark: runs.append(spark) or 1.0)
    server = AnalysisServer(ServicePlace(tmp_path), idle_s=60)
    server._warm_up()
    server._warm_up()
    assert runs == ["the session"]


def test_an_error_of_the_analysis_is_raised_here_with_the_services_traceback(tmp_path: Path) -> None:
    run = scenarios.eager_rolling_bounce(tmp_path / "run")
    for history in (run / "history" / "members").glob("*.jsonl"):
        history.write_text("")
    with pytest.raises(NoMemberHistory) as raised:
        client.analyse_on_service(str(run), AnalysisSettings())
    assert any("raised in the analysis service" in note for note in raised.value.__notes__)


def test_a_relative_run_directory_is_read_where_the_caller_is(tmp_path: Path, monkeypatch) -> None:
    run = scenarios.eager_rolling_bounce(tmp_path / "run")
    monkeypatch.chdir(tmp_path)
    assert client.analyse_run("run").metrics.run_dir == str(run)


def test_a_place_is_the_code_and_settings_not_who_started_it(monkeypatch) -> None:
    first = current_place()
    monkeypatch.setenv(OWNER_ENV, "1:2.000")
    monkeypatch.setenv(SESSION_ENV, "3:4.000")
    assert current_place() == first, "a run and the pytest worker beside it share one service"
    monkeypatch.setenv("SPARK_BUFFER_SIZE", "65536")  # PySpark sets it in a process that starts a session
    assert current_place() == first
    # How a run starts its parts, not how its history is analysed: a run on Ray shares the warm service.
    monkeypatch.setenv("TESTBED_RAY_ADDRESS", "127.0.0.1:6379")
    monkeypatch.setenv("TESTBED_JAVA_OPTS", "-Xmx256m")
    monkeypatch.setenv("TESTBED_KAFKA_VERSION", "3.9.1")
    assert current_place() == first, "a setting of the run's parts parted the analysis service"
    assert RUN_ONLY_SETTINGS <= set(Settings.model_fields), "a run-only setting that is no setting"
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_MEMORY", "3g")
    assert current_place() != first, "another Spark setting analyses otherwise: a service of its own"
    assert len(str(current_place().socket)) < 108, "a Unix socket's path limit"


def test_on_a_cluster_when_switched_off_or_beside_a_session_the_run_is_analysed_here(monkeypatch) -> None:
    monkeypatch.setattr(client, "_session_here", lambda: True)
    assert not client.shared(), "a process with a warm session of its own"
    monkeypatch.setattr(client, "_session_here", lambda: False)
    assert client.shared()
    monkeypatch.setattr(location, "_override", "spark://127.0.0.1:1")  # what spark_master(url) sets
    assert not client.shared()
    monkeypatch.setattr(location, "_override", None)
    monkeypatch.setenv("TESTBED_SPARK_MASTER", "spark://127.0.0.1:1")
    client.settings.cache_clear()
    assert not client.shared()
    monkeypatch.setenv("TESTBED_SPARK_MASTER", "local[2]")
    monkeypatch.setenv("TESTBED_ANALYSIS_SERVICE", "false")
    client.settings.cache_clear()
    assert not client.shared()


@pytest.fixture
def start_service(monkeypatch):
    """``start_service(idle_s)``: a service of its own (another idle time is another place) that starts no Spark
    (nothing asks it to analyse), marked as started by a session of this test's, which ends it afterwards."""
    monkeypatch.setenv(SESSION_ENV, f"test:{uuid.uuid4().hex}")
    sessions = set()

    def start(idle_s: float):
        monkeypatch.setenv("TESTBED_ANALYSIS_SERVICE_IDLE_S", str(idle_s))
        client.settings.cache_clear()
        place = current_place()
        client._connect(place).close()
        sessions.add(os.environ[SESSION_ENV])
        return place

    yield start
    for session in sessions:
        client.stop_services(session=session)


def test_an_idle_service_ends_itself_and_leaves_nothing_to_find(start_service) -> None:
    quick_service = start_service(1.5)
    state = quick_service.state()
    assert state is not None and state.alive() and state.session == os.environ.get(SESSION_ENV)
    assert OWNER_ENV not in psutil.Process(state.pid).environ(), "the reaper must not end it with its starter"
    wait_until(lambda: not state.alive(), timeout_s=60, what="the idle service to end itself")
    assert not quick_service.folder.exists(), "its socket, state and log removed with its folder"


def test_a_service_gives_way_to_the_runs_for_the_cpu(start_service) -> None:
    """Below the runs' priority, within its session and for its session (the kernel's autogroup) where there is one."""
    state = start_service(60).state()
    assert state is not None and psutil.Process(state.pid).nice() == os.nice(0) + SERVICE_NICE
    autogroup = Path(f"/proc/{state.pid}/autogroup")
    if autogroup.exists():
        assert autogroup.read_text().split()[-1] == str(SERVICE_NICE), autogroup.read_text()


def test_a_killed_service_is_replaced_by_the_next_client(start_service) -> None:
    place = start_service(61)
    first = place.state()
    os.kill(first.pid, signal.SIGKILL)
    wait_until(lambda: not first.alive(), timeout_s=30, what="the killed service to be gone")
    client._connect(place).close()
    second = place.state()
    assert second.pid != first.pid and second.alive()


def test_stopping_a_sessions_services_ends_only_those(start_service, monkeypatch) -> None:
    ours = start_service(62).state()
    other_session = "1:1.000"
    monkeypatch.setenv(SESSION_ENV, other_session)
    other = start_service(63)
    try:
        ended = client.stop_services(session=other_session)
        assert len(ended) == 1 and str(other.state_file.parent.name) in ended[0]
        assert not other.folder.exists() and ours.alive()
    finally:
        client.stop_services(session=other_session)


def test_a_client_that_went_away_mid_analysis_is_seen_gone() -> None:
    service_end, client_end = Pipe()
    client_end.send({"op": "analyse"})
    service_end.recv()
    assert not _gone(service_end), "a client waiting for its answer"
    client_end.close()
    assert _gone(service_end), "its run killed: the connection's end is readable"


def test_a_service_that_cannot_start_leaves_the_run_analysed_here_with_a_warning(tmp_path: Path, monkeypatch,
                                                                                  caplog) -> None:
    run = scenarios.eager_rolling_bounce(tmp_path / "run")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setattr(client, "current_place", lambda: ServicePlace(blocked / "service"))
    monkeypatch.setattr(client, "_session_here", lambda: False)
    analysis = client.analyse_run(run)
    assert analysis.metrics.metrics["rebalance_episodes"].value == 2, "the run analysed all the same"
    assert any("cannot start" in r.message and "analysing in this process" in r.message for r in caplog.records)


def test_a_large_run_is_analysed_here_and_a_small_one_on_the_service(tmp_path: Path, monkeypatch) -> None:
    run = scenarios.eager_rolling_bounce(tmp_path / "run")
    size = RunDir(run).history_bytes()
    assert size == sum(p.stat().st_size for p in (run / "history").rglob("*.jsonl")) > 0
    monkeypatch.setattr(client, "_session_here", lambda: False)
    on_service: list[str] = []
    monkeypatch.setattr(client, "analyse_on_service", lambda where, settings: on_service.append(where) or "service")
    monkeypatch.setattr(client, "LARGE_INPUT_BYTES", size + 1)
    assert client.analyse_run(run) == "service" and on_service == [str(run)]
    monkeypatch.setattr(client, "LARGE_INPUT_BYTES", size)  # as large as the threshold: its own session, here
    assert client.analyse_run(run).metrics.metrics["rebalance_episodes"].value == 2
    assert on_service == [str(run)]


def test_a_service_folder_others_can_write_is_not_trusted(tmp_path: Path) -> None:
    shared_root = tmp_path / "root"
    place = ServicePlace(shared_root / "service")
    make_folder(place)
    place.state_file.write_text('{"pid": 1, "started": "0", "authkey": "00", "session": null, "idle_s": 1}')
    assert place.state() is not None
    shared_root.chmod(0o777)
    assert place.state() is None, "a state another user could have put there"
    with pytest.raises(PermissionError, match="not a folder of this user's alone"):
        make_folder(place)
