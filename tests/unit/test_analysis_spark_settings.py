"""Spark settings from the environment, read through testbed.settings (no session is started here)."""

from __future__ import annotations

import os

import pytest

from testbed.analysis.spark.session import (C1_ONLY, LARGE_INPUT_BYTES, PARALLEL_GC, check_executors_see, is_local,
                                            spark_log_path, spark_settings)
import testbed.settings as settings_module
from testbed import pytest_plugin
from testbed.analysis.service.place import SESSION_ENV
from testbed.children import owner_mark
from testbed.errors import ConfigError
from testbed.settings import MANY_ANALYSES_JAVA_OPTS, many_analyses_here, settings

pytestmark = pytest.mark.usefixtures("fresh_settings")


def test_defaults_are_local_quiet_and_small(monkeypatch):
    for var in ("TESTBED_SPARK_MASTER", "TESTBED_SPARK_DRIVER_MEMORY", "TESTBED_SPARK_SHUFFLE_PARTITIONS"):
        monkeypatch.delenv(var, raising=False)
    s = spark_settings()
    assert s["spark.master"] == "local[*]"
    assert s["spark.driver.memory"] == "2g"
    assert s["spark.sql.shuffle.partitions"] == "4"
    assert s["spark.ui.showConsoleProgress"] == "false"
    assert s["spark.driver.host"] == "127.0.0.1"


def test_cluster_master_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_MASTER", "spark://127.0.0.1:7077")
    assert spark_settings()["spark.master"] == "spark://127.0.0.1:7077"


def test_bad_shuffle_partitions_names_the_variable(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_SHUFFLE_PARTITIONS", "many")
    with pytest.raises(ConfigError, match="TESTBED_SPARK_SHUFFLE_PARTITIONS='many'"):
        spark_settings()


def test_shuffle_partitions_must_be_positive(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_SHUFFLE_PARTITIONS", "0")
    with pytest.raises(ConfigError, match="TESTBED_SPARK_SHUFFLE_PARTITIONS='0'.*greater than or equal to 1"):
        spark_settings()


def test_the_jvm_log_goes_where_the_environment_says(monkeypatch, tmp_path):
    monkeypatch.delenv("TESTBED_SPARK_LOG", raising=False)
    assert spark_log_path().name.startswith("testbed-spark-")
    settings.cache_clear()
    monkeypatch.setenv("TESTBED_SPARK_LOG", str(tmp_path / "spark.log"))
    assert spark_log_path() == tmp_path / "spark.log"



def test_executor_memory_and_driver_host_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_EXECUTOR_MEMORY", "3g")
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_HOST", "10.0.0.5")
    s = spark_settings()
    assert s["spark.executor.memory"] == "3g"
    assert s["spark.driver.host"] == s["spark.driver.bindAddress"] == "10.0.0.5"


@pytest.mark.parametrize("url,local", [("local", True), ("local[*]", True), ("local[2]", True),
                                       ("spark://127.0.0.1:7077", False), ("local-cluster[2,1,1024]", False),
                                       ("yarn", False)])
def test_only_a_local_master_runs_its_tasks_in_the_driver(url, local):
    assert is_local(url) is local


def test_a_local_master_never_probes_the_executors(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_MASTER", "local[2]")
    check_executors_see(None, "/no/such/run")  # no session is needed: nothing to check on a local master


@pytest.fixture
def one_run_here(monkeypatch):
    """A process that analyses one run (a `testbed run`, the analysis service), not a pytest worker."""
    monkeypatch.setattr(settings_module, "_many_analyses_here", False)


def test_the_drivers_jvm_options_default_to_c1_only_and_empty_keeps_the_log_configuration(monkeypatch, one_run_here):
    monkeypatch.delenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", raising=False)
    options = spark_settings()["spark.driver.extraJavaOptions"].split()
    assert "-XX:TieredStopAtLevel=1" in options and any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
    assert "-XX:ReservedCodeCacheSize=240m" in options  # C1's own 48 MB is filled by one analysis
    settings.cache_clear()
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", "")
    options = spark_settings()["spark.driver.extraJavaOptions"].split()
    assert "-XX:TieredStopAtLevel=1" not in options and any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
    assert "TieredStopAtLevel" not in spark_settings()["spark.executor.extraJavaOptions"]


def test_a_session_started_for_large_histories_gets_the_optimising_compiler_unless_the_setting_was_chosen(
        monkeypatch, one_run_here):
    """C1 alone for a small run's analysis; a session started for histories of LARGE_INPUT_BYTES and more gets
    tiered compilation (10M records: a first analysis of 66.5 s with C1 alone, 44.9 s without); a setting the user
    made is kept whatever the size."""
    monkeypatch.delenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", raising=False)
    settings.cache_clear()
    small = spark_settings(LARGE_INPUT_BYTES - 1)["spark.driver.extraJavaOptions"].split()
    assert C1_ONLY in small and PARALLEL_GC in small
    large = spark_settings(LARGE_INPUT_BYTES)["spark.driver.extraJavaOptions"].split()
    assert C1_ONLY not in large and PARALLEL_GC not in large and "-XX:ReservedCodeCacheSize=240m" in large
    assert C1_ONLY in spark_settings()["spark.driver.extraJavaOptions"].split()  # size unknown: the setting
    settings.cache_clear()
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", "-XX:TieredStopAtLevel=1")
    assert C1_ONLY in spark_settings(LARGE_INPUT_BYTES * 4)["spark.driver.extraJavaOptions"].split()
    settings.cache_clear()


def test_a_pytest_worker_analyses_with_the_optimising_compiler_and_its_children_are_not_told(monkeypatch,
                                                                                            pytestconfig):
    """The plugin says so of the worker's own process: the runs and the analysis service it starts (fifteen
    analyses, 134 core-seconds C1 only against 188 tiered) inherit no setting and keep the driver's default."""
    monkeypatch.delenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", raising=False)
    monkeypatch.setattr(settings_module, "_many_analyses_here", False)
    # The session's mark is set again, to the same value, outside a worker: restored as it was afterwards.
    monkeypatch.setitem(os.environ, SESSION_ENV, os.environ.get(SESSION_ENV) or owner_mark())
    pytest_plugin.pytest_configure(pytestconfig)
    assert many_analyses_here()
    assert "TESTBED_SPARK_DRIVER_JAVA_OPTS" not in os.environ  # what the service and a `testbed run` would inherit
    settings.cache_clear()
    assert spark_settings()["spark.driver.extraJavaOptions"].split()[-1:] == [MANY_ANALYSES_JAVA_OPTS]
    assert C1_ONLY not in spark_settings(LARGE_INPUT_BYTES - 1)["spark.driver.extraJavaOptions"].split()
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", "-XX:TieredStopAtLevel=1")  # the user's choice wins
    settings.cache_clear()
    assert C1_ONLY in spark_settings()["spark.driver.extraJavaOptions"].split()
    settings.cache_clear()
