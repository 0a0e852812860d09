"""The Spark driver's class-data archive with real JVMs: the one ``testbed setup`` made is mapped by a Spark session's
JVM, and a damaged one (a JVM crashes on it) is removed while the session starts without it. No Kafka."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.analysis.spark import class_archive

pytestmark = pytest.mark.integration

# A session started, a query answered; prints its driver's options.
SESSION = """
from testbed.analysis.spark.session import get_spark
spark = get_spark()
assert spark.range(1000).count() == 1000
print(spark.sparkContext.getConf().get("spark.driver.extraJavaOptions"))
"""


def _session(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", SESSION], cwd=tmp_path, capture_output=True, text=True, timeout=180,
                          env={**os.environ, "TESTBED_SPARK_LOG": str(tmp_path / "spark.log"), **env})


def test_the_archive_setup_made_is_mapped_by_a_spark_session(tmp_path):
    archive = class_archive.archive_path()
    assert archive is not None and archive.is_file(), "testbed setup makes it (setup.sh runs it)"
    mapping = tmp_path / "cds.log"
    done = _session(tmp_path, TESTBED_SPARK_DRIVER_JAVA_OPTS=f"-Xlog:cds=info:file={mapping}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"-XX:SharedArchiveFile={archive}" in done.stdout
    said = mapping.read_text()
    assert "Mapped dynamic region" in said, said[-2000:]  # the archive's classes, not only the JDK's own


def test_a_damaged_archive_is_removed_and_spark_starts_without_it(tmp_path):
    archive = class_archive.archive_path()
    assert archive is not None and archive.is_file(), "testbed setup makes it (setup.sh runs it)"
    cache = tmp_path / "cache"
    damaged = cache / class_archive.FOLDER / archive.name
    damaged.parent.mkdir(parents=True)
    with archive.open("rb") as whole:
        damaged.write_bytes(whole.read(1 << 20))  # a truncated archive: a JVM given it crashes at start
    done = _session(tmp_path, TESTBED_CACHE_DIR=str(cache))
    assert done.returncode == 0, done.stderr[-2000:]
    assert not damaged.exists()
    assert "SharedArchiveFile" not in done.stdout
    assert "removed: the Spark JVM did not start with it" in done.stderr
    assert not list(tmp_path.glob("hs_err*")), "the crash report went into the working directory"
    assert list(tmp_path.glob("spark-crash-*.log")), "the crash report is beside the Spark log"
