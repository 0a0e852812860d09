"""Pure checkers of an analysed run: tables and metrics in, verdicts out.

A checker that raises becomes ``unknown`` with the error, never a pass; a metric the analysis could
not make (``unknown``) makes the checker unknown too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json

import pandas as pd

from testbed.analysis.metrics import TABLES, MetricValue, Metrics

from .allowed import AllowedAnomalies, allowed_anomalies
from .verdict import Verdict


@dataclass(frozen=True)
class Evidence:
    """What checkers may look at: the analysis result and its tables."""

    metrics: Metrics
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def metric(self, name: str) -> MetricValue:
        return self.metrics[name]


def load_evidence(run_dir: str | Path) -> Evidence:
    root = Path(run_dir)
    metrics = Metrics.model_validate_json((root / "analysis" / "metrics.json").read_text())
    tables = {}
    for name in TABLES:
        path = root / "analysis" / "tables" / f"{name}.parquet"
        if path.exists():
            tables[name] = pd.read_parquet(path)
    return Evidence(metrics, tables)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Plain-JSON rows (numpy scalars would not serialise with the verdict)."""
    return json.loads(frame.head(10).to_json(orient="records"))


def _count_check(ev: Evidence, checker: str, metric: str, allowed: bool, what: str, examples: list[dict[str, Any]]) -> Verdict:
    m = ev.metric(metric)
    if not m.known:
        return Verdict.of(checker, "unknown", f"{metric} unknown: {m.unknown}")
    n = int(m.value or 0)
    if n == 0:
        return Verdict.of(checker, "valid", f"no {what}", 0)
    if allowed:
        return Verdict.of(checker, "valid", f"{n} {what}, allowed in this configuration", n, examples)
    return Verdict.of(checker, "invalid", f"{n} {what}, not allowed in this configuration", n, examples)


def check_no_loss(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    return _count_check(ev, "no_loss", "lost_records", allowed.lost_records, "acknowledged records never processed",
                        ev.metrics.examples.get("lost_records", []))


def check_concurrent_duplicates(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    ex = [e for e in ev.metrics.examples.get("duplicates", []) if e.get("concurrent")]
    return _count_check(ev, "concurrent_duplicates", "duplicates_concurrent", allowed.concurrent_duplicates,
                        "records processed twice while two members owned the partition", ex)


def check_redelivery(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    ex = [e for e in ev.metrics.examples.get("duplicates", []) if not e.get("concurrent")]
    return _count_check(ev, "redelivery", "duplicates_redelivered", allowed.redelivered_duplicates,
                        "records re-delivered after a revoke or crash", ex)


def check_duplicate_ownership(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    table = ev.tables.get("duplicate_ownership")
    ex = _records(table.sort_values("duration_ms", ascending=False)) if table is not None else []
    return _count_check(ev, "duplicate_ownership", "duplicate_ownership_episodes", allowed.duplicate_ownership,
                        "spans with two owners of one partition", ex)


def check_expected_duplicate_ownership(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A member paused past its session timeout must show up as duplicate ownership: if the testbed
    does not see it, the measurement (or the fault) is broken."""
    name = "expected_duplicate_ownership"
    if not allowed.duplicate_ownership_expected:
        return Verdict.of(name, "valid", "no duplicate ownership expected in this configuration")
    m = ev.metric("duplicate_ownership_episodes")
    if not m.known:
        return Verdict.of(name, "unknown", f"duplicate_ownership_episodes unknown: {m.unknown}")
    if int(m.value or 0) == 0:
        return Verdict.of(name, "invalid", "a member was paused past its session timeout but no duplicate ownership was found", 0)
    return Verdict.of(name, "valid", f"{m.value} duplicate-ownership span(s) found, as expected", int(m.value))


def check_needless_revocations(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    table = ev.tables.get("revocations")
    ex = _records(table[table["needless"].astype(bool)]) if table is not None and len(table) else []
    return _count_check(ev, "needless_revocations", "needless_revocations", allowed.needless_revocations,
                        "partitions revoked and given back to the same member", ex)


CHECKERS: tuple[Callable[[Evidence, AllowedAnomalies], Verdict], ...] = (
    check_no_loss,
    check_concurrent_duplicates,
    check_redelivery,
    check_duplicate_ownership,
    check_expected_duplicate_ownership,
    check_needless_revocations,
)


def run_checkers(ev: Evidence, allowed: AllowedAnomalies | None = None, checkers=CHECKERS) -> list[Verdict]:
    try:
        allowed = allowed or allowed_anomalies(ev.metrics.config)
    except Exception as exc:  # noqa: BLE001 - any failure to decide allowances leaves every verdict unknown
        return [Verdict.of(c.__name__.removeprefix("check_"), "unknown", f"allowances failed: {exc!r}") for c in checkers]
    out = []
    for checker in checkers:
        name = checker.__name__.removeprefix("check_")
        try:
            out.append(checker(ev, allowed))
        except Exception as exc:  # noqa: BLE001 - a crashing checker must never pass
            out.append(Verdict.of(name, "unknown", f"checker crashed: {type(exc).__name__}: {exc}"))
    return out
