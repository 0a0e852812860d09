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

from ...run.layout import LAYOUT
from ..spark.sources import join, matches
from ..stage import Catalogue, Metric, Unknown

EFFECT_FIELDS = "topic string, partition int, offset long"
EXAMPLES = 10
NO_EFFECTS = "the scenario has no effects command (nothing read the store)"


@dataclass
class Effects:
    """The store's records against the acknowledged ones (each count unknown, with its reason, when it cannot be
    made)."""

    stored: int | Unknown
    duplicated: int | Unknown
    missing: int | Unknown
    missing_examples: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def unknown(cls, why: str) -> Effects:
        return cls(Unknown(why), Unknown(why), Unknown(why))


CATALOGUE: Catalogue[Effects] = Catalogue(
    Metric("effects_stored", "records", "distinct records whose effect the user's store holds after the run (the "
           "scenario's effects command)",
           lambda e: e.stored),
    Metric("effects_missing", "records", "acknowledged records whose effect is not in the user's store after the run",
           lambda e: e.missing),
    Metric("effects_duplicated", "records", "effects stored more than once (lines beyond the first per record)",
           lambda e: e.duplicated),
)


def effect_measures(spark: SparkSession, root: str, acks: DataFrame | None) -> Effects:
    path = join(root, LAYOUT.effects.as_posix())
    failed = join(root, LAYOUT.effects_failed.as_posix())
    if not matches(spark, path):
        if matches(spark, failed):
            reason = " ".join(r.value for r in spark.read.text(failed).collect()).strip()
            return Effects.unknown(f"the effects command failed: {reason[:500]}")
        return Effects.unknown(NO_EFFECTS)
    # A line that is not a whole {topic, partition, offset} object is dropped (a torn or foreign line).
    stored = (spark.read.schema(EFFECT_FIELDS).option("mode", "DROPMALFORMED").json(path)
              .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull() & F.col("offset").isNotNull()))
    per_record = stored.groupBy("topic", "partition", "offset").count()
    totals = per_record.agg(F.count(F.lit(1)).alias("distinct"), F.sum("count").alias("lines")).first()
    distinct, lines = int(totals["distinct"] or 0), int(totals["lines"] or 0)
    if acks is None:
        return Effects(distinct, lines - distinct, Unknown("no ack log: which records should be there is unknown"))
    acked = (acks.filter(F.col("offset").isNotNull() & F.col("topic").isNotNull())
             .select("topic", "partition", "offset").distinct())
    missing = acked.join(per_record, ["topic", "partition", "offset"], "left_anti")
    count = missing.count()
    examples = [r.asDict() for r in missing.orderBy("topic", "partition", "offset").limit(EXAMPLES).collect()]
    return Effects(distinct, lines - distinct, count, examples)
