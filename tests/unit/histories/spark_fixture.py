"""One Spark session for all analysis/checker unit tests (import the fixture into the test module)."""

from __future__ import annotations

import pytest

from testbed.analysis.spark.session import get_spark


@pytest.fixture(scope="session")
def spark():
    # The process-wide session is reused on purpose; it stops with the interpreter (py4j atexit).
    return get_spark()
