"""Where the analysis runs and what it reads, answered without loading Spark's Python side (the analysis
service's client asks before it decides where a run is analysed): the Spark master, whether it is local, whether
a path is a remote URI."""

from __future__ import annotations

import re

from ...settings import settings

# Histories from this size on are analysed with the JVM's optimising compiler, on a session started for them in the
# process that analyses them, not on the analysis service, whose JVM is compiled for small runs (C1 alone;
# TESTBED_SPARK_DRIVER_JAVA_OPTS left at its default): at 10M records (1.5 GB) C1 alone made the first analysis
# 66.5 s against 44.9 s with tiered compilation, and later ones 59 s against 28-31 s; at 1M (150 MB) C1 was ahead,
# 26.2 s against 30.5 s for the first (docs/figures.md).
LARGE_INPUT_BYTES = 512 << 20

_override: str | None = None  # session.spark_master(): a cluster for a while, instead of the settings' master
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def master() -> str:
    return _override or settings().spark_master


def is_local(url: str) -> bool:
    """``local``, ``local[4]``, ``local[*]``: the driver's own JVM runs the tasks, and sees every local path."""
    return url.split("[", 1)[0] == "local"


def override(url: str | None) -> None:
    global _override
    _override = url


def is_remote(path: str) -> bool:
    """A URI Spark reads through Hadoop (``s3a://``, ``hdfs://``), not a path of this machine (``file://`` is)."""
    return bool(_SCHEME.match(path)) and not path.startswith("file://")
