"""The records the producers gave up on (``produce_failed`` in history/produce_failures/): a delivery that failed
(the brokers out of reach until librdkafka's message timeout) or a record still queued when the load stopped and
purged. Never acknowledged, so never among the lost records: without this figure a producer that could not write
for the last third of a run (a broker restart it never recovered from) left a run that read "nothing lost".

Read in plain Python from a local run (the files are empty unless something failed), through Spark from a run
Spark reads remotely.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ...history.events import Action
from ...run.layout import LAYOUT
from ..spark.location import is_remote
from ..spark.sources import join, matches

NAME = "produce_failed"


@dataclass(frozen=True)
class ProduceFailures:
    count: int | None  # None: unknown (``unknown_reason`` says why)
    unknown_reason: str | None = None
    first_produce_ms: int | None = None
    last_produce_ms: int | None = None
    errors: dict[str, int] = field(default_factory=dict)  # librdkafka's error name -> records

    def note(self, run_start_ms: int | None) -> str | None:
        if not self.count:
            return None
        at = (lambda ts: f"{(ts - run_start_ms) / 1000:.1f} s into the run") if run_start_ms is not None else str
        errors = ", ".join(f"{n:,} {name}" for name, n in sorted(self.errors.items(), key=lambda kv: -kv[1]))
        return (f"the producers gave up on {self.count:,} records ({errors}), produced from "
                f"{at(self.first_produce_ms)} to {at(self.last_produce_ms)}: never acknowledged, so not among the lost "
                "records (records_undelivered); the brokers did not take them")


def produce_failures(spark: SparkSession, root: str, harness: list[dict[str, Any]]) -> ProduceFailures:
    producers = sorted({p for h in harness if h["kind"] == Action.LOAD_START for p in (h["detail"].get("producers") or [])})
    if not producers:
        return ProduceFailures(None, "no load ran (no load_start naming its producers)")
    paths = [join(root, LAYOUT.produce_failure_log(p).as_posix()) for p in producers]
    missing = [p for p, path in zip(producers, paths) if not matches(spark, path)]
    if missing:
        return ProduceFailures(None, f"no log of the records {', '.join(missing)} gave up on "
                                     "(history/produce_failures/<producer>.jsonl; runs saved before 2026-12-03 have none)")
    if is_remote(root):
        return _through_spark(spark, paths)
    return _read_here([Path(p.removeprefix("file://")) for p in paths])


def _read_here(paths: list[Path]) -> ProduceFailures:
    errors: Counter[str] = Counter()
    first = last = None
    for path in paths:
        for line in path.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a torn last line (the producer was killed mid-write)
            if not isinstance(event, dict) or event.get("name") != NAME or event.get("produce_ts_ms") is None:
                continue
            ts = int(event["produce_ts_ms"])
            errors[str(event.get("error"))] += 1
            first, last = (ts, ts) if first is None else (min(first, ts), max(last, ts))
    return ProduceFailures(sum(errors.values()), None, first, last, dict(errors))


def _through_spark(spark: SparkSession, paths: list[str]) -> ProduceFailures:
    lines = (spark.read.schema("name string, produce_ts_ms long, error string").option("mode", "DROPMALFORMED")
             .json(paths).filter((F.col("name") == NAME) & F.col("produce_ts_ms").isNotNull()))
    rows = lines.groupBy("error").agg(F.count("*").alias("n"), F.min("produce_ts_ms").alias("first"),
                                      F.max("produce_ts_ms").alias("last")).collect()
    if not rows:
        return ProduceFailures(0)
    return ProduceFailures(sum(r["n"] for r in rows), None, min(r["first"] for r in rows),
                           max(r["last"] for r in rows), {str(r["error"]): r["n"] for r in rows})
