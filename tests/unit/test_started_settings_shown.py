"""The settings and heartbeat interval of each member's ``started`` event, as the analysis keeps them (metrics.json
config.members) and as the report's member table shows them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from histories.builder import TOPIC, HistoryBuilder
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis import analyse
from testbed.history.events import Action, Started
from testbed.report.inputs import Got
from testbed.report.run_report import member_rows

SETTINGS = {"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "client.id": "A", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "fetch.min.bytes": 1024}


def test_the_analysis_keeps_each_members_settings_as_a_mapping(tmp_path: Path, spark) -> None:  # noqa: F811
    h = HistoryBuilder(tmp_path)
    h.harness(Action.RUN_START, 0)
    h.member("A", Started(ts_ms=100, source="A", client="confluent-kafka", client_version="2.16.1", group_id="g",
                          topics=[TOPIC], pid=1, heartbeat_interval_ms=1500, settings=SETTINGS))
    h.assigned("A", 1000, [0, 1])
    for ts in (2000, 3000):
        for p in (0, 1):
            h.produce_and_process("A", ts, p)
    h.harness(Action.DRAIN_START, 4000)
    h.harness(Action.DRAIN_END, 5000)
    h.revoked("A", 5500, [0, 1])
    h.stopped("A", 5600)
    h.harness(Action.RUN_END, 6000)
    h.close()
    member = analyse(tmp_path, spark=spark).config.members["A"]
    assert member["settings"] == SETTINGS and member["heartbeat_interval_ms"] == 1500


def test_the_member_table_shows_the_settings_other_columns_do_not() -> None:
    out = SimpleNamespace(members=Got({
        "A": {"client": "confluent-kafka", "heartbeat_interval_ms": 3000, "settings": SETTINGS},
        "B": {"client": "kafka-python", "settings": None},  # a history written before members recorded them
        "C": {"client": "java", "settings": {}}}))
    rows = {row["member"]: row for row in member_rows(out)["rows"]}
    assert rows["A"]["settings"] == "enable.auto.commit=False; auto.offset.reset=earliest; fetch.min.bytes=1024"
    assert rows["A"]["heartbeat_interval_ms"] == 3000
    assert rows["B"]["settings"] is None and rows["C"]["settings"] is None
