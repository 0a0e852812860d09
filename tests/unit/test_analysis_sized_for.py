"""sized_for: the SQL settings a query runs with, by the size of what it reads."""

from __future__ import annotations

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.spark import session_for, sized_for


def test_large_inputs_run_with_the_sessions_own_settings_not_sparks_defaults(spark):  # noqa: F811
    """Inside a small input's block, a large input's queries get what the session was built with (4 shuffle
    partitions here), not Spark's built-in default of 200 that unsetting the key falls back to."""
    built = spark.sparkContext.getConf().get("spark.sql.shuffle.partitions")
    with sized_for(spark, 0):
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"
        with sized_for(spark, 1 << 40):
            assert spark.conf.get("spark.sql.shuffle.partitions") == built
            assert spark.conf.get("spark.sql.codegen.wholeStage") == "true"
        assert spark.conf.get("spark.sql.shuffle.partitions") == "1"


def test_a_session_for_an_input_keeps_its_own_settings_beside_the_shared_one(spark):  # noqa: F811
    built = spark.sparkContext.getConf().get("spark.sql.shuffle.partitions")
    large, small = session_for(spark, 1 << 40), session_for(spark, 0)
    assert large.conf.get("spark.sql.shuffle.partitions") == built
    assert small.conf.get("spark.sql.shuffle.partitions") == "1"
    with sized_for(spark, 0):  # changing the shared session's settings leaves the others alone
        assert large.conf.get("spark.sql.shuffle.partitions") == built
    assert large.sparkContext is spark.sparkContext
