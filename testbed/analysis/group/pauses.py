"""The pauses stage: the availability gaps (``records.gaps``) with their causes (``causes``), the
``partition_pauses`` and ``stop_the_world`` tables, and the pause figures.

Start-up waits are kept apart; open pauses (still open at the end of the drain) count with their length so
far. With no pause at all, longest and totals are a measured 0 while percentiles over pauses are unknown
(there is nothing to take a percentile of).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from ..intervals import OwnershipInterval, percentile
from ..settings import AnalysisSettings
from ..stage import Catalogue, Measured, Metric, Unknown
from ..view.harness import HarnessAction
from ..view.host import NO_SAMPLES
from .causes import HostState, attribute, fault_context
from .episodes import Episode
from ..view.lives import MemberLife

PAUSE_SCHEMA = pa.schema(
    [("topic", pa.string()), ("partition", pa.int32()), ("kind", pa.string()), ("start_ms", pa.int64()),
     ("end_ms", pa.int64()), ("pause_ms", pa.int64()), ("open", pa.bool_()), ("cause", pa.string()),
     ("cause_target", pa.string()), ("contributing", pa.string()), ("episode_id", pa.int64()),
     ("host_saturated", pa.bool_()), ("last_member", pa.string()), ("resumed_member", pa.string()),
     ("within_clock_uncertainty", pa.bool_())])
SCHEMAS = {"partition_pauses": PAUSE_SCHEMA, "stop_the_world": PAUSE_SCHEMA}


def _lengths(frame: pd.DataFrame) -> list[float]:
    return [float(v) for v in frame["pause_ms"]] if len(frame) else []


@dataclass
class Pauses:
    """Every partition's gaps and the group's stop-the-world, each with its cause."""

    partition: pd.DataFrame
    group: pd.DataFrame
    settings: AnalysisSettings
    host_known: bool = False  # whether the run has host samples (else every host figure is unknown)

    @property
    def real(self) -> pd.DataFrame:
        """The partitions' pauses, start-up waits left out."""
        return self.partition[self.partition["kind"] == "pause"] if len(self.partition) else self.partition

    def lengths(self, cause: str | None = None) -> list[float]:
        real = self.real
        return _lengths(real[real["cause"] == cause] if cause is not None and len(real) else real)

    def longest(self, cause: str | None = None) -> int:
        lengths = self.lengths(cause)
        return int(max(lengths)) if lengths else 0

    @property
    def none(self) -> str:
        return f"no pause of at least {self.settings.min_pause_ms} ms"

    def percentile(self, q: float, cause: str | None = None) -> float | None:
        return percentile(self.lengths(cause), q)

    @property
    def hangs(self) -> pd.DataFrame:
        """No rebalance, no fault, the partition kept its owner, records waited, and that owner processed nothing
        for at least hang_ms (a stuck poll loop, a slow handler, a long GC)."""
        real = self.real
        return real[(real["cause"] == "none") & (real["pause_ms"] >= self.settings.hang_ms)] if len(real) else real

    @property
    def with_contributing(self) -> int:
        real = self.real
        return int(real["contributing"].notna().sum()) if len(real) else 0

    def on_saturated_host(self) -> int | Unknown:
        """Pauses the host was saturated across, whatever their primary cause."""
        if not self.host_known:
            return Unknown(NO_SAMPLES)
        real = self.real
        return int(real["host_saturated"].fillna(False).astype(bool).sum()) if len(real) else 0

    def longest_host_saturated(self) -> int | Unknown:
        return self.longest("host_saturated") if self.host_known else Unknown(NO_SAMPLES)

    def startup_wait_max(self) -> int | Unknown:
        starts = _lengths(self.partition[self.partition["kind"] == "startup"] if len(self.partition) else self.partition)
        return int(max(starts)) if starts else Unknown("no acknowledged record waited for a first processing")

    @property
    def stop_the_world(self) -> list[float]:
        return _lengths(self.group[self.group["kind"] == "pause"] if len(self.group) else self.group)

    def most_per_partition(self) -> int:
        real = self.real
        totals = real.groupby(["topic", "partition"])["pause_ms"].sum() if len(real) else pd.Series(dtype="int64")
        return int(totals.max()) if len(totals) else 0


def _percentile(name: str, meaning: str, q: float, cause: str | None = None, why: str = "") -> Metric[Pauses]:
    return Metric(name, "ms", meaning, lambda p: p.percentile(q, cause) if p.percentile(q, cause) is not None
                  else Unknown(p.none + why), better="lower")


def _longest(name: str, meaning: str, cause: str) -> Metric[Pauses]:
    return Metric(name, "ms", meaning, lambda p: p.longest(cause), better="lower")


CATALOGUE: Catalogue[Pauses] = Catalogue(
    Metric("partition_pauses", "count", "availability gaps of at least min_pause_ms: records of the partition wait "
           "and nobody processes it",
           lambda p: len(p.real)),
    Metric("partition_pauses_open", "count", "gaps still open when the drain ended (counted with their length so far)",
           lambda p: int(p.partition["open"].astype(bool).sum()) if len(p.partition) else 0),
    Metric("partition_pause_total_ms", "ms", "sum of every partition pause, over partitions",
           lambda p: int(sum(p.lengths()))),
    _percentile("p50_partition_pause_ms", "median single partition pause", 50),
    _percentile("p99_partition_pause_ms", "99th percentile of single partition pauses", 99),
    Metric("max_partition_pause_ms", "ms", "longest single partition pause (from the later of the last processing and "
           "the first waiting record's produce time to the next processing)",
           lambda p: p.longest(), better="lower"),
    Metric("max_partition_pause_total_ms", "ms", "largest per-partition sum of pauses",
           lambda p: p.most_per_partition()),
    _percentile("p50_rebalance_pause_ms", "median single pause caused by a rebalance episode",
                50, "rebalance", " caused by a rebalance"),
    _longest("max_rebalance_pause_ms", "longest single pause caused by a rebalance episode", "rebalance"),
    _longest("max_freeze_pause_ms", "longest single pause caused by a frozen (SIGSTOP) member", "member_freeze"),
    _longest("max_member_partition_pause_ms", "longest single pause caused by a member cut off from the brokers "
             "(partition step)",
             "member_partition"),
    Metric("hung_members", "count", "members that kept a partition with records waiting and processed nothing for at "
           "least hang_ms, with no rebalance, fault, stop or saturated host to explain it",
           lambda p: int(p.hangs["last_member"].dropna().nunique()) if len(p.hangs) else 0),
    Metric("max_hang_ms", "ms", "longest such hang", lambda p: int(max(_lengths(p.hangs))) if len(p.hangs) else 0),
    _longest("max_death_pause_ms", "longest single pause caused by a member's death (kill, crash, SIGKILL after a "
             "stop timeout)",
             "member_death"),
    _longest("max_stop_pause_ms", "longest single pause whose partition's owner stopped cleanly (a stop, clean "
             "bounce or scale-in): the wait for its replacement or for the rebalance its leaving starts",
             "member_stop"),
    _longest("max_broker_fault_pause_ms", "longest single pause during a broker fault (stop, kill, pause, partition, "
             "latency) or within 5 s of its recovery, no member fault or stop explaining it first",
             "broker_fault"),
    _longest("max_unexplained_pause_ms", "longest single pause that no fault, death, stop, rebalance or saturated "
             "host explains",
             "none"),
    Metric("pauses_with_contributing_causes", "count", "single pauses with more than one cause: besides the primary, "
           "another cause held across them too (e.g. a bounce while a broker was slowed)",
           lambda p: p.with_contributing),
    Metric("max_host_saturated_pause_ms", "ms", "longest single pause no fault, death, stop or rebalance explains, "
           "across which the host was saturated",
           lambda p: p.longest_host_saturated()),
    Metric("pauses_on_saturated_host", "count", "single pauses across which the host was saturated (saturated "
           "intervals covering at least 90 % of the pause), whatever their cause",
           lambda p: p.on_saturated_host()),
    Metric("startup_wait_max_ms", "ms", "longest wait before a partition's first processing (kept out of the pause "
           "figures)",
           lambda p: p.startup_wait_max()),
    Metric("stop_the_world_ms", "ms", "total time during which no partition is processed although records wait",
           lambda p: int(sum(p.stop_the_world)), better="lower"),
    Metric("max_stop_the_world_ms", "ms", "longest span during which no partition was processed although records "
           "waited",
           lambda p: int(max(p.stop_the_world)) if p.stop_the_world else 0),
)


def pauses(partition_gaps: pd.DataFrame, group_gaps: pd.DataFrame, actions: list[HarnessAction],
           lives: dict[str, MemberLife], episodes: list[Episode], end_of_run: int,
           settings: AnalysisSettings, host: HostState | None = None,
           intervals: Sequence[OwnershipInterval] = ()) -> Pauses:
    """The gaps (``records.gaps``) with their causes: the faults the harness made, deaths, stops, episodes and
    the host's saturation (``host`` None: the run has no samples, its host is unknown); ``intervals``: the
    ownership intervals, whose owners during a gap are suspects of its cause as much as its last processor."""
    faults = fault_context(actions, lives, episodes, end_of_run, host, intervals)
    return Pauses(attribute(partition_gaps, faults), attribute(group_gaps, faults, group_level=True), settings,
                  host_known=host is not None)


def measured(found: Pauses) -> Measured:
    notes = []
    if open_pauses := int(found.partition["open"].astype(bool).sum()) if len(found.partition) else 0:
        notes.append(f"{open_pauses} partition pause(s) still open when the drain ended: counted with their length so far")
    return Measured(CATALOGUE.measure(found), {"partition_pauses": found.partition, "stop_the_world": found.group},
                    notes=notes)
