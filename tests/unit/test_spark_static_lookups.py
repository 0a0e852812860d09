"""PySpark's lookups of the JVM classes behind column functions, made once per JVM (a py4j round trip each)."""

from __future__ import annotations

import py4j.clientserver
from pyspark.sql import functions as F

from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis.spark.static_lookups import CLASSES, keep_static_lookups


def _round_trips(monkeypatch, action) -> list[str]:
    sent: list[str] = []
    send = py4j.clientserver.ClientServerConnection.send_command

    def counted(self, command):
        sent.append(command.split("\n", 1)[0])
        return send(self, command)

    monkeypatch.setattr(py4j.clientserver.ClientServerConnection, "send_command", counted)
    action()
    monkeypatch.undo()
    return sent


def test_a_column_function_costs_only_its_call(spark, monkeypatch):  # noqa: F811
    F.col("warm"), F.lit(0)  # each method itself is looked up on its first use
    for function in (lambda: F.col("x"), lambda: F.lit(1)):
        sent = _round_trips(monkeypatch, function)  # besides the call, only the GC's releases ("m") may go
        assert sent.count("c") == 1 and "r" not in sent, sent  # no reflection ("r"): the lookups were kept
    assert F.col("x")._jc.toString() == "x"


def test_the_lookups_are_kept_once_per_view(spark):  # noqa: F811
    jvm = spark.sparkContext._jvm
    kept = {name: vars(jvm)[name] for name in CLASSES}
    keep_static_lookups(jvm)  # a session made again on the same JVM
    assert all(vars(jvm)[name] is kept[name] for name in CLASSES)  # not resolved again
    functions = vars(jvm)["org.apache.spark.sql.functions"]
    functions.col  # noqa: B018 - a static method: kept
    assert "col" in vars(functions)
