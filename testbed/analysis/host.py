"""The host stage: how saturated the machine was over the run (its samples: ``view.host``, where "saturated" is
defined), as figures and the ``host_samples`` table the report draws on its time axis.

A run without samples (saved before the sampler existed) has every figure unknown and the table empty: its
host is unknown, never idle.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa

from .stage import Catalogue, Measured, Metric, Unknown
from .view.host import NO_SAMPLES, ROLE_COLUMNS, HostLoad
from .view.run_view import RunView

_FLOAT_COLUMNS = ("cpu_busy_pct", "cpu_steal_pct", "cpu_iowait_pct", "load1", "mem_available_pct", "cpu_pressure_pct",
                  "memory_pressure_pct", *ROLE_COLUMNS, "other_cpu_pct")
SCHEMA = pa.schema([("ts_ms", pa.int64()), ("interval_ms", pa.int64()), ("cores", pa.int32()),
                    ("run_queue", pa.int32()), *((c, pa.float64()) for c in _FLOAT_COLUMNS),
                    ("saturated", pa.bool_()), ("saturated_by", pa.string())])
SCHEMAS = {"host_samples": SCHEMA}


def _in_run(view: RunView) -> tuple[int | None, int | None]:
    return view.windows.run_start_ms, view.windows.run_end_ms


def _of(read):
    """A figure of the samples; unknown without them."""
    return lambda view: read(view.host, view) if view.host is not None else Unknown(NO_SAMPLES)


def _saturated_pct(host: HostLoad, view: RunView) -> float | Unknown:
    sampled = host.sampled_ms(*_in_run(view))
    if sampled == 0:
        return Unknown("no host sample lies inside the run's window")
    return round(100.0 * host.saturated_ms(*_in_run(view)) / sampled, 1)


CATALOGUE: Catalogue[RunView] = Catalogue(
    Metric("host_samples", "count", "host samples recorded (CPU, run queue, memory pressure, per-role CPU; 4 a second)",
           _of(lambda host, view: len(host.samples))),
    Metric("host_saturated_ms", "ms", "time in the run during which the host was saturated (CPU busy ≥ 95 % of all "
           "cores, or a task waiting for a CPU ≥ 50 % of the time, or memory stalls ≥ 10 %)",
           _of(lambda host, view: host.saturated_ms(*_in_run(view)))),
    Metric("host_saturated_pct", "%", "share of the sampled run time during which the host was saturated",
           _of(_saturated_pct)),
    Metric("host_cpu_busy_mean_pct", "%", "mean CPU busy over the run, share of all cores (steal counted as busy)",
           _of(lambda host, view: round(float(
        (host.samples["cpu_busy_pct"] * host.samples["interval_ms"]).sum() / host.samples["interval_ms"].sum()), 1))),
    Metric("host_cpu_steal_max_pct", "%", "highest share of CPU time the hypervisor took in one sample interval",
           _of(lambda host, view: float(host.samples["cpu_steal_pct"].max()))),
)


def host_frame(host: HostLoad | None) -> pd.DataFrame:
    if host is None:
        return pd.DataFrame(columns=SCHEMA.names)
    return host.samples.reindex(columns=SCHEMA.names)


def measured(view: RunView) -> Measured:
    notes = []
    share = _saturated_pct(view.host, view) if view.host is not None else None
    if isinstance(share, float) and share > 0:
        notes.append(f"the host was saturated for {share:g} % of the run (host_samples; docs/metrics.md, \"Host\"): "
                     "its figures may carry the machine's delays as well as the run's")
    return Measured(CATALOGUE.measure(view), {"host_samples": host_frame(view.host)}, notes=notes)
