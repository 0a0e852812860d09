"""Effects: which acknowledged records left their effect in the user's store, and which left it twice.

The store's own list (history/effects.jsonl, the scenario's ``effects`` command's output after the members
stopped: one ``{topic, partition, offset}`` a line, a record stored twice on two lines) against the records
the producer saw acknowledged. Unlike ``lost_records``, which trusts the members' word of what they processed
(an instrumented program's processing is inferred: testbed.instrument), this reads the outcome itself: a
program that commits before it writes, or auto-commits records it only buffered, shows here after a kill.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..run.layout import LAYOUT
from ..run.metrics import MetricValue, known, unknown
from .sources import join, matches

EFFECT_FIELDS = "topic string, partition int, offset long"
EXAMPLES = 10
NAMES = ("effects_missing", "effects_duplicated", "effects_stored")
NO_EFFECTS = "the scenario has no effects command (nothing read the store)"


@dataclass
class EffectMeasures:
    values: dict[str, MetricValue]
    missing_examples: list[dict[str, Any]] = field(default_factory=list)


def _all_unknown(why: str) -> dict[str, MetricValue]:
    return {name: unknown(name, why) for name in NAMES}


def effect_measures(spark: SparkSession, root: str, acks: DataFrame | None) -> EffectMeasures:
    path = join(root, LAYOUT.effects.as_posix())
    failed = join(root, LAYOUT.effects_failed.as_posix())
    if not matches(spark, path):
        if matches(spark, failed):
            reason = " ".join(r.value for r in spark.read.text(failed).collect()).strip()
            return EffectMeasures(_all_unknown(f"the effects command failed: {reason[:500]}"))
        return EffectMeasures(_all_unknown(NO_EFFECTS))
    # A line that is not a whole {topic, partition, offset} object is dropped (a torn or foreign line).
    stored = (spark.read.schema(EFFECT_FIELDS).option("mode", "DROPMALFORMED").json(path)
              .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()))
    per_record = stored.groupBy("topic", "partition", "offset").count()
    totals = per_record.agg(F.count(F.lit(1)).alias("distinct"), F.sum("count").alias("lines")).first()
    distinct, lines = int(totals["distinct"] or 0), int(totals["lines"] or 0)
    values = {"effects_stored": known("effects_stored", distinct),
              "effects_duplicated": known("effects_duplicated", lines - distinct)}
    if acks is None:
        values["effects_missing"] = unknown("effects_missing", "no ack log: which records should be there is unknown")
        return EffectMeasures(values)
    acked = (acks.filter(F.col("offset").isNotNull() & F.col("topic").isNotNull())
             .select("topic", "partition", "offset").distinct())
    missing = acked.join(per_record, ["topic", "partition", "offset"], "left_anti")
    values["effects_missing"] = known("effects_missing", missing.count())
    examples = [r.asDict() for r in missing.orderBy("topic", "partition", "offset").limit(EXAMPLES).collect()]
    return EffectMeasures(values, examples)
