"""Repeated trials: every metric's median with a distribution-free confidence interval, per configuration.

A figure that compares configurations needs several trials: a difference inside the intervals is not a
finding. The interval is the one for a median from order statistics: with the values sorted,
``[x(k), x(n-k+1)]`` covers the true median with probability ``1 - 2 P(Binomial(n, 1/2) <= k - 1)``,
whatever the distribution. The largest k reaching 95 % is used; below six trials 95 % cannot be reached,
so ``[min, max]`` is given with its real coverage (93.75 % for five trials, 87.5 % for four).
Judging the trials against a scenario's expectations is the scenario's (``testbed.scenario.evaluate``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from math import comb
from pathlib import Path
from statistics import median

from pydantic import BaseModel, Field

from ...run.layout import RunDir
from ...run.metrics import Metrics

CONFIDENCE = 0.95


class Interval(BaseModel):
    n: int = Field(description="trials in which the metric was known")
    unknown: int = Field(default=0, description="trials in which it was unknown (never counted as 0)")
    median: float | None = None
    low: float | None = None
    high: float | None = None
    coverage: float | None = Field(default=None, description="probability that [low, high] holds the true median")
    values: list[float] = Field(default_factory=list)


def coverage(n: int, k: int) -> float:
    """Coverage of ``[x(k), x(n-k+1)]`` as an interval for the median of n values (1 <= k <= n/2)."""
    tail = sum(comb(n, i) for i in range(k)) / 2**n
    return 1 - 2 * tail


def median_interval(values: Sequence[float], unknown: int = 0, level: float = CONFIDENCE) -> Interval:
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return Interval(n=0, unknown=unknown)
    k = 1
    while k + 1 <= n // 2 and coverage(n, k + 1) >= level:
        k += 1
    cov = coverage(n, k) if n >= 2 else 0.0
    return Interval(n=n, unknown=unknown, median=median(xs), low=xs[k - 1], high=xs[n - k], coverage=round(cov, 4),
                    values=xs)


def overlap(a: Interval, b: Interval) -> bool | None:
    """Whether two intervals share a value (then the difference is not a finding); None if one is missing."""
    if a.low is None or b.low is None or a.high is None or b.high is None:
        return None
    return a.low <= b.high and b.low <= a.high


class TrialGroup(BaseModel):
    """One configuration (a scenario run or one matrix point) repeated ``len(run_dirs)`` times."""

    label: str
    parameters: dict = Field(default_factory=dict)
    run_dirs: list[str]
    statuses: list[str] = Field(default_factory=list)
    metrics: dict[str, Interval] = Field(default_factory=dict)
    units: dict[str, str] = Field(default_factory=dict)


class TrialsSummary(BaseModel):
    """``summary.json`` of ``testbed run|matrix --repeat N``."""

    scenario: str
    repeat: int
    judge: str
    asked: int | None = None  # the trials asked for, when an interruption left fewer (``repeat``) to summarise
    method: str = ("median with a distribution-free order-statistic interval; largest symmetric pair reaching "
                   "95 % coverage, else [min, max] with its real coverage")
    groups: list[TrialGroup]


def summarise_group(label: str, parameters: dict, run_dirs: Sequence[Path], statuses: Sequence[str] = ()) -> TrialGroup:
    loaded: list[Metrics] = []
    for d in run_dirs:
        path = RunDir(Path(d)).metrics
        if path.exists():
            loaded.append(Metrics.model_validate_json(path.read_text()))
    names = sorted({name for m in loaded for name in m.metrics})
    metrics, units = {}, {}
    for name in names:
        known = [m.metrics[name].value for m in loaded if name in m.metrics and m.metrics[name].value is not None]
        missing = len(run_dirs) - len(known)  # unknown, or no analysis at all in that trial
        metrics[name] = median_interval(known, unknown=missing)
        units[name] = next(m.metrics[name].unit for m in loaded if name in m.metrics)
    return TrialGroup(label=label, parameters=parameters, run_dirs=[str(d) for d in run_dirs], statuses=list(statuses),
                      metrics=metrics, units=units)


def write_summary(summary: TrialsSummary, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "summary.json"
    path.write_text(json.dumps(summary.model_dump(mode="json"), indent=2))
    return path
