"""The analysis on a real Spark standalone cluster (a master and a worker from the pyspark package, on
loopback): the same figures as on local[*], executors that really ran the work, and a run directory the
executors cannot see refused with a clear error before anything is read. No Kafka: saved histories."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Iterator

import psutil
import pytest

from testbed.analysis import analyse
from testbed.analysis.spark.session import get_spark, spark_master
from testbed.spark_cluster import MASTER_CLASS, WORKER_CLASS, SparkStandalone
from testbed.errors import ConfigError
from testbed.run.layout import RunDir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from histories import scenarios  # noqa: E402

pytestmark = pytest.mark.integration



def _figures(run_dir: Path) -> dict:
    return analyse(run_dir).model_dump(mode="json")["metrics"]


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except psutil.Error:  # ended (or a zombie not yet reaped by its parent) between the listing and the read
        return []


# The cluster's own processes; the driver's JVM (SparkSubmit, pyspark's gateway) lives on after its context stops
CLUSTER_CLASSES = {"master": MASTER_CLASS, "worker": WORKER_CLASS,
                   "executor": "org.apache.spark.executor.CoarseGrainedExecutorBackend"}


def _spark_daemons() -> dict[str, int]:
    """How many processes of each kind of the cluster run below this one."""
    found = {kind: 0 for kind in CLUSTER_CLASSES}
    for child in psutil.Process().children(recursive=True):
        args = _cmdline(child)
        for kind, main_class in CLUSTER_CLASSES.items():
            found[kind] += main_class in args
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SparkStandalone, Path, dict]]:
    """One cluster for the module (a master and a worker: three JVMs and an executor, the costliest start of the
    suite), this process's analyses on it; the local figures of the history the first test compares are taken
    before. The worker runs in a mount namespace of its own, with an empty tmpfs over ``hidden``: the driver sees
    what is in there, the executors do not, as with a local path and a cluster on other hosts."""
    root = tmp_path_factory.mktemp("spark-cluster")
    hidden = root / "hidden"
    hidden.mkdir()
    # One history with many non-zero figures (revocations, pauses, episodes); the lost record is the next test's.
    run = scenarios.eager_rolling_bounce(root / "eager_rolling_bounce")
    local = _figures(run)
    wrapper = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
               f"mount -t tmpfs none {hidden} && exec \"$@\"", "sh"] if shutil.which("unshare") else []
    with SparkStandalone(workers=1, worker_wrapper=wrapper) as standalone, spark_master(standalone.master_url):
        yield standalone, run, local
    assert _spark_daemons() == {"master": 0, "worker": 0, "executor": 0}  # the cluster ended, executors included


def test_the_analysis_on_a_standalone_cluster_equals_local(cluster) -> None:
    standalone, run, local = cluster
    assert get_spark().sparkContext.master == standalone.master_url
    remote = _figures(run)
    [app] = standalone.status()["activeapps"]
    assert app["cores"] == 1  # the worker's executor ran the work, not the driver
    assert _spark_daemons() == {"master": 1, "worker": 1, "executor": 1}
    assert remote == local
    assert local["needless_revocations"]["value"] == 4  # figures that are not trivially zero (see the history)
    assert local["stop_the_world_ms"]["value"] == 6000


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare (root)")
def test_a_run_directory_the_executors_cannot_see_is_refused(cluster, tmp_path: Path) -> None:
    _, visible_run, _ = cluster
    run = scenarios.one_record_lost(visible_run.parent / "hidden" / "run")
    saved = sorted(run.rglob("*"))
    with pytest.raises(ConfigError, match=rf"run directory {run}: the Spark executors on .* cannot see it"):
        analyse(run)
    visible = scenarios.one_record_lost(tmp_path / "visible")
    assert analyse(visible).metrics["lost_records"].value == 1
    assert sorted(run.rglob("*")) == saved  # refused before anything was written (no metrics, no tables)
    assert not RunDir(run).metrics.exists()
