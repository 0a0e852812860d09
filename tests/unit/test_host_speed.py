"""The machine's speed probes (testbed.host.speed): a JVM that does not answer is unknown, never a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.host import speed


def test_a_jvm_that_fails_its_version_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "java"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    monkeypatch.setattr(speed.shutil, "which", lambda name: str(broken))
    measured = speed.reference(tries=1)
    assert measured["java_version_ms"] is None
    assert measured["python_loop_ms"] > 0
    assert speed.describe(measured).endswith("a JVM's start unknown (no JVM answered)")


def test_the_line_for_a_person() -> None:
    assert speed.describe({"python_loop_ms": 141.2, "java_version_ms": 38.4}) == \
        "Python loop 141 ms, a JVM's start 38 ms"
