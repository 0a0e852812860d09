"""Whether a change to the analysis left every figure as it was: saved runs analysed by two revisions, compared.

    # copies of the saved runs, one per revision
    cp -r runs/ before/ && cp -r runs/ after/
    # analyse each copy with its revision (PYTHONPATH picks the checkout; one Spark session for all the runs)
    (cd old-checkout && PYTHONPATH=$PWD .venv/bin/python benchmarks/analysis_equivalence.py reanalyse before/)
    .venv/bin/python benchmarks/analysis_equivalence.py reanalyse after/
    .venv/bin/python benchmarks/analysis_equivalence.py compare before/ after/ --new config.group_kinds

``reanalyse`` does what ``testbed report`` does before it renders: the analysis with the run's own scenario
settings, then the checkers and expectations into result.json (a history without scenario.yaml or result.json,
such as the unit tests' hand-made ones: the analysis alone, with the default settings). ``compare`` holds every run's
analysis/metrics.json value by value (``run_dir`` aside: the copies live at different paths; ``--new`` names
fields only the second revision writes) and every table of analysis/tables/ row by row (sorted, so that row
order does not count), and the checkers' verdicts of result.json. It prints one line per difference and a
last line with the number of runs compared; it exits 1 when something differs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

METRICS = Path("analysis/metrics.json")
TABLES = Path("analysis/tables")


def run_dirs(root: Path) -> list[Path]:
    """Every run directory under ``root`` (one with a history), sorted."""
    return sorted(p.parent for p in root.rglob("history") if p.is_dir())


def reanalyse(root: Path) -> None:
    import testbed
    from testbed.analysis import analyse, stop_spark
    from testbed.errors import ConfigError
    from testbed.run.layout import RunDir
    from testbed.run.result import RunResult
    from testbed.scenario.evaluate import evaluate
    from testbed.scenario.loader import read_yaml, validate

    print(f"testbed from {Path(testbed.__file__).parent}", flush=True)
    try:
        for path in run_dirs(root):
            rd = RunDir(path)
            scenario, why = None, "no scenario or result.json"  # a hand-made history (a test's): the analysis alone
            if rd.result.exists() and rd.scenario.exists():
                try:
                    scenario = validate(rd.scenario, read_yaml(rd.scenario))
                except ConfigError as exc:  # a run of an older format: the analysis alone
                    why = f"its scenario no longer validates: {str(exc).splitlines()[0]}"
            if scenario is None:
                try:
                    analyse(path)
                    print(f"{path.relative_to(root)}: analysed ({why})", flush=True)
                except Exception as exc:  # noqa: BLE001 - refused (both revisions alike): no metrics in either
                    first_line = str(exc).splitlines()[0] if str(exc) else ""
                    print(f"{path.relative_to(root)}: refused: {type(exc).__name__}: {first_line}", flush=True)
                continue
            result = evaluate(rd, scenario, RunResult.load(rd.result))
            result.save(rd.result)
            print(f"{path.relative_to(root)}: {result.status}{' ' + result.analysis_error if result.analysis_error else ''}",
                  flush=True)
    finally:
        stop_spark()


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Every place two JSON values differ (dictionaries by key, lists by position)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in the first" for k in a.keys() - b.keys()]
        out += [f"{where}.{k}: only in the second" for k in b.keys() - a.keys()]
        return out + [d for k in a.keys() & b.keys() for d in differences(a[k], b[k], f"{where}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, f"{where}[{i}]")]
    same = a == b and type(a) is type(b)  # 3 and 3.0 read alike but are written apart
    return [] if same else [f"{where}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]


def without(doc: dict[str, Any], dotted: str) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        doc = doc.get(part) or {}
    doc.pop(last, None)


def sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty or not len(frame.columns):
        return frame.reset_index(drop=True)
    keys = frame.astype(str)  # mixed and null values sort as text
    order = keys.sort_values(list(keys.columns)).index
    return frame.loc[order].reset_index(drop=True)


def compare_run(first: Path, second: Path, new_fields: list[str]) -> list[str]:
    out: list[str] = []
    docs = []
    for run in (first, second):
        doc = json.loads((run / METRICS).read_text()) if (run / METRICS).exists() else None
        if doc is not None:
            doc.pop("run_dir", None)
        docs.append(doc)
    if docs[0] is None or docs[1] is None:
        if docs[0] != docs[1]:
            out.append("metrics.json: exists in only one")
    else:
        for field in new_fields:
            without(docs[1], field)
        out += [f"metrics.json{d}" for d in differences(docs[0], docs[1])]
    names = sorted({p.name for run in (first, second) for p in (run / TABLES).glob("*.parquet")})
    for name in names:
        paths = [run / TABLES / name for run in (first, second)]
        if not all(p.exists() for p in paths):
            out.append(f"{name}: exists in only one")
            continue
        a, b = (sorted_rows(pd.read_parquet(p)) for p in paths)
        try:
            pd.testing.assert_frame_equal(a, b, check_dtype=True)
        except AssertionError as exc:
            out.append(f"{name}: {' '.join(str(exc).split())[:300]}")
    # A checker renamed since (run.result.EARLIER_CHECKER_NAMES) is compared under its name now, as the report reads it.
    from testbed.run.result import EARLIER_CHECKER_NAMES

    verdicts = [[{k: EARLIER_CHECKER_NAMES.get(c.get(k), c.get(k)) if k == "checker" else c.get(k)
                  for k in ("checker", "status", "count", "message")}
                 for c in json.loads((run / "result.json").read_text()).get("checks", [])]
                if (run / "result.json").exists() else None for run in (first, second)]
    out += [f"result.json checks{d}" for d in differences(verdicts[0], verdicts[1])]
    return out


def compare(first: Path, second: Path, new_fields: list[str]) -> int:
    runs = [p.relative_to(first) for p in run_dirs(first)]
    missing = [r for r in runs if not (second / r).is_dir()]
    differing = 0
    for run in runs:
        if run in missing:
            print(f"{run}: not in {second}")
            continue
        found = compare_run(first / run, second / run, new_fields)
        differing += bool(found)
        for line in found:
            print(f"{run}: {line}")
    compared = len(runs) - len(missing)
    print(f"{compared} runs compared, {differing} with differences, {len(missing)} missing")
    return 1 if differing or missing else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    again = sub.add_parser("reanalyse", help="analyse and judge every run under a folder again, in place")
    again.add_argument("runs", type=Path)
    both = sub.add_parser("compare", help="compare the analyses of two copies of the same runs")
    both.add_argument("first", type=Path)
    both.add_argument("second", type=Path)
    both.add_argument("--new", action="append", default=[], metavar="FIELD",
                      help="a dotted field of metrics.json only the second revision writes (left out)")
    args = parser.parse_args()
    if args.command == "reanalyse":
        reanalyse(args.runs)
        return 0
    return compare(args.first, args.second, args.new)


if __name__ == "__main__":
    sys.exit(main())
