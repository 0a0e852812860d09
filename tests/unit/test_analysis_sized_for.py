"""sized_for, session_for, scheduler_pool, side_by_side: the settings a query runs with, by the size of what it
reads and the thread that submits it."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.spark.session import own_session, scheduler_pool, session_for, sized_for
from testbed.analysis.spark.side_by_side import side_by_side


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
    with session_for(spark, 1 << 40) as large, session_for(spark, 0) as small:
        assert large is not small
        assert large.conf.get("spark.sql.shuffle.partitions") == built
        assert small.conf.get("spark.sql.shuffle.partitions") == "1"
        with sized_for(spark, 0):  # changing the shared session's settings leaves the others alone
            assert large.conf.get("spark.sql.shuffle.partitions") == built
        assert large.sparkContext is spark.sparkContext


def test_a_session_for_an_input_runs_without_adaptive_execution(spark):  # noqa: F811
    """An adaptive query filling a cache holds the cache's lock through all its stages, and an unpersist on
    another thread waits for it: the sessions whose queries run beside others' are not adaptive."""
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    with session_for(spark, 1 << 40) as session:
        assert session.conf.get("spark.sql.adaptive.enabled") == "false"
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"


def test_a_session_given_back_is_reused_with_the_next_takers_settings_only(spark):  # noqa: F811
    """A new session's first queries build its state (0.2 s of a small warm analysis): a session given back is
    taken again, and what its last taker set does not stay."""
    with session_for(spark, 0) as small:
        assert small.conf.get("spark.sql.codegen.wholeStage") == "false"
    with own_session(spark) as again:
        assert again is small
        assert again.conf.get("spark.sql.codegen.wholeStage") == "true"
        assert again.conf.get("spark.sql.adaptive.enabled") == "true"
        assert again.conf.get("spark.sql.shuffle.partitions") == spark.sparkContext.getConf().get(
            "spark.sql.shuffle.partitions")


def test_a_threads_jobs_go_to_its_pool_and_back_to_the_default_after(spark):  # noqa: F811
    context = spark.sparkContext
    assert context.getConf().get("spark.scheduler.mode") == "FAIR"
    pool = "test-pool-of-this-thread"  # a name no other test uses: the scheduler makes the pool for its first job
    assert not context._jsc.sc().getPoolForName(pool).isDefined()
    with scheduler_pool(spark, pool):
        assert context.getLocalProperty("spark.scheduler.pool") == pool
        assert spark.range(10).count() == 10
    assert context._jsc.sc().getPoolForName(pool).isDefined()
    assert context.getLocalProperty("spark.scheduler.pool") is None


def test_queries_side_by_side_give_their_results_in_order_each_on_a_thread_in_the_callers_pool(spark):  # noqa: F811
    pool = "test-pool-of-side-by-side"
    seen: list[tuple[int, str | None]] = []

    def query(n: int):
        def run() -> int:
            seen.append((threading.get_ident(), spark.sparkContext.getLocalProperty("spark.scheduler.pool")))
            return spark.range(n).count()
        return run

    with scheduler_pool(spark, pool):
        assert side_by_side(spark, query(3), query(5), query(7)) == [3, 5, 7]
    assert len({thread for thread, _ in seen}) == 3
    assert {name for _, name in seen} == {pool}
    assert threading.get_ident() in {thread for thread, _ in seen}  # the first runs on the caller's thread


def test_a_failure_side_by_side_is_raised_only_once_every_query_has_ended(spark):  # noqa: F811
    """What the queries read is released after them: a failure of the first must not return while another
    query still reads it."""
    ended: list[str] = []

    def slow() -> None:
        time.sleep(0.5)
        ended.append("slow")

    def failing() -> None:
        raise ValueError("the first query failed")

    with pytest.raises(ValueError, match="the first query failed"):
        side_by_side(spark, failing, slow)
    assert ended == ["slow"]
    with pytest.raises(ValueError, match="the first query failed"):
        side_by_side(spark, slow, failing)


def test_a_column_function_costs_no_round_trips_for_its_python_call_site(spark, monkeypatch):  # noqa: F811
    """With PySpark's DataFrame debugging on, each column function also asks the JVM for the active session, a
    conf and the origin's set and clear (seven round trips for ``F.col``); the session turns it off, so that
    building the analysis's queries costs their own calls only: the function's lookup and the call itself."""
    import py4j.clientserver
    from pyspark.sql import functions as F

    F.col("warm")  # the first call reads whether debugging is on, once per process
    # Every command of this thread counts, py4j's deletions included: the garbage of earlier tests is collected
    # before counting, and no collection runs inside the call. Other threads' commands do not: py4j's finalizer
    # thread sends the deletions of objects let go earlier whenever it gets to them (two CI runs counted eight and
    # more of those).
    gc.collect()
    commands: list[str] = []
    send = py4j.clientserver.ClientServerConnection.send_command
    caller = threading.get_ident()

    def counted(self, command: str) -> str:
        if threading.get_ident() == caller:
            commands.append(command)
        return send(self, command)

    monkeypatch.setattr(py4j.clientserver.ClientServerConnection, "send_command", counted)
    gc.disable()
    try:
        F.col("x")
    finally:
        gc.enable()
    assert len(commands) <= 3, [c.split("\n")[:3] for c in commands]
