"""Every run under a folder as one row: what ran (scenario, matrix point, trial, versions, testbed revision) and
every figure of its analysis; and where a figure moved beyond the trials' interval from one revision to the next.

The rows are made by one Spark job: every run's ``result.json``, ``scenario.yaml`` and ``analysis/metrics.json``
are read by the executors (a task per slice of the file list) and parsed there into flat facts, merged per run;
the driver only lists the run directories and builds the table. A run without ``analysis/metrics.json`` (never
analysed, or interrupted before) is a row without figures: unknown, never zero.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from pyspark.sql import SparkSession

from ...run.layout import RunDir
from ..spark.session import check_executors_see
from .trials import median_interval, overlap

RUN_COLUMNS = ("run", "scenario", "point", "trial", "status", "started_ms", "testbed_revision", "kafka_version",
               "clients", "protocol")
UNKNOWN_REVISION = "unknown"  # runs made before result.json recorded it


def find_runs(root: Path, max_depth: int = 3) -> list[Path]:
    """Run directories (holding ``result.json``) under ``root``, down to ``max_depth`` levels (a benchmark's folder
    of runs inside the reports folder), sorted."""
    found: list[Path] = []
    level = [root]
    for _ in range(max_depth):
        below: list[Path] = []
        for directory in level:
            for child in sorted(p for p in directory.iterdir() if p.is_dir()):
                (found if RunDir(child).result.is_file() else below).append(child)
        level = below
    return sorted(found)


def _facts(path: str, text: str) -> tuple[str, dict[str, Any]]:
    """One file of a run as (run directory, facts); runs in the executors, so it imports what it needs."""
    import posixpath

    import yaml

    name, run = posixpath.basename(path), _run_of(path)
    facts: dict[str, Any] = {}
    try:
        if name == "result.json":
            result = json.loads(text)
            parameters = dict(result.get("parameters") or {})
            facts.update(scenario=result.get("scenario"), status=result.get("status"),
                         started_ms=result.get("started_ms"), trial=parameters.pop("trial", None),
                         point=", ".join(f"{k}={parameters[k]}" for k in sorted(parameters)),
                         testbed_revision=result.get("testbed_revision") or "unknown")
        elif name == "scenario.yaml":
            cluster = (yaml.safe_load(text) or {}).get("cluster") or {}
            facts["kafka_version"] = cluster.get("kafka_version")
        elif name == "metrics.json":
            document = json.loads(text)
            config = document.get("config") or {}
            versions = sorted({f"{m.get('client')} {m.get('client_version')}"
                               for m in (config.get("members") or {}).values()})
            facts.update(clients=", ".join(versions), protocol=config.get("protocol"))
            facts.update({f"metric:{k}": (v or {}).get("value") for k, v in (document.get("metrics") or {}).items()})
    except (ValueError, AttributeError, yaml.YAMLError) as exc:
        facts[f"error:{name}"] = f"{type(exc).__name__}: {exc}"
    return run, facts


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, **b}


def collect_runs(spark: SparkSession, root: Path) -> pd.DataFrame:
    """One row per run under ``root``: RUN_COLUMNS, then one column per metric (NaN where unknown or not
    analysed), and ``problems`` (a file that could not be read), in order of start."""
    root = root.resolve()
    runs = find_runs(root)
    if not runs:
        return pd.DataFrame(columns=[*RUN_COLUMNS, "problems"])
    check_executors_see(spark, str(root))
    files = [str(p) for run in runs for p in (RunDir(run).result, RunDir(run).scenario, RunDir(run).metrics)
             if p.is_file()]
    slices = max(1, min(len(files) // 50, spark.sparkContext.defaultParallelism * 4))
    # The executors open the files by path (checked visible to them above): a run directory's name may hold
    # characters that Hadoop's path globbing would read as patterns (``[``, ``{``, ``,``).
    merged = (spark.sparkContext.parallelize(files, slices).map(_read_facts).reduceByKey(_merge).collect())
    return runs_table(merged, root)


def _run_of(path: str) -> str:
    """The run directory of one of its files: ``<run>/result.json``, ``<run>/analysis/metrics.json``."""
    import posixpath

    run = posixpath.dirname(path)
    return posixpath.dirname(run) if posixpath.basename(path) == "metrics.json" else run


def _read_facts(path: str) -> tuple[str, dict[str, Any]]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return _facts(path, f.read())
    except OSError as exc:  # removed meanwhile, or unreadable
        return _run_of(path), {f"error:{path.rsplit('/', 1)[-1]}": f"{type(exc).__name__}: {exc}"}


def runs_table(merged: Iterable[tuple[str, dict[str, Any]]], root: Path) -> pd.DataFrame:
    rows = []
    for run, facts in merged:
        row: dict[str, Any] = {"run": str(Path(run).relative_to(root)) if Path(run).is_relative_to(root) else run}
        row.update({k: facts.get(k) for k in RUN_COLUMNS[1:]})
        row.update({k.removeprefix("metric:"): v for k, v in facts.items() if k.startswith("metric:")})
        row["problems"] = "; ".join(f"{k.removeprefix('error:')}: {v}" for k, v in facts.items()
                                    if k.startswith("error:")) or None
        rows.append(row)
    table = pd.DataFrame(rows)
    metrics = sorted(c for c in table.columns if c not in (*RUN_COLUMNS, "problems"))
    table = table[[*RUN_COLUMNS, *metrics, "problems"]]
    table["testbed_revision"] = table["testbed_revision"].fillna(UNKNOWN_REVISION)
    table["trial"] = pd.to_numeric(table["trial"], errors="coerce").astype("Int64")
    table["point"] = table["point"].fillna("")
    for name in metrics:
        table[name] = pd.to_numeric(table[name], errors="coerce")
    return table.sort_values(["started_ms", "run"], na_position="last").reset_index(drop=True)


def metric_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in table.columns if c not in (*RUN_COLUMNS, "problems")]


MIN_RUNS = 3  # trials per revision before its interval says anything (3: the median within [min, max], 75 %)


def changes(table: pd.DataFrame, metrics: Iterable[str] | None = None, min_runs: int = MIN_RUNS) -> pd.DataFrame:
    """Where a figure moved between consecutive revisions of one configuration (scenario and matrix point):
    the runs of each revision (its trials) give a median and interval (testbed.analysis.runs.trials), and a change
    is two consecutive revisions, each with at least ``min_runs`` known values, whose intervals do not overlap.
    Revisions are ordered by their first run."""
    found: list[dict[str, Any]] = []
    names = list(metrics) if metrics is not None else metric_columns(table)
    for (scenario, point), config in table.groupby(["scenario", "point"], dropna=False, sort=True):
        order = config.groupby("testbed_revision", sort=False)["started_ms"].min().sort_values().index.tolist()
        for before, after in zip(order, order[1:]):
            a = config[config["testbed_revision"] == before]
            b = config[config["testbed_revision"] == after]
            for name in names:
                ia, ib = median_interval(a[name].dropna().tolist()), median_interval(b[name].dropna().tolist())
                if min(ia.n, ib.n) >= min_runs and overlap(ia, ib) is False:
                    found.append({"scenario": scenario, "point": point, "metric": name, "from_revision": before,
                                  "to_revision": after, "from_median": ia.median, "from_low": ia.low,
                                  "from_high": ia.high, "from_runs": ia.n, "to_median": ib.median, "to_low": ib.low,
                                  "to_high": ib.high, "to_runs": ib.n,
                                  "direction": "higher" if (ib.median or 0) > (ia.median or 0) else "lower"})
    return pd.DataFrame(found, columns=["scenario", "point", "metric", "from_revision", "to_revision", "from_median",
                                        "from_low", "from_high", "from_runs", "to_median", "to_low", "to_high",
                                        "to_runs", "direction"])
