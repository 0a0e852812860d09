"""Effects: the user's store, read after the run, against the acknowledged records (testbed.analysis.records.effects)."""

from __future__ import annotations

import json

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture

from testbed.analysis.records.effects import CATALOGUE, NO_EFFECTS, effect_measures
from testbed.run.layout import RunDir

ACKS = "topic string, partition int, offset long"


def _acks(spark, rows):  # noqa: F811
    return spark.createDataFrame(rows, ACKS)


def test_missing_and_twice_stored_records_are_counted(spark, tmp_path) -> None:  # noqa: F811
    run = RunDir(tmp_path).create()
    run.effects.parent.mkdir(parents=True, exist_ok=True)
    stored = [("t", 0, 0), ("t", 0, 1), ("t", 0, 1), ("t", 1, 0)]
    run.effects.write_text("".join(json.dumps({"topic": t, "partition": p, "offset": o}) + "\n" for t, p, o in stored)
                           + "not json\n")
    acks = _acks(spark, [("t", 0, 0), ("t", 0, 1), ("t", 0, 2), ("t", 1, 0), ("t", 1, 1), ("t", 1, None)])
    measures = effect_measures(spark, str(tmp_path), acks)
    values = {k: v.value for k, v in CATALOGUE.measure(measures).items()}
    assert values == {"effects_stored": 3, "effects_duplicated": 1, "effects_missing": 2}
    assert measures.missing_examples == [{"topic": "t", "partition": 0, "offset": 2},
                                         {"topic": "t", "partition": 1, "offset": 1}]


def test_without_a_store_read_the_figures_are_unknown_and_say_why(spark, tmp_path) -> None:  # noqa: F811
    run = RunDir(tmp_path).create()
    acks = _acks(spark, [("t", 0, 0)])
    assert {v.unknown for v in CATALOGUE.measure(effect_measures(spark, str(tmp_path), acks)).values()} == {NO_EFFECTS}
    run.effects_failed.parent.mkdir(parents=True, exist_ok=True)
    run.effects_failed.write_text("effects.command: 'dump' exited with 2")
    values = CATALOGUE.measure(effect_measures(spark, str(tmp_path), acks))
    assert all(v.value is None and "exited with 2" in v.unknown for v in values.values())
