"""testbed's run-time files ship inside the package and are found from it, never from a checkout around it."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import testbed
from testbed.cache import import_root, pythonpath_with_testbed
from testbed.package_files import PACKAGE_DIR, RECIPES_DIR
from testbed.run.revision import checkout_revision
from testbed.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_every_file_of_the_package() -> None:
    """hatchling puts every file under testbed/ into the wheel (recipes, templates, Java sources, scripts: testbed
    reads them at run time) except what .gitignore names: a pattern there that matched one would leave it out of
    every installed testbed."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert config["build-system"]["build-backend"] == "hatchling.build"
    assert config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["testbed"]
    files = [p.relative_to(REPO).as_posix() for p in PACKAGE_DIR.rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    assert "testbed/brokers/recipes/kafka/Dockerfile" in files
    asked = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "--stdin"], input="\n".join(files),
                           capture_output=True, text=True)
    assert asked.returncode in (0, 1), asked.stderr  # 1: nothing ignored
    assert asked.stdout.split() == []


def test_the_image_recipes_are_in_the_package_and_the_default_recipe_dir() -> None:
    assert RECIPES_DIR.is_relative_to(Path(testbed.__file__).resolve().parent)
    assert {p.relative_to(RECIPES_DIR).as_posix() for p in RECIPES_DIR.rglob("*") if p.is_file()} >= {
        "base/build.sh", "kafka/Dockerfile", "kafka/entrypoint.sh", "kafka/class-archive.sh", "kafka/log4j2.xml",
        "kafka/pom.xml"}
    assert Settings().docker_dir == RECIPES_DIR
    # A checkout keeps `docker/` at its top as a link to them.
    assert (REPO / "docker").resolve() == RECIPES_DIR


def test_the_import_root_offers_this_testbed_and_nothing_else() -> None:
    root = import_root()
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["testbed"]
    assert (root / "testbed").resolve() == PACKAGE_DIR
    assert import_root() == root  # made once, then reused
    assert pythonpath_with_testbed("/theirs") == f"{root}:/theirs" and pythonpath_with_testbed() == str(root)


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_a_revision_is_read_only_at_the_top_of_a_checkout(tmp_path: Path) -> None:
    repo = tmp_path / "their-repo"
    inside = repo / ".venv" / "lib" / "site-packages"
    inside.mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "f").write_text("x")
    _git(repo, "add", "f")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    top = checkout_revision(repo)
    assert top is not None and len(top) == 12
    (repo / "f").write_text("y")
    assert checkout_revision(repo) == top + "+dirty"
    # An installed testbed inside someone's repository has no revision of its own there.
    assert checkout_revision(inside) is None
    assert checkout_revision(tmp_path / "nowhere") is None


def test_the_package_is_compiled_once_and_again_only_where_a_source_changed(tmp_path: Path) -> None:
    import importlib.util
    import os

    from testbed.package_files import compile_package

    module = tmp_path / "sub" / "mod.py"
    module.parent.mkdir()
    module.write_text("X = 1\n")
    cached = Path(importlib.util.cache_from_source(str(module)))
    assert compile_package(tmp_path) and cached.is_file()
    written = cached.stat().st_mtime_ns
    assert compile_package(tmp_path) and cached.stat().st_mtime_ns == written, "up to date: not written again"
    module.write_text("X = 22\n")
    os.utime(module, ns=(written + 10**9, written + 10**9))
    assert compile_package(tmp_path) and cached.stat().st_mtime_ns != written
