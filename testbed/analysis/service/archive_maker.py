"""Making the Spark driver's class-data archive (``spark/class_archive.py``): a Spark session started in a child
process, the service's bundled run analysed (the classes an analysis loads), the JVM ended normally (it writes the
archive as it exits). ``testbed setup`` calls it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from ...cache import build_lock
from ...children import die_with_parent
from ...settings import env_name
from ..spark.class_archive import FOLDER, archive_path, java_executable, spark_jars, write_to

MAKE_TIMEOUT_S = 600.0


class ArchiveError(RuntimeError):
    """The archive could not be made (the reason says why); Spark starts without one."""


def ensure_archive() -> Path:
    """The archive, made now when there is none (a Spark session started and a small bundled run analysed in a
    child process, 20-40 s on 2 cores); raises ArchiveError when it cannot be made."""
    final = archive_path()
    if final is None:
        raise ArchiveError("no java on PATH or in JAVA_HOME")
    if final.is_file():
        return final
    try:
        return _ensure(final)
    except OSError as exc:  # a cache directory it cannot write, a full disk
        raise ArchiveError(f"cannot write it in {final.parent}: {exc}") from exc
    except subprocess.TimeoutExpired as exc:
        raise ArchiveError(f"{' '.join(map(str, exc.cmd))} ran past {exc.timeout:.0f} s") from exc


def _ensure(final: Path) -> Path:
    with build_lock(FOLDER):
        if final.is_file():  # made by another process meanwhile
            return final
        final.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(final.parent)
        staged = final.with_name(f".{final.stem}.{os.getpid()}.tmp")
        staged.unlink(missing_ok=True)
        try:
            _make(staged)
            _check(staged)
            # What it was made for, beside it: an archive whose JVM or jars are gone is removed by the next making
            # (another virtualenv's, still in use, is kept).
            made_for(final).write_text(json.dumps([str(p) for p in (java_executable(), spark_jars())]))
            os.replace(staged, final)
        finally:
            staged.unlink(missing_ok=True)
        _remove_orphans(final.parent)
    return final


def made_for(archive: Path) -> Path:
    return archive.with_suffix(".json")


def _remove_abandoned(folder: Path) -> None:
    """Archives a making left half-way: its process was stopped (Ctrl-C), and the JVM, which outlives it until it
    sees its end, wrote the archive after the staged name had been removed."""
    for staged in folder.glob(".*.tmp"):
        pid = staged.suffixes[-2].lstrip(".") if len(staged.suffixes) >= 2 else ""
        if not (pid.isdigit() and psutil.pid_exists(int(pid))):
            staged.unlink(missing_ok=True)


def _remove_orphans(folder: Path) -> None:
    for archive in folder.glob("*.jsa"):
        try:
            sources = json.loads(made_for(archive).read_text())
        except (OSError, ValueError):
            sources = []  # made by an earlier version, or its note lost: remade on demand
        if not sources or not all(Path(p).exists() for p in sources):
            archive.unlink(missing_ok=True)
            made_for(archive).unlink(missing_ok=True)


def _make(staged: Path) -> None:
    # On a local master whatever the settings say: the driver's classes are the same, and a cluster's executors may
    # not see the temporary run it analyses.
    done = subprocess.run([sys.executable, "-m", __name__, str(staged)], capture_output=True, text=True,
                          timeout=MAKE_TIMEOUT_S, env={**os.environ, env_name("spark_master"): "local[*]"},
                          preexec_fn=die_with_parent())  # its JVM ends on its end
    if done.returncode != 0 or not staged.is_file():
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise ArchiveError(f"the Spark JVM writing it ended with exit code {done.returncode} and no archive: {tail}")


def _check(staged: Path) -> None:
    """A JVM maps it: one that cannot read the archive (a truncated file) crashes instead of starting without."""
    java = java_executable()
    done = subprocess.run([str(java), f"-XX:SharedArchiveFile={staged}", "-version"], capture_output=True, text=True,
                          timeout=60)
    if done.returncode != 0:
        raise ArchiveError(f"a JVM given it ended with exit code {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip().splitlines()[:1]}")


def main() -> None:
    """Write the archive to ``argv[1]``: a session started, the bundled run analysed, the JVM ended normally (the
    archive is written as it exits)."""
    write_to(Path(sys.argv[1]))
    from pyspark import SparkContext

    from ..spark.session import get_spark, stop_spark
    from .warm_analysis import analyse_warm_run

    analyse_warm_run(get_spark())
    jvm = SparkContext._gateway.proc
    stop_spark()
    jvm.stdin.close()  # Spark's gateway exits on end of input: the JVM writes the archive, then ends
    jvm.wait(timeout=MAKE_TIMEOUT_S)


if __name__ == "__main__":
    main()
