"""Where a run keeps its files. One place, so writers, analysis and reports agree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunDir:
    """The directory of one run, e.g. ``reports/20261122-101500-rolling-bounce/``.

    history/members/<member>.jsonl  one file per member process, written only by it
    history/harness.jsonl           harness actions (bounces, kills, pauses, broker faults)
    history/acks/<producer>.jsonl   producer acknowledgements, one file per producer process
    brokers/broker-<id>.log         each broker's server log, copied at the end
    load/                           Locust's CSV, HTML and JSON output
    analysis/metrics.json           measurements; analysis/tables/*.parquet for reports
    result.json                     verdict, expectations and whether the run is partial
    """

    root: Path

    @property
    def history(self) -> Path:
        return self.root / "history"

    @property
    def members(self) -> Path:
        return self.history / "members"

    @property
    def harness_log(self) -> Path:
        return self.history / "harness.jsonl"

    @property
    def acks(self) -> Path:
        return self.history / "acks"

    @property
    def brokers(self) -> Path:
        return self.root / "brokers"

    @property
    def load(self) -> Path:
        return self.root / "load"

    @property
    def analysis(self) -> Path:
        return self.root / "analysis"

    @property
    def tables(self) -> Path:
        return self.analysis / "tables"

    @property
    def metrics(self) -> Path:
        return self.analysis / "metrics.json"

    @property
    def result(self) -> Path:
        return self.root / "result.json"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    def member_log(self, member_id: str) -> Path:
        return self.members / f"{member_id}.jsonl"

    def ack_log(self, producer_id: str) -> Path:
        return self.acks / f"{producer_id}.jsonl"

    def create(self) -> "RunDir":
        for d in (self.members, self.acks, self.brokers, self.load, self.tables):
            d.mkdir(parents=True, exist_ok=True)
        return self
