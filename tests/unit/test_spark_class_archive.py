"""The Spark driver's class-data archive: where it is, which option a session's JVM gets, and its name following the
JVM and the Spark jars (pure logic; tests/integration/test_spark_class_archive_jvms.py starts real JVMs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.analysis.spark import class_archive
from testbed.analysis.spark.session import spark_settings
from testbed.settings import settings


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TESTBED_CACHE_DIR", str(tmp_path))
    settings.cache_clear()
    yield tmp_path
    settings.cache_clear()


@pytest.fixture
def jars(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "spark" / "jars"
    folder.mkdir(parents=True)
    (folder / "spark-core.jar").write_bytes(b"x" * 10)
    monkeypatch.setattr(class_archive, "spark_jars", lambda: folder)
    return folder


def test_without_an_archive_the_jvm_gets_no_option_and_with_one_it_maps_it(cache, jars):
    path = class_archive.archive_path()
    assert path is not None and path.parent == cache / class_archive.FOLDER and path.suffix == ".jsa"
    assert class_archive.java_options() == ""
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert class_archive.java_options() == f"-XX:SharedArchiveFile={path}"


def test_the_setting_turned_off_keeps_the_jvm_on_the_jars(cache, jars, monkeypatch):
    path = class_archive.archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    monkeypatch.setenv("TESTBED_SPARK_CLASS_ARCHIVE", "false")
    settings.cache_clear()
    assert class_archive.java_options() == ""


def test_the_process_making_one_has_its_jvm_write_it(cache, jars, monkeypatch):
    monkeypatch.setattr(class_archive, "_dump_to", None)
    class_archive.write_to(cache / "staged.jsa")
    assert class_archive.java_options() == f"-XX:ArchiveClassesAtExit={cache / 'staged.jsa'}"


def test_another_set_of_spark_jars_or_no_java_names_no_archive_of_this_one(cache, jars, monkeypatch):
    before = class_archive.fingerprint()
    (jars / "extra.jar").write_bytes(b"y")
    assert class_archive.fingerprint() != before
    (jars / "extra.jar").unlink()
    assert class_archive.fingerprint() == before
    monkeypatch.setattr(class_archive, "java_executable", lambda: None)
    assert class_archive.fingerprint() is None and class_archive.archive_path() is None
    assert class_archive.java_options() == ""


def test_a_discarded_archive_is_gone(cache, jars):
    path = class_archive.archive_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b"damaged")
    class_archive.discard("a test")
    assert not path.exists()
    class_archive.discard("nothing left to remove")  # no archive: nothing happens


def test_the_driver_options_put_the_archive_before_the_settings_which_can_override_it(monkeypatch):
    monkeypatch.setenv("TESTBED_SPARK_DRIVER_JAVA_OPTS", "-XX:SharedArchiveFile=/mine.jsa")
    settings.cache_clear()
    try:
        options = spark_settings(class_archive_options="-XX:SharedArchiveFile=/made.jsa")[
            "spark.driver.extraJavaOptions"].split()
    finally:
        settings.cache_clear()
    assert options.index("-XX:SharedArchiveFile=/made.jsa") < options.index("-XX:SharedArchiveFile=/mine.jsa")
    assert any(o.startswith("-XX:ErrorFile=") and o.endswith("-crash-%p.log") for o in options)
    assert "-XX:SharedArchiveFile=/made.jsa" not in spark_settings()["spark.driver.extraJavaOptions"]


def test_making_one_removes_the_archives_whose_jvm_or_jars_are_gone_and_keeps_the_others(tmp_path):
    from testbed.analysis.service.archive_maker import _remove_orphans, made_for

    alive, gone, unknown = (tmp_path / f"{name}.jsa" for name in ("alive", "gone", "unknown"))
    for archive in (alive, gone, unknown):
        archive.write_bytes(b"archive")
    made_for(alive).write_text(f'["{tmp_path}", "{tmp_path}"]')  # another virtualenv's, still there
    made_for(gone).write_text(f'["{tmp_path}", "{tmp_path / "removed-venv"}"]')
    _remove_orphans(tmp_path)
    assert alive.exists() and made_for(alive).exists()
    assert not gone.exists() and not made_for(gone).exists()
    assert not unknown.exists()  # no note of what it was made for: made again when wanted


def test_an_archive_a_stopped_making_left_is_removed_and_one_being_made_is_kept(tmp_path):
    import os
    import subprocess
    import sys

    from testbed.analysis.service.archive_maker import _remove_abandoned

    ended = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                               text=True).stdout)
    left, making = tmp_path / f".abc.{ended}.tmp", tmp_path / f".abc.{os.getpid()}.tmp"
    for staged in (left, making):
        staged.write_bytes(b"part of an archive")
    _remove_abandoned(tmp_path)
    assert not left.exists() and making.exists()


def test_a_cache_it_cannot_write_is_an_archive_error_naming_the_folder(tmp_path, jars, monkeypatch):
    from testbed.analysis.service.archive_maker import ArchiveError, ensure_archive

    not_a_folder = tmp_path / "cache-file"
    not_a_folder.write_text("a file where the cache directory should be")
    monkeypatch.setenv("TESTBED_CACHE_DIR", str(not_a_folder))
    monkeypatch.setattr(class_archive, "java_executable", lambda: Path("/bin/sh").resolve())
    settings.cache_clear()
    try:
        with pytest.raises(ArchiveError, match="cannot write it in .*cache-file"):
            ensure_archive()
    finally:
        settings.cache_clear()
