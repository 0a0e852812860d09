"""The coordinator stage: what the brokers' group coordinator logged of the run's consumer group (classic
rebalances, epoch bumps, fencings, target assignments), the ``broker_rebalances`` table and the broker figures."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
import pyarrow as pa

from ..spark.sources import read_broker_lines
from ..stage import Catalogue, Measured, Metric, Unknown, Value
from ..view.run_view import GroupView
from .broker_logs import KEEP, BrokerLine, broker_stalls, classic_rebalances, for_group, parse_lines, stall_note

SCHEMA = pa.schema(
    [("broker", pa.string()), ("ts_ms", pa.int64()), ("group_id", pa.string()), ("event", pa.string()),
     ("generation", pa.int64()), ("members", pa.int64()), ("state", pa.string()), ("reason", pa.string()),
     ("assignor", pa.string()), ("compute_ms", pa.int64()), ("member", pa.string())])
NO_BROKER_LOGS = "no broker logs at brokers/broker-*.log"
NO_GROUP = "no member named its group: broker log lines cannot be scoped and are left out"


@dataclass
class Coordinator:
    """The coordinator's lines of the run's group(s) in the run's window; ``logged``: the run has broker logs."""

    lines: list[BrokerLine]
    logged: bool

    def logs(self, value: Value) -> Value | Unknown:
        return value if self.logged else Unknown(NO_BROKER_LOGS)

    def rebalance_lengths(self) -> list[int]:
        return [b.stabilized_ms - b.prepare_ms for b in classic_rebalances(self.lines)]

    def count(self, event: str) -> int:
        return sum(ln.event == event for ln in self.lines)

    def assignment_max_ms(self) -> Value | Unknown:
        computed = [ln.compute_ms for ln in self.lines if ln.event == "target_assignment" and ln.compute_ms is not None]
        return max(computed, default=None)

    @property
    def table(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(ln) for ln in self.lines], columns=SCHEMA.names)


CATALOGUE: Catalogue[Coordinator] = Catalogue(
    Metric("broker_rebalances", "count", "classic `Preparing to rebalance` → `Stabilized` pairs of the run's own "
           "group, inside the run's time window",
           lambda c: c.logs(len(c.rebalance_lengths()))),
    Metric("broker_rebalance_total_ms", "ms", "sum of those broker-side pairs' durations",
           lambda c: c.logs(sum(c.rebalance_lengths()))),
    Metric("broker_rebalance_max_ms", "ms", "longest of those broker-side pairs",
           lambda c: c.logs(max(c.rebalance_lengths(), default=0))),
    Metric("broker_epoch_bumps", "count", "consumer-protocol `Bumped group epoch` lines in broker logs",
           lambda c: c.logs(c.count("epoch_bump"))),
    Metric("members_fenced", "count", "consumer-protocol `Member .. fenced` lines in broker logs",
           lambda c: c.logs(c.count("fenced"))),
    Metric("broker_assignment_max_ms", "ms", "longest consumer-protocol target assignment computation the coordinator "
           "logged",
           lambda c: c.logs(c.assignment_max_ms()),
           none="the coordinator logged no target assignment (classic group)"),
)


def coordinator(view: GroupView) -> tuple[Coordinator, list[str]]:
    """The coordinator's lines of the group ids the members' ``started`` events name, and the note when none
    named one."""
    run = view.run
    all_lines = parse_lines(read_broker_lines(run.spark, run.files.brokers, KEEP)) if run.files.brokers else []
    group_ids = view.group_ids
    lines = for_group(all_lines, group_ids, run.windows.run_start_ms, run.windows.run_end_ms)
    notes = [NO_GROUP] if all_lines and not group_ids else []
    if stalled := stall_note(broker_stalls(all_lines, run.windows.run_start_ms, run.windows.run_end_ms, run.actions)):
        notes.append(stalled)
    return Coordinator(lines, run.files.brokers is not None), notes


def measured(found: Coordinator, notes: list[str]) -> Measured:
    return Measured(CATALOGUE.measure(found), {"broker_rebalances": found.table}, notes=notes)
