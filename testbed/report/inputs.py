"""Everything a report shows, read from a saved run directory; absent or broken pieces become ``Missing``.

Reports never recompute measurements: they read analysis/metrics.json, the Parquet tables
(docs/metrics.md; harness markers from ``harness_actions``, latency over time from
``latency_timeseries``), result.json and scenario.yaml. The history itself is read only for member
specs when analysis failed, through the typed reader.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, TypeVar

import pandas as pd
import pyarrow.parquet as pq
from pydantic import ValidationError

from testbed.analysis.catalog import SCHEMAS
from testbed.history.events import MARKS, SPANS, Started
from testbed.history.writer import read_events
from testbed.run.layout import RunDir
from testbed.run.result import RunResult

T = TypeVar("T")


@dataclass(frozen=True)
class Missing:
    """A piece of the report that cannot be shown, and why."""

    reason: str


@dataclass(frozen=True)
class NoneFound:
    """A chart of something the run had none of (no pause, no rebalance episode, no share delivery): one
    sentence in its place, never empty axes."""

    sentence: str


@dataclass(frozen=True)
class Got(Generic[T]):
    value: T


Loaded = Got[T] | Missing


def _needed(tables: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The columns the charts need of each table, held against the analysis's schemas (a table or column it renames
    fails here, on import, not in a chart). Only the ones needed: a table an older analysis wrote without a later
    column still renders."""
    for name, columns in tables.items():
        if name not in SCHEMAS:
            raise ValueError(f"the report reads a table the analysis does not write: {name}")
        if unknown := [c for c in columns if c not in SCHEMAS[name].names]:
            raise ValueError(f"table {name}: no column(s) {', '.join(unknown)} in its schema")
    return tables


# Columns each table must have for the charts that use it (a subset of its schema: testbed.analysis.catalog.SCHEMAS).
TABLE_COLUMNS: dict[str, tuple[str, ...]] = _needed({
    "ownership_intervals": ("topic", "partition", "member", "start_ms", "end_ms", "end_reason"),
    "revocations": ("ts_ms", "member", "partition", "category", "needless", "episode_id"),
    "rebalance_episodes": ("episode_id", "start_ms", "end_ms", "duration_ms", "trigger", "teardown",
                           "broker_prepare_ms", "broker_stabilized_ms", "broker_duration_ms"),
    "duplicate_ownership": ("topic", "partition", "start_ms", "end_ms", "duration_ms", "members"),
    "duplicate_processings": ("topic", "partition", "first_offset", "last_offset", "member", "ts_ms", "cause",
                              "previous_member", "previous_ts_ms", "previous_end", "commit_ms", "commit_error",
                              "committed_offset", "commit_gap"),
    "partition_pauses": ("topic", "partition", "kind", "start_ms", "end_ms", "pause_ms", "open", "cause", "episode_id"),
    "timeseries": ("second", "processed", "processed_unique", "produced", "lag", "duplicates"),
    "broker_rebalances": ("broker", "ts_ms", "event", "generation"),
    "latency_timeseries": ("second", "width_s", "p50_ms", "p99_ms", "max_ms"),
    "harness_actions": ("ts_ms", "kind", "target"),
    "host_samples": ("ts_ms", "interval_ms", "cpu_busy_pct", "saturated", "saturated_by"),
    "member_closes": ("member", "stop_ms", "close_ms", "cause", "reason", "hung"),
    "handler_errors": ("member", "ts_ms", "error_type", "message", "records", "action"),
    "member_crashes": ("member", "ts_ms", "exit_code", "signal", "exit", "exception_type", "message", "partitions",
                       "restart_in_s", "restart_refused"),
    "crash_loops": ("topic", "partition", "crashes", "restarts", "members", "first_ms", "last_ms", "ongoing",
                    "exception_type", "message", "exit", "stuck_at_offset", "records_behind", "pause_ms", "pause_open"),
    "share_delivery_counts": ("delivery_count", "records", "acquisitions", "records_by_deliveries"),
    "share_timeline": ("second", "member", "reason", "acquisitions"),
    "streams_task_spans": ("member", "task", "role", "start_ms", "end_ms"),
    "streams_task_moves": ("phase", "task", "from_member", "to_member", "held_as", "last_old_ms", "assigned_ms",
                           "assignment_wait_ms", "restoration_ms", "resumption_ms", "pause_ms"),
    "streams_restorations": ("member", "partition", "start_ms", "duration_ms", "records"),
})


@dataclass(frozen=True)
class HarnessMark:
    kind: str
    target: str | None
    start_ms: int
    end_ms: int | None = None  # None: an instant
    reason: str | None = None  # the action's own reason, e.g. a member_stop's "fleet_close" (the run's end)


@dataclass(frozen=True)
class RawLink:
    label: str
    path: Path  # absolute; templates get it relative to the page


class LazyTables(Mapping[str, "Loaded[pd.DataFrame]"]):
    """The analysis's tables a report reads (TABLE_COLUMNS), each read from its file when first asked for: the
    index of a reports folder, rendered again after every run, shows each run's verdict and identity and reads none
    of them (all of them cost 30 ms a run: seconds once a folder holds hundreds of runs)."""

    def __init__(self, run: RunDir, metrics: Loaded[dict[str, Any]]) -> None:
        self._run = run
        self._metrics = metrics
        self._read: dict[str, Loaded[pd.DataFrame]] = {}

    def __getitem__(self, name: str) -> Loaded[pd.DataFrame]:
        if name not in TABLE_COLUMNS:
            raise KeyError(name)
        if name not in self._read:
            self._read[name] = _load_table(self._run, name, self._metrics)
        return self._read[name]

    def __iter__(self) -> Iterator[str]:
        return iter(TABLE_COLUMNS)

    def __len__(self) -> int:
        return len(TABLE_COLUMNS)


@dataclass
class RunOutputs:
    """One run's saved outputs as the report needs them."""

    run: RunDir
    result: Loaded[RunResult]
    metrics: Loaded[dict[str, Any]]
    tables: Mapping[str, Loaded[pd.DataFrame]]
    scenario_text: Loaded[str]
    members: Loaded[dict[str, dict[str, Any]]]
    raw_links: list[RawLink] = field(default_factory=list)

    @cached_property
    def harness(self) -> Loaded[list[HarnessMark]]:
        """The harness's actions as marks and spans on the charts' time axis."""
        actions = self.tables["harness_actions"]
        return actions if isinstance(actions, Missing) else Got(harness_marks(actions.value.to_dict("records")))

    @property
    def name(self) -> str:
        return self.run.root.name

    def table(self, name: str) -> pd.DataFrame | None:
        got = self.tables.get(name)
        return got.value if isinstance(got, Got) else None

    def metric_values(self) -> dict[str, dict[str, Any]]:
        return self.metrics.value.get("metrics", {}) if isinstance(self.metrics, Got) else {}

    def config(self) -> dict[str, Any]:
        return self.metrics.value.get("config", {}) if isinstance(self.metrics, Got) else {}

    def cutoff_words(self) -> str:
        """What ended the figures' time: 'the drain ended', or 'the run ended' for a run that stopped before its
        drain (an interruption, an error)."""
        windows = (self.metrics.value.get("windows") or {}) if isinstance(self.metrics, Got) else {}
        return "the run ended" if windows.get("run_start_ms") and not windows.get("drain_end_ms") else "the drain ended"

    def time_origin_ms(self) -> int | None:
        """Zero of every chart's time axis: the harness's run_start, else the earliest thing seen."""
        if isinstance(self.metrics, Got):
            start = (self.metrics.value.get("windows") or {}).get("run_start_ms")
            if start is not None:
                return int(start)
        candidates: list[int] = []
        owners = self.table("ownership_intervals")
        if owners is not None and len(owners):
            candidates.append(int(owners["start_ms"].min()))
        if isinstance(self.harness, Got) and self.harness.value:
            candidates.append(min(m.start_ms for m in self.harness.value))
        if isinstance(self.result, Got):
            candidates.append(self.result.value.started_ms)
        return min(candidates) if candidates else None


def load_run(run_dir: str | os.PathLike[str]) -> RunOutputs:
    root = Path(run_dir)
    if not root.is_dir():
        raise FileNotFoundError(f"run_dir {str(root)!r} is not a directory (expected a run directory, see RunDir)")
    run = RunDir(root)
    metrics = _load_metrics(run)
    return RunOutputs(
        run=run,
        result=_load_result(run),
        metrics=metrics,
        tables=LazyTables(run, metrics),
        scenario_text=_load_text(run.scenario, "no scenario.yaml in the run directory"),
        members=_load_members(run, metrics),
        raw_links=_raw_links(run),
    )


def _load_result(run: RunDir) -> Loaded[RunResult]:
    if not run.result.is_file():
        return Missing("no result.json: the run did not record a verdict")
    try:
        return Got(RunResult.load(run.result))
    except (ValidationError, ValueError) as e:
        return Missing(f"result.json is not a valid RunResult: {_first_line(e)}")


def _load_metrics(run: RunDir) -> Loaded[dict[str, Any]]:
    if not run.metrics.is_file():
        return Missing("no analysis/metrics.json: analysis did not run or failed")
    try:
        data = json.loads(run.metrics.read_text())
    except ValueError as e:
        return Missing(f"analysis/metrics.json is not JSON: {e}")
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        return Missing("analysis/metrics.json has no 'metrics' object (see docs/metrics.md)")
    return Got(data)


def _load_table(run: RunDir, name: str, metrics: Loaded[dict[str, Any]]) -> Loaded[pd.DataFrame]:
    path = run.table(name)
    if not path.is_file():
        why = ("analysis failed or did not run" if isinstance(metrics, Missing)
               else "analysis wrote no such table (an older analysis: `testbed report` analyses the run again)")
        return Missing(f"no analysis/tables/{name}.parquet: {why}")
    try:
        frame = pq.read_table(path).to_pandas()
    except Exception as e:  # a torn or foreign file must not stop the rest of the report
        return Missing(f"analysis/tables/{name}.parquet unreadable: {_first_line(e)}")
    absent = [c for c in TABLE_COLUMNS[name] if c not in frame.columns]
    if absent:
        return Missing(f"analysis/tables/{name}.parquet lacks column(s) {', '.join(absent)} (schema: docs/metrics.md)")
    return Got(frame)


def _load_text(path: Path, why_missing: str) -> Loaded[str]:
    if not path.is_file():
        return Missing(why_missing)
    return Got(path.read_text(errors="replace"))


def _load_members(run: RunDir, metrics: Loaded[dict[str, Any]]) -> Loaded[dict[str, dict[str, Any]]]:
    """Member specs as run: metrics.json config.members, else each member's own `started` event."""
    if isinstance(metrics, Got):
        members = (metrics.value.get("config") or {}).get("members")
        if members:
            return Got(dict(sorted(members.items())))
    started: dict[str, dict[str, Any]] = {}
    for path in sorted(run.members.glob("*.jsonl")) if run.members.is_dir() else []:
        first = _first_started(path)
        if first is not None:
            started[path.stem] = first.model_dump(mode="json")
    if not started:
        return Missing("no member specs: metrics.json has no config.members and no member wrote a `started` event")
    return Got(started)


def _first_started(path: Path) -> Started | None:
    try:
        return next((e for e in read_events(path) if isinstance(e, Started)), None)
    except ValueError:  # a garbled line (JSON or schema) leaves that member's spec unknown, not the page
        return None


def _reason(detail: dict[str, Any] | str | None) -> str | None:
    """An action's ``reason``: its detail is a mapping in the harness log, JSON text in the harness table."""
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError:
            return None
    return detail.get("reason") if isinstance(detail, dict) else None


def harness_marks(actions: Iterable[dict[str, Any]]) -> list[HarnessMark]:
    """Pair span actions (bounce, pause) per target in time order; an unpaired start stays open (end None)."""
    marks: list[HarnessMark] = []
    open_spans: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    end_of = {end: start for start, end in SPANS.items()}
    for a in sorted(actions, key=lambda a: a["ts_ms"]):
        kind, target = a.get("kind"), a.get("target")
        if kind in SPANS:
            open_spans.setdefault((kind, target), []).append(a)
        elif kind in end_of and open_spans.get((end_of[kind], target)):
            start = open_spans[(end_of[kind], target)].pop(0)
            marks.append(HarnessMark(end_of[kind], target, int(start["ts_ms"]), int(a["ts_ms"])))
        elif kind in MARKS:
            marks.append(HarnessMark(kind, target, int(a["ts_ms"]), reason=_reason(a.get("detail"))))
    for (kind, target), starts in open_spans.items():
        marks.extend(HarnessMark(kind, target, int(s["ts_ms"])) for s in starts)
    return sorted(marks, key=lambda m: m.start_ms)


def _raw_links(run: RunDir) -> list[RawLink]:
    links: list[RawLink] = []
    if run.harness_log.is_file():
        links.append(RawLink("harness actions", run.harness_log))
    if run.host_log.is_file():
        links.append(RawLink("host samples", run.host_log))
    for label, folder, pattern in (
        ("member history", run.members, "*.jsonl"),
        ("producer acks", run.acks, "*.jsonl"),
        ("broker log", run.brokers, "*.log"),
        ("Locust report", run.load, "*.html"),
    ):
        if folder.is_dir():
            links.extend(RawLink(f"{label} {p.stem}", p) for p in sorted(folder.glob(pattern)))
    if run.scenario.is_file():
        links.append(RawLink("scenario as run", run.scenario))
    return links


def _first_line(e: Exception) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
