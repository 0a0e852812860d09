"""What a load achieved, computed only from its saved files: the ack logs and Locust's JSON stats.

Achieved rate = acknowledged records / active time, where active time is the span of the
acknowledged records' produce times, counted as ``(acked - 1) / span`` (n evenly spaced records
span n - 1 intervals). Producing, not acknowledging, is what the rate is about: the ack latency
of the last records is reported apart, as ``ack_tail_s``. A measurement that cannot be made is
``None`` with its reason in ``unknown``, never 0.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ..history.events import Ack
from ..history.writer import read_events


class AckLogStats(BaseModel):
    model_config = ConfigDict(frozen=True)

    acked: int = 0
    first_produce_ms: int | None = None
    last_produce_ms: int | None = None
    last_ack_ms: int | None = None


class LocustProduceStats(BaseModel):
    """Locust's count of produce requests (deliveries) for one topic, from its JSON stats."""

    model_config = ConfigDict(frozen=True)

    requests: int
    failures: int

    @property
    def delivered(self) -> int:
        return self.requests - self.failures


class LoadSummary(BaseModel):
    model_config = ConfigDict(frozen=True)

    target_rate: float = Field(description="records/s asked for")
    acked: int = Field(description="records acknowledged, from the ack logs")
    active_s: float | None = Field(description="first to last produce time of acked records, s")
    achieved_rate: float | None = Field(description="(acked - 1) / active_s, records/s")
    ack_tail_s: float | None = Field(default=None, description="last produce to last ack, s")
    shortfall_pct: float | None = Field(description="(target - achieved) / target * 100; negative = above target")
    failures: int | None = Field(description="failed produce requests in Locust's stats")
    locust_delivered: int | None = Field(description="successful produce requests in Locust's stats")
    producers: list[str] = Field(description="producer ids whose ack logs were read")
    unknown: dict[str, str] = Field(default_factory=dict, description="measurement -> why it is unknown")

    @property
    def rate_error_pct(self) -> float | None:
        return None if self.shortfall_pct is None else abs(self.shortfall_pct)


def ack_log_stats(paths: list[Path]) -> AckLogStats:
    acked, first, last_produce, last = 0, None, None, None
    for path in paths:
        if not path.exists():
            continue
        for event in read_events(path):
            if not isinstance(event, Ack):
                continue
            acked += 1
            first = event.produce_ts_ms if first is None else min(first, event.produce_ts_ms)
            last_produce = event.produce_ts_ms if last_produce is None else max(last_produce, event.produce_ts_ms)
            last = event.ts_ms if last is None else max(last, event.ts_ms)
    return AckLogStats(acked=acked, first_produce_ms=first, last_produce_ms=last_produce, last_ack_ms=last)


def locust_produce_stats(json_path: Path, topic: str, request_type: str = "produce") -> LocustProduceStats:
    """Raises FileNotFoundError / ValueError when Locust left no usable JSON stats."""
    entries = json.loads(json_path.read_text())
    if not isinstance(entries, list):
        raise ValueError(f"{json_path}: expected a list of stats entries, got {type(entries).__name__}")
    mine = [e for e in entries if e.get("method") == request_type and e.get("name") == topic]
    return LocustProduceStats(requests=sum(e["num_requests"] for e in mine),
                              failures=sum(e["num_failures"] for e in mine))


def summarize(target_rate: float, ack_logs: dict[str, Path], locust_json: Path, topic: str) -> LoadSummary:
    unknown: dict[str, str] = {}
    acks = ack_log_stats(list(ack_logs.values()))
    active_s = achieved = shortfall = ack_tail = None
    first, last, last_ack = acks.first_produce_ms, acks.last_produce_ms, acks.last_ack_ms
    if first is None or last is None or last_ack is None:
        reason = "no record was acknowledged, so the load had no active time"
        unknown.update(active_s=reason, achieved_rate=reason, shortfall_pct=reason, ack_tail_s=reason)
    else:
        ack_tail = (last_ack - last) / 1000.0
        if last <= first:
            reason = "all acknowledged records were produced in the same millisecond"
            unknown.update(active_s=reason, achieved_rate=reason, shortfall_pct=reason)
        else:
            active_s = (last - first) / 1000.0
            achieved = (acks.acked - 1) / active_s
            shortfall = (target_rate - achieved) / target_rate * 100.0
    failures = delivered = None
    try:
        stats = locust_produce_stats(locust_json, topic)
        failures, delivered = stats.failures, stats.delivered
    except (OSError, ValueError, KeyError) as exc:
        reason = f"Locust's JSON stats are missing or unreadable: {exc}"
        unknown.update(failures=reason, locust_delivered=reason)
    return LoadSummary(target_rate=target_rate, acked=acks.acked, active_s=active_s, achieved_rate=achieved,
                       ack_tail_s=ack_tail,
                       shortfall_pct=shortfall, failures=failures, locust_delivered=delivered,
                       producers=sorted(ack_logs), unknown=unknown)
