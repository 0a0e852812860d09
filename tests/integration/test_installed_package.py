"""testbed as a team uses it from its own repository: the wheel installed into a new virtualenv outside this
checkout, the example user repository (examples/your-repository: its own consumer program, a scenario, a pytest
test) copied beside it, and both `pytest -m integration` and `testbed run` run there.

Nothing of the checkout may be reachable: the package comes from the wheel, the working directory is the user's
repository, and neither PYTHONPATH nor TESTBED_DOCKER_DIR is set. The wheel's dependencies are the ones this
virtualenv already has (a path line in the new one): downloading pyspark again would test PyPI, not testbed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]
USER_REPOSITORY = CHECKOUT / "examples" / "your-repository"
# What a clean clone holds besides the sources: none of it belongs in a wheel, and an old build/ would put
# files deleted since into it.
NOT_SOURCES = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "reports", "__pycache__",
                                     ".pytest_cache", ".hypothesis")


def _run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None,
         timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{' '.join(command)} (exit {done.returncode}):\n{done.stdout[-4000:]}\n" \
                                 f"{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A virtualenv with the wheel installed, and the environment a user's shell would have in it."""
    work = tmp_path_factory.mktemp("installed")
    sources = work / "sources"
    shutil.copytree(CHECKOUT, sources, symlinks=True, ignore=NOT_SOURCES)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"),
          str(sources)], cwd=work)
    (wheel,) = (work / "dist").glob("kafka_rebalance_testbed-*.whl")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    python = venv / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=work)
    # Written after the install, so that pip sees no other testbed while it installs this one.
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                   cwd=work).stdout.strip()
    Path(purelib, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TESTBED_DOCKER_DIR", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv))
    where = _run([str(python), "-c", "import testbed; print(testbed.__file__)"], cwd=work, env=env).stdout.strip()
    assert Path(where).is_relative_to(venv), f"testbed imported from {where}, not the installed wheel"
    return venv, env


@pytest.fixture
def user_repository(tmp_path: Path) -> Path:
    repo = tmp_path / "payments-service"
    shutil.copytree(USER_REPOSITORY, repo, ignore=shutil.ignore_patterns("__pycache__", "reports"))
    return repo


def _single_run(reports: Path) -> dict:
    (run,) = [p for p in reports.iterdir() if (p / "result.json").exists()]
    assert (run / "report.html").exists()
    return json.loads((run / "result.json").read_text())


def test_a_user_repository_sets_up_and_passes_its_integration_test(installed, user_repository) -> None:
    venv, env = installed
    _run([str(venv / "bin" / "testbed"), "setup"], cwd=user_repository, env=env)
    _run([str(venv / "bin" / "python"), "-m", "pytest", "-m", "integration", "-p", "no:cacheprovider", "-q"],
         cwd=user_repository, env=env)
    result = _single_run(user_repository / "reports")
    assert result["status"] == "pass"
    # Outside a checkout a run is stamped with the package's version.
    assert result["testbed_revision"] == "0.1.0"


def test_testbed_run_works_in_a_user_repository(installed, user_repository) -> None:
    venv, env = installed
    _run([str(venv / "bin" / "testbed"), "run", "scenarios/release-rollout.yaml"], cwd=user_repository, env=env)
    result = _single_run(user_repository / "reports")
    assert result["status"] == "pass" and result["scenario"] == "release-rollout"
