"""The host the run ran on, as its saved samples tell (``history/host.jsonl``, written by ``testbed.host``), and
what "saturated" means.

A sample covers the interval (``ts_ms`` − ``interval_ms``, ``ts_ms``]. That interval is **saturated** when any
of these held over it:

- ``cpu_busy``: the CPU was busy (neither idle nor waiting for I/O; steal counts as busy: the core was not the
  run's) for at least 95 % of all cores' time;
- ``cpu_wait``: some runnable task waited for a CPU for at least 50 % of the interval (Linux PSI
  ``/proc/pressure/cpu`` some); on a kernel without PSI, more tasks were runnable at the sample than there
  are cores;
- ``memory``: some task stalled on memory for at least 10 % of the interval (PSI ``/proc/pressure/memory``
  some); without PSI, less than 5 % of the memory was available.

The first two are both needed: a host 100 % busy with one task per core keeps up, yet leaves nothing for a
member's heartbeat thread; a host 80 % busy whose tasks queue behind each other (a burst of JVMs starting)
delays every one of them. The host was saturated **across** a span when saturated intervals cover at least 90
% of it (a 1 s pause spans about four intervals: one quiet quarter second does not clear it). Whether it was is
**unknown** (None) where samples cover less than 90 % of the span (before the sampler started, after it
stopped) and everywhere in a run without samples (saved before the sampler existed): never "not saturated".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from ..spark.sources import read_host_samples

BUSY_PCT = 95.0
CPU_WAIT_PCT = 50.0
MEMORY_STALL_PCT = 10.0
LOW_MEMORY_PCT = 5.0
ACROSS_SHARE = 0.9
NO_SAMPLES = ("no host samples (history/host.jsonl): the run was saved before the host sampler existed, or its "
              "host could not be sampled")
ROLE_COLUMNS = ("brokers_cpu_pct", "members_cpu_pct", "load_cpu_pct", "analysis_cpu_pct", "harness_cpu_pct")


def saturated_by(sample: pd.Series | dict) -> list[str]:
    """Which of the criteria above held over one sample's interval (empty: not saturated)."""
    why = []
    if sample["cpu_busy_pct"] >= BUSY_PCT:
        why.append("cpu_busy")
    pressure = sample.get("cpu_pressure_pct")
    if (pressure >= CPU_WAIT_PCT) if _known(pressure) else sample["run_queue"] > sample["cores"]:
        why.append("cpu_wait")
    stall = sample.get("memory_pressure_pct")
    if (stall >= MEMORY_STALL_PCT) if _known(stall) else sample["mem_available_pct"] < LOW_MEMORY_PCT:
        why.append("memory")
    return why


def _known(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value))


@dataclass
class HostLoad:
    """The run's host samples, one row per interval (``start_ms``, ``saturated``, ``saturated_by`` added)."""

    samples: pd.DataFrame

    @classmethod
    def of(cls, samples: pd.DataFrame) -> HostLoad:
        frame = samples.sort_values("ts_ms").reset_index(drop=True)
        frame["start_ms"] = frame["ts_ms"] - frame["interval_ms"]
        reasons = [saturated_by(row) for row in frame.to_dict("records")]
        frame["saturated_by"] = [",".join(r) or None for r in reasons]
        frame["saturated"] = [bool(r) for r in reasons]
        roles = frame[list(ROLE_COLUMNS)].fillna(0.0).sum(axis=1)
        frame["other_cpu_pct"] = (frame["cpu_busy_pct"] - roles).clip(lower=0.0).round(1)
        return cls(frame)

    def _overlaps(self, start_ms: int, end_ms: int) -> tuple[np.ndarray, np.ndarray]:
        starts, ends = self.samples["start_ms"].to_numpy(), self.samples["ts_ms"].to_numpy()
        overlap = np.clip(np.minimum(ends, end_ms) - np.maximum(starts, start_ms), 0, None)
        return overlap, self.samples["saturated"].to_numpy(dtype=bool)

    def saturated_across(self, start_ms: int, end_ms: int) -> bool | None:
        length = end_ms - start_ms
        if length <= 0 or self.samples.empty:
            return None
        overlap, saturated = self._overlaps(start_ms, end_ms)
        if overlap.sum() < ACROSS_SHARE * length:
            return None
        return bool(overlap[saturated].sum() >= ACROSS_SHARE * length)

    def saturated_ms(self, start_ms: int | None = None, end_ms: int | None = None) -> int:
        """Saturated time inside [start, end] (the whole sampled time when a bound is unknown)."""
        lo = int(self.samples["start_ms"].min()) if start_ms is None else start_ms
        hi = int(self.samples["ts_ms"].max()) if end_ms is None else end_ms
        overlap, saturated = self._overlaps(lo, hi)
        return int(overlap[saturated].sum())

    def sampled_ms(self, start_ms: int | None = None, end_ms: int | None = None) -> int:
        lo = int(self.samples["start_ms"].min()) if start_ms is None else start_ms
        hi = int(self.samples["ts_ms"].max()) if end_ms is None else end_ms
        return int(self._overlaps(lo, hi)[0].sum())


def read_host(spark: SparkSession, path: str | None) -> HostLoad | None:
    """The samples of a run (None without any: the host is unknown)."""
    if path is None:
        return None
    frame = read_host_samples(spark, path).toPandas()
    return HostLoad.of(frame) if len(frame) else None
