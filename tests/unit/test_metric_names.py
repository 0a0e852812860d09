"""Scenario validation reads the metric names without importing the analysis (pandas, pyarrow, Spark's Python
side): from a cache the first lookup fills, keyed by the analysis's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from testbed.analysis import metric_names as names_module
from testbed.analysis.catalog import CATALOG
from testbed.package_files import sources_fingerprint

ROOT = Path(__file__).resolve().parents[2]


def test_the_names_are_the_catalogs_in_its_order() -> None:
    assert names_module.metric_names() == tuple(CATALOG)


def test_a_warm_cache_validates_a_scenario_without_importing_the_analysis(tmp_path: Path) -> None:
    env = {**os.environ, "TESTBED_CACHE_DIR": str(tmp_path / "cache")}
    check = ("import sys; from pathlib import Path; from testbed.scenario.loader import expand; "
             "expand(Path(sys.argv[1])); "
             "heavy = sorted(m for m in ('pyspark', 'pandas', 'pyarrow') if m in sys.modules); print(heavy)")
    scenario = str(ROOT / "scenarios" / "rolling-upgrade.yaml")
    cold = subprocess.run([sys.executable, "-c", check, scenario], env=env, capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert cold.stdout.strip() != "[]"  # the first lookup imports the catalog and writes the cache
    assert list((tmp_path / "cache" / "metric-names").glob("*.json"))
    warm = subprocess.run([sys.executable, "-c", check, scenario], env=env, capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert warm.stdout.strip() == "[]", warm.stdout + warm.stderr


def test_an_edited_stage_changes_the_fingerprint(tmp_path: Path) -> None:
    stage = tmp_path / "records" / "stage.py"
    stage.parent.mkdir()
    stage.write_text("CATALOGUE = ()\n")
    before = sources_fingerprint(tmp_path)
    os.utime(stage, ns=(stage.stat().st_atime_ns, stage.stat().st_mtime_ns + 1_000_000))
    edited = sources_fingerprint(tmp_path)
    assert edited != before
    (tmp_path / "records" / "new_stage.py").write_text("")
    assert sources_fingerprint(tmp_path) not in (before, edited)
