"""The default Spark logs (one per process that started a session) do not pile up in the temporary directory."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed.analysis.spark import session


@pytest.fixture
def tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(session.tempfile, "gettempdir", lambda: str(tmp_path))
    return tmp_path


def test_the_logs_of_ended_processes_go_once_stale_and_the_living_ones_stay(tmp_dir: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = int(ended.stdout)
    old, fresh, mine, other = (tmp_dir / f"testbed-spark-{gone}.log", tmp_dir / f"testbed-spark-{gone + 1}.log",
                               tmp_dir / f"testbed-spark-{os.getpid()}.log", tmp_dir / "testbed-spark-cluster.log")
    crash = tmp_dir / f"testbed-spark-{gone}-crash-{gone + 7}.log"  # its JVM's crash report
    for path in (old, fresh, mine, other, crash):
        path.write_text("a JVM's stderr\n")
    day_ago = time.time() - session.STALE_LOG_S - 60
    for path in (old, mine, crash):
        os.utime(path, (day_ago, day_ago))
    alive = session.psutil.pid_exists(gone + 1)
    assert sorted(session.remove_stale_spark_logs()) == sorted([old, crash])  # a day old and its process ended
    assert mine.exists() and other.exists() and fresh.exists()
    assert session.remove_stale_spark_logs(older_than_s=0) == ([] if alive else [fresh])  # testbed clean: every ended
    assert mine.exists() and other.exists()
