"""Pause figures from the availability gaps (``partition_pauses`` and ``stop_the_world`` tables).

Start-up waits are kept apart; open pauses (still open at the end of the drain) count with their
length so far. With no pause at all, longest and totals are a measured 0 while percentiles over
pauses are unknown (there is nothing to take a percentile of).
"""

from __future__ import annotations

import pandas as pd

from ..run.metrics import MetricValue, known, unknown
from .intervals import percentile


def _lengths(frame: pd.DataFrame) -> list[float]:
    return [float(v) for v in frame["pause_ms"]] if len(frame) else []


DEFAULT_HANG_MS = 10_000


def pause_measures(pauses: pd.DataFrame, stop_the_world: pd.DataFrame, min_pause_ms: int,
                   hang_ms: int = DEFAULT_HANG_MS) -> dict[str, MetricValue]:
    v: dict[str, MetricValue] = {}
    real = pauses[pauses["kind"] == "pause"] if len(pauses) else pauses
    startup = pauses[pauses["kind"] == "startup"] if len(pauses) else pauses
    lengths = _lengths(real)
    none = f"no pause of at least {min_pause_ms} ms"
    v["partition_pauses"] = known("partition_pauses", len(real))
    v["partition_pauses_open"] = known("partition_pauses_open", int(pauses["open"].astype(bool).sum()) if len(pauses) else 0)
    v["partition_pause_total_ms"] = known("partition_pause_total_ms", int(sum(lengths)))
    v["max_partition_pause_ms"] = known("max_partition_pause_ms", int(max(lengths)) if lengths else 0)
    v["p50_partition_pause_ms"] = known("p50_partition_pause_ms", percentile(lengths, 50), reason_if_none=none)
    v["p99_partition_pause_ms"] = known("p99_partition_pause_ms", percentile(lengths, 99), reason_if_none=none)
    totals = real.groupby(["topic", "partition"])["pause_ms"].sum() if len(real) else pd.Series(dtype="int64")
    v["max_partition_pause_total_ms"] = known("max_partition_pause_total_ms", int(totals.max()) if len(totals) else 0)
    rebalance = _lengths(real[real["cause"] == "rebalance"]) if len(real) else []
    v["max_rebalance_pause_ms"] = known("max_rebalance_pause_ms", int(max(rebalance)) if rebalance else 0)
    v["p50_rebalance_pause_ms"] = known("p50_rebalance_pause_ms", percentile(rebalance, 50),
                                        reason_if_none=f"no pause of at least {min_pause_ms} ms caused by a rebalance")
    for name, cause in (("max_freeze_pause_ms", "member_freeze"), ("max_member_partition_pause_ms", "member_partition"),
                        ("max_death_pause_ms", "member_death"),
                        ("max_broker_fault_pause_ms", "broker_fault"), ("max_unexplained_pause_ms", "none")):
        these = _lengths(real[real["cause"] == cause]) if len(real) else []
        v[name] = known(name, int(max(these)) if these else 0)
    # A hang: no rebalance, no fault, the partition kept its owner, records waited, and that owner processed
    # nothing for at least hang_ms (a stuck poll loop, a slow handler, a long GC).
    hangs = real[(real["cause"] == "none") & (real["pause_ms"] >= hang_ms)] if len(real) else real
    v["hung_members"] = known("hung_members", int(hangs["last_member"].dropna().nunique()) if len(hangs) else 0)
    v["max_hang_ms"] = known("max_hang_ms", int(max(_lengths(hangs))) if len(hangs) else 0)
    starts = _lengths(startup)
    v["startup_wait_max_ms"] = (known("startup_wait_max_ms", int(max(starts))) if starts
                                else unknown("startup_wait_max_ms", "no acknowledged record waited for a first processing"))
    stw = stop_the_world[stop_the_world["kind"] == "pause"] if len(stop_the_world) else stop_the_world
    stw_lengths = _lengths(stw)
    v["stop_the_world_ms"] = known("stop_the_world_ms", int(sum(stw_lengths)))
    v["max_stop_the_world_ms"] = known("max_stop_the_world_ms", int(max(stw_lengths)) if stw_lengths else 0)
    return v
