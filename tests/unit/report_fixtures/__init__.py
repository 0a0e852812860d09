"""Fixed analysis outputs of a small run (3 members, 6 partitions, 60 s) for report rendering tests.

small_run/ holds the saved run as analysis would leave it, except that the Parquet tables are kept
as rows in tables.json (reviewable text) and written as Parquet with analysis's own schemas here.
Story: m2 is bounced at 20 s (episodes 1, 2), m3 is paused 35-50 s past its session timeout, so
m1 and m2 take its partitions at 46 s while it still holds them (two duplicate-ownership episodes),
and it loses them at 50.2 s (episode 4). Result: fail (duplicate_ownership_ms), one unknown expectation.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

SMALL_RUN = Path(__file__).parent / "small_run"


def materialise(dest: Path, name: str = "20251122-082640-small-run") -> Path:
    """Copy the small run into ``dest/name`` and write its tables as Parquet; returns the run directory."""
    from testbed.analysis.outputs import to_table  # the analysis's exact schemas

    run_dir = dest / name
    shutil.copytree(SMALL_RUN, run_dir, ignore=shutil.ignore_patterns("tables.json"))
    tables_dir = run_dir / "analysis" / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    for table, rows in json.loads((SMALL_RUN / "tables.json").read_text()).items():
        pq.write_table(to_table(table, pd.DataFrame(rows)), tables_dir / f"{table}.parquet")
    return run_dir
