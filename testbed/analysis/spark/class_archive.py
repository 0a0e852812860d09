"""A class-data archive of the Spark driver's JVM: the classes a session's start and an analysis load, written once
by ``testbed setup`` (``service/archive_maker.py``) and mapped by every later Spark JVM instead of read and verified
from Spark's 250 jars.

Measured on 2 cores (docs/figures.md): a session's start 4.6-4.9 -> 2.0-2.5 s and the first analysis of a small run
in a new process 9.1-11.2 -> 6.3-9.0 s; warm analyses are unchanged. It is the JVM's own mechanism (AppCDS, a dynamic
archive: ``-XX:ArchiveClassesAtExit`` to write one, ``-XX:SharedArchiveFile`` to use it), the one the brokers'
image uses for its start.

An archive belongs to one JVM build and one set of Spark jars: its name is a fingerprint of both, so another JDK or
PySpark finds none and starts as before (each virtualenv's PySpark has an archive of its own; a JVM also refuses by
itself an archive of another build or class path). A JVM crashes on a truncated archive, so one is written under a
temporary name, tried by a JVM, and only then renamed into place; a session that cannot start with it starts
without it and removes it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from pathlib import Path

from ...settings import settings

log = logging.getLogger(__name__)

FOLDER = "spark-class-archive"
_dump_to: Path | None = None  # set in the process that writes an archive (``write_to``)


def java_executable() -> Path | None:
    """The ``java`` Spark's launcher runs (``spark-class``: JAVA_HOME's, else the one on PATH), resolved."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else (Path(w) if (w := shutil.which("java")) else None)
    return found.resolve() if found is not None and found.exists() else None


def spark_jars() -> Path:
    """The folder of the jars Spark's launcher puts on the driver's class path."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home()) / "jars"


def fingerprint() -> str | None:
    """A name for the JVM build and Spark jars an archive is made for; None without a ``java``."""
    java = java_executable()
    if java is None:
        return None
    digest = hashlib.sha256()
    # The launcher and the VM library (an upgraded JDK in place keeps bin/java's path).
    for path in (java, *sorted(java.parent.parent.glob("lib/server/libjvm.so"))):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    jars = spark_jars()
    digest.update(f"{jars.resolve()}\n".encode())
    for jar in sorted(jars.glob("*.jar")):
        digest.update(f"{jar.name}\0{jar.stat().st_size}\n".encode())
    return digest.hexdigest()[:24]


def archive_path() -> Path | None:
    """Where the archive of this JVM and these jars is (or would be); None without a ``java``."""
    key = fingerprint()
    return settings().cache_dir / FOLDER / f"{key}.jsa" if key else None


def java_options() -> str:
    """The driver JVM's option for the archive: write one (the process making it), use the one made, or none."""
    if _dump_to is not None:
        return f"-XX:ArchiveClassesAtExit={_dump_to}"
    if not settings().spark_class_archive:
        return ""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path}" if path is not None and path.is_file() else ""


def write_to(path: Path) -> None:
    """The Spark JVM this process starts writes its archive to ``path`` as it exits (the process making one)."""
    global _dump_to
    _dump_to = path


def discard(reason: str) -> None:
    """Remove the archive in use: a session did not start with it and did without it (``reason``)."""
    path = archive_path()
    if path is not None and path.is_file():
        log.warning("Spark class-data archive %s removed: %s", path, reason)
        path.unlink(missing_ok=True)
