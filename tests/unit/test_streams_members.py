"""Kafka Streams instances as members: the spec's refusals, the settings, the scenario rules, the runner's
translation of the application's lines into the history, and the fleet's names and states."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from pydantic import ValidationError

from testbed.admin.kafka_admin import GroupView, MemberView
from testbed.analysis.streams.measures import (ABSENT, CATALOGUE, OutputCheck, StreamsFound, output_check,
                                            read_output_check, rebalancing_ms, restorations)
from testbed.analysis.view.lives import MemberLife
from testbed.errors import ConfigError
from testbed.fleet.ownership import disagreements, fleet_names
from testbed.fleet.streams import StreamsStates, instance_name, instance_of_thread, last_group_status, not_running
from testbed.history.events import parse_event
from testbed.members.client_settings import streams_settings
from testbed.members.config import MemberConfig
from testbed.members.java.streams import StreamsLineWriter, state_dir
from testbed.members.launch import host_command, runner_command
from testbed.members.spec import MemberSpec
from testbed.scenario.loader import expand

APP = {"client": "java", "client_version": "4.3.1", "streams": {"topology": "stateful"}}


def spec(**fields) -> MemberSpec:
    return MemberSpec(**{**APP, **fields})


def config(tmp_path: Path, **fields) -> MemberConfig:
    return MemberConfig(member_id="m1", slot=1, group_id="app", topics=["orders"], bootstrap_servers="127.0.0.1:1",
                        spec=spec(**fields), history_path=tmp_path / "m1.jsonl", run_dir=tmp_path)


@pytest.mark.parametrize("fields, message", [
    ({"client": "confluent-kafka"}, "a Kafka Streams application runs on client 'java'"),
    ({"streams": None, "group_protocol": "streams"}, "add a streams: block"),
    ({"group_protocol": "consumer"}, "runs 'classic' or 'streams'"),
    ({"group_protocol": "streams", "client_version": "4.1.1"}, "use 4.2.0 or later"),
    ({"client_version": "2.7.2"}, "client_version: java runs kafka-streams 2.8.x, 3.x, 4.x; got '2.7.2'"),
    ({"group_protocol": "streams", "static": True}, "static membership from kafka-streams 4.4"),
    ({"group_protocol": "streams", "session_timeout_ms": 6000}, "streams.session.timeout.ms"),
    ({"group_protocol": "streams", "client_config": {"acceptable.recovery.lag": 5}},
     "client_config.acceptable.recovery.lag: ignored under group_protocol 'streams'"),
    ({"assignors": ["range"]}, "assignors: not for a Kafka Streams instance"),
    ({"commit_mode": "sync"}, "commits every commit.interval.ms"),
    ({"client_config": {"state.dir": "/x"}}, "client_config.state.dir: set by testbed (streams.state)"),
    ({"client_config": {"application.id": "x"}}, "use the scenario's group_id"),
    ({"streams": {"topology": "joined"}}, "stateless"),
    ({"streams": {"topology": "stateful", "num_standby_replicas": -1}}, "num_standby_replicas"),
])
def test_a_streams_spec_that_cannot_work_is_refused_naming_the_field(fields, message) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        spec(**fields)


def test_the_classic_streams_instance_rebalances_cooperatively_and_the_streams_protocol_on_the_broker() -> None:
    assert spec().rebalance_protocol == "cooperative" and spec().is_streams
    assert spec(group_protocol="streams").rebalance_protocol == "consumer"
    assert spec(static=True, client_config={"acceptable.recovery.lag": 5}).static  # classic takes both
    assert spec(group_protocol="streams", static=True, client_version="4.4.0").static  # KAFKA-20169, 4.4 on


def test_settings_follow_the_protocol_and_keep_the_users_on_top(tmp_path: Path) -> None:
    classic = streams_settings(config(tmp_path, static=True, session_timeout_ms=6000,
                                      client_config={"commit.interval.ms": 100},
                                      streams={"topology": "stateful", "num_standby_replicas": 1}), "/s")
    assert classic == {"application.id": "app", "bootstrap.servers": "127.0.0.1:1", "client.id": "m1",
                       "state.dir": "/s", "processing.guarantee": "at_least_once", "num.standby.replicas": "1",
                       "session.timeout.ms": "6000", "group.instance.id": "app-slot-1", "commit.interval.ms": "100"}
    # the streams protocol: standbys are the group's (set by the scenario runner), the protocol is named
    on_protocol = streams_settings(config(tmp_path, group_protocol="streams"), "/s")
    assert on_protocol["group.protocol"] == "streams" and "num.standby.replicas" not in on_protocol


def test_streams_runs_older_versions_than_the_consumer_runner_and_names_eos_v2_as_each_names_it(tmp_path: Path) -> None:
    # testbed's Streams application needs no kafka-tools: 2.8 and 3.x run (VerifiableConsumer runs 3.9 on)
    assert spec(client_version="2.8.2").java_version == "2.8.2"
    with pytest.raises(ValidationError, match="kafka-tools VerifiableConsumer 3.9.x, 4.x"):
        MemberSpec(client="java", client_version="3.6.2")
    eos = {"topology": "stateful", "processing_guarantee": "exactly_once_v2"}
    assert streams_settings(config(tmp_path, client_version="2.8.2", streams=eos), "/s")[
        "processing.guarantee"] == "exactly_once_beta"  # KIP-447's name before KIP-732 (3.0)
    assert streams_settings(config(tmp_path, client_version="3.0.2", streams=eos), "/s")[
        "processing.guarantee"] == "exactly_once_v2"


def test_kept_state_is_the_slots_and_fresh_state_new_at_each_start(tmp_path: Path) -> None:
    kept, temporary = state_dir(config(tmp_path))
    assert kept == tmp_path / "streams-state" / "slot-1" and kept.is_dir() and not temporary
    fresh = [state_dir(config(tmp_path, streams={"topology": "stateful", "state": "fresh"}))[0] for _ in range(2)]
    assert fresh[0] != fresh[1] and all(p.parent == tmp_path / "streams-state" for p in fresh)


def test_streams_instances_run_their_own_runner_one_per_process(tmp_path: Path) -> None:
    assert "testbed.members.java.streams" in runner_command(config(tmp_path), "cfg.json")
    with pytest.raises(ValueError, match="no Streams instances"):
        host_command(spec())


def _history_of(cfg, lines: list[dict]) -> list:
    """The member history a StreamsLineWriter writes from the application's JSON lines."""
    writer = StreamsLineWriter(cfg, 4242, {"application.id": "app"}, cfg.run_dir / "state")
    for line in lines:
        writer.line(line)
    writer.history.close()
    return [parse_event(json.loads(line)) for line in cfg.history_path.read_text().splitlines()]


def test_the_applications_lines_become_the_members_history(tmp_path: Path) -> None:
    events = _history_of(config(tmp_path), [
        {"name": "startup_complete", "timestamp": 1001},
        {"name": "state", "timestamp": 1002, "from": "CREATED", "to": "REBALANCING"},
        {"name": "restore", "timestamp": 1100, "phase": "start", "store": "counts", "topic": "app-counts-changelog",
         "partition": 1, "start_offset": 0, "end_offset": 40, "records": None},
        {"name": "assigned", "timestamp": 1150, "partitions": [["orders", 1], ["orders", 4]]},
        {"name": "restore", "timestamp": 1200, "phase": "end", "store": "counts", "topic": "app-counts-changelog",
         "partition": 1, "start_offset": None, "end_offset": None, "records": 40},
        {"name": "processed", "timestamp": 1300, "topic": "orders", "partition": 1, "first_offset": 5,
         "last_offset": 9, "count": 5, "produce_ts_min_ms": 900, "produce_ts_max_ms": 950},
        {"name": "tasks", "timestamp": 1310, "active": [{"task": "0_1", "partitions": [["orders", 1]]}],
         "standby": [{"task": "0_2", "partitions": [["orders", 2]]}]},
        {"name": "revoked", "timestamp": 1400, "partitions": [["orders", 4]]},
        {"name": "client_error", "timestamp": 1500, "code": "StreamsException", "message": "boom", "fatal": True},
        {"name": "shutdown_complete", "timestamp": 1600},
    ])
    assert [e.name for e in events] == ["started", "streams_state", "streams_restore", "assigned", "streams_restore",
                                        "processed", "streams_tasks", "revoked", "error", "stopped"]
    started = events[0]
    assert started.ts_ms == 1001 and started.group_protocol == "classic" and started.rebalance_protocol == "cooperative"
    assert started.streams["topology"] == "stateful" and started.streams["output_topic"] == "orders-out"
    assert events[1].from_state == "CREATED" and events[1].to_state == "REBALANCING" and events[1].ts_ms == 1002
    assert events[3].partitions == [("orders", 1), ("orders", 4)] and events[3].ts_ms == 1150
    assert events[4].records == 40 and events[5].count == 5 and events[5].produce_ts_max_ms == 950
    assert events[6].standby[0].partitions == [("orders", 2)]
    assert events[7].partitions == [("orders", 4)]
    assert events[-1].reason == "error"  # a fatal error ends it as an error, not clean


def test_a_changelogs_last_stable_offset_is_a_restore_event_of_phase_stable(tmp_path: Path) -> None:
    # exactly-once: the start's end offset is the high watermark; the stable line, the last stable offset, comes
    # when the Admin client answers (after the start, and again after a suspension)
    events = _history_of(config(tmp_path, group_protocol="streams", streams={
        "topology": "stateful", "processing_guarantee": "exactly_once_v2"}), [
        {"name": "startup_complete", "timestamp": 1001},
        {"name": "restore", "timestamp": 1100, "phase": "start", "store": "counts", "topic": "app-counts-changelog",
         "partition": 1, "start_offset": 0, "end_offset": 1183, "records": None},
        {"name": "restore", "timestamp": 1130, "phase": "stable", "store": "counts", "topic": "app-counts-changelog",
         "partition": 1, "start_offset": None, "end_offset": 1006, "records": None},
    ])
    assert [(e.name, getattr(e, "phase", None)) for e in events] == [
        ("started", None), ("streams_restore", "start"), ("streams_restore", "stable")]
    stable = events[2]
    assert stable.ts_ms == 1130 and stable.topic == "app-counts-changelog" and stable.partition == 1
    assert stable.end_offset == 1006 and stable.start_offset is None and stable.records is None


def test_a_fenced_instances_lost_tasks_are_lost_with_its_member_id_and_it_says_so(tmp_path: Path) -> None:
    # StreamThread.handleTaskMigrated (the EOS producer fenced): every task closed, lost, then handed back
    events = _history_of(config(tmp_path, group_protocol="streams", streams={
        "topology": "stateful", "processing_guarantee": "exactly_once_v2"}), [
        {"name": "startup_complete", "timestamp": 1001},
        {"name": "assigned", "timestamp": 1100, "partitions": [["orders", 0], ["orders", 2]],
         "kafka_member_id": "uKq0"},
        {"name": "processed", "timestamp": 1300, "topic": "orders", "partition": 2, "first_offset": 5,
         "last_offset": 9, "count": 5, "produce_ts_min_ms": 900, "produce_ts_max_ms": 950},
        {"name": "lost", "timestamp": 1310, "partitions": [["orders", 0], ["orders", 2]], "kafka_member_id": "uKq0"},
        {"name": "assigned", "timestamp": 1900, "partitions": [["orders", 0], ["orders", 2]],
         "kafka_member_id": "uKq0"},
        {"name": "revoked", "timestamp": 2000, "partitions": [["orders", 2]]},  # a member id never known: none
    ])
    assert [e.name for e in events] == ["started", "assigned", "processed", "lost", "assigned", "revoked"]
    assert events[0].reports_lost is True and events[0].group_protocol == "streams"
    lost = events[3]
    assert lost.partitions == [("orders", 0), ("orders", 2)] and lost.ts_ms == 1310
    assert lost.kafka_member_id == "uKq0" and events[4].kafka_member_id == "uKq0"
    assert "kafka_member_id" not in events[5].model_dump()


def test_the_broker_lists_a_streams_instances_consumer_under_the_instances_name() -> None:
    assert instance_name("m0.1-StreamThread-1-consumer") == "m0.1"
    assert instance_name("m3") == "m3" and instance_name("my-StreamThread-x") == "my-StreamThread-x"
    view = GroupView("app", "STABLE", "stream", "CLASSIC", (
        MemberView("a", "m0-StreamThread-1-consumer", None, frozenset({("orders", 0)})),
        MemberView("b", "m0-StreamThread-2-consumer", None, frozenset({("orders", 1)})),
        MemberView("c", "m1-StreamThread-1-consumer", None, frozenset({("orders", 2)}))))
    names = fleet_names(view, {})
    assert names == {"a": "m0", "b": "m0", "c": "m1"}
    held = {"m0": {("orders", 0), ("orders", 1)}, "m1": {("orders", 2)}}
    # an instance of two threads is two broker members: their partitions together are the instance's
    assert disagreements(view, held, {("orders", 0), ("orders", 1), ("orders", 2)}, names) == []


def test_a_static_instances_replacement_is_known_by_its_instance_id_whatever_client_id_the_broker_kept() -> None:
    # m0's replacement m0.1 rejoined under slot 0's instance id: the coordinator kept m0's client id, and Streams
    # joined its thread's consumer as "<instance id>-<thread>"
    view = GroupView("app", "STABLE", "stream", "CLASSIC", (
        MemberView("a", "m0-StreamThread-1-consumer", "app-slot-0-1", frozenset({("orders", 0)})),
        MemberView("b", "m1-StreamThread-1-consumer", "app-slot-1-1", frozenset({("orders", 1)}))))
    assert fleet_names(view, {"app-slot-0": "m0.1", "app-slot-1": "m1"}) == {"a": "m0.1", "b": "m1"}
    assert instance_of_thread("app-slot-0-1", "m0-StreamThread-1-consumer") == "app-slot-0"
    assert instance_of_thread("app-slot-0", "m0") == "app-slot-0"  # a consumer's instance id is its own


def test_an_instances_state_is_its_latest_transition(tmp_path: Path) -> None:
    history = tmp_path / "m0.jsonl"
    states = StreamsStates()
    assert states.state(history) is None
    with history.open("a") as f:
        for to in ("REBALANCING", "RUNNING", "REBALANCING"):
            f.write(json.dumps({"name": "streams_state", "ts_ms": 1, "source": "m0", "from_state": "X",
                                "to_state": to}) + "\n")
    assert states.state(history) == "REBALANCING"
    with history.open("a") as f:
        f.write(json.dumps({"name": "streams_state", "ts_ms": 2, "source": "m0", "from_state": "REBALANCING",
                            "to_state": "RUNNING"}) + "\n")
    assert states.state(history) == "RUNNING"
    assert not states.on_streams_protocol(history)  # testbed's own application says its protocol in its spec


def test_a_streams_program_on_the_streams_protocol_is_known_by_its_started(tmp_path: Path) -> None:
    """A team's Streams program chooses its protocol itself: the fleet's stable wait learns it from ``started``."""
    history = tmp_path / "m0.jsonl"
    states = StreamsStates()
    history.write_text(json.dumps({"name": "started", "ts_ms": 1, "source": "m0", "group_protocol": "classic"}) + "\n")
    assert not states.on_streams_protocol(history)
    other = tmp_path / "m1.jsonl"
    other.write_text(json.dumps({"name": "started", "ts_ms": 1, "source": "m1", "group_protocol": "streams"}) + "\n")
    assert states.on_streams_protocol(other) and states.state(other) is None


def test_a_group_waits_for_its_streams_instances_running_and_ignores_plain_consumers() -> None:
    """On the classic protocol a Streams group can be stable while an instance still initialises its tasks."""
    assert not_running({"m0": "RUNNING", "m1": "REBALANCING", "c0": None}) == [
        "m1: Streams instance REBALANCING, not RUNNING"]
    assert not_running({"m0": "RUNNING", "c0": None}) == []
    # on the streams protocol every member is an instance: one without a state yet has not started
    assert not_running({"m0": None}, unknown="not started") == ["m0: Streams instance not started, not RUNNING"]


SCENARIO = """\
name: t
topics:
  - {name: orders, partitions: 6}
load: {topic: orders, rate: 100}
members:
  app: {client: java, client_version: 4.3.1, group_protocol: streams, streams: {topology: stateful}}
"""


@pytest.mark.parametrize("extra, message", [
    ("  other: {client: confluent-kafka}\nfleet:\n  - {spec: app, count: 2}\n  - {spec: other, count: 1}\n",
     "its group holds its instances alone"),
    ("  old: {client: java, client_version: 4.3.1, streams: {topology: stateful}}\nfleet:\n  - {spec: app, count: 2}\n"
     "steps:\n  - rolling_bounce: {to: old}\n", "no online migration"),
    ("  lean: {client: java, client_version: 4.3.1, group_protocol: streams, streams: {topology: stateless}}\n"
     "fleet:\n  - {spec: app, count: 2}\nsteps:\n  - rolling_bounce: {to: lean}\n", "one application has one topology"),
    ("  more: {client: java, client_version: 4.3.1, group_protocol: streams, streams: {topology: stateful, "
     "num_standby_replicas: 1}}\nfleet:\n  - {spec: app, count: 2}\nsteps:\n  - rolling_bounce: {to: more}\n",
     "one setting of the group"),
    ("fleet:\n  - {spec: app, count: 4, members_per_process: 2}\n", "members_per_process must be 1"),
    ("fleet:\n  - {spec: app, count: 2}\ncluster: {kafka_version: 4.1.1}\n", "served from 4.2"),
    ("  fixed: {client: java, client_version: 4.4.0, group_protocol: streams, static: true, streams: {topology: "
     "stateful}}\nfleet:\n  - {spec: app, count: 2}\nsteps:\n  - rolling_bounce: {to: fixed}\n"
     "cluster: {kafka_version: 4.3.1}\n", "brokers before 4.4 refuse group.instance.id"),
    ("fleet:\n  - {spec: app, count: 2}\nstreams_group: {session_timeout_ms: 10000, heartbeat_interval_ms: 10000}\n",
     "heartbeat_interval_ms: 10000 must be below the session timeout"),
    ("fleet:\n  - {spec: app, count: 2}\nstreams_group: {session_timeout_ms: 5000}\n",
     "streams_group.session_timeout_ms"),
    ("fleet:\n  - {spec: app, count: 2}\nstreams_group: {heartbeat_ms: 1000}\n", "streams_group.heartbeat_ms"),
])
def test_a_streams_group_scenario_that_cannot_work_is_refused(tmp_path: Path, extra: str, message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + extra)
    with pytest.raises(ConfigError, match=message):
        expand(path)


def test_the_streams_protocols_standbys_are_the_groups(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO.replace("topology: stateful", "topology: stateful, num_standby_replicas: 2")
                    + "fleet:\n  - {spec: app, count: 2}\n")
    assert expand(path)[0].scenario.streams_protocol_standbys == 2
    path.write_text(SCENARIO.replace("group_protocol: streams, ", "") + "fleet:\n  - {spec: app, count: 2}\n")
    assert expand(path)[0].scenario.streams_protocol_standbys is None  # classic: the client's own setting


def test_the_streams_groups_settings_are_its_group_configs_and_only_under_the_streams_protocol(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + "fleet:\n  - {spec: app, count: 2}\n"
                    "streams_group: {session_timeout_ms: 10000, heartbeat_interval_ms: 1000}\n")
    settings = expand(path)[0].scenario.streams_group
    assert settings is not None and settings.group_configs() == {"streams.session.timeout.ms": "10000",
                                                                 "streams.heartbeat.interval.ms": "1000"}
    path.write_text(path.read_text().replace("group_protocol: streams, ", ""))
    with pytest.raises(ConfigError, match="streams_group: settings of a Kafka Streams group on the streams protocol"):
        expand(path)


def _rows(*events: tuple) -> list[dict]:
    keys = ("member", "ts_ms", "name", "phase", "store", "topic", "partition", "start_offset", "end_offset", "records",
            "to_state")
    return [dict(zip(keys, e)) for e in events]


def test_restorations_pair_each_start_with_its_end_or_suspension() -> None:
    rows = _rows(("m0", 100, "streams_restore", "start", "counts", "c", 1, 0, 40, None, None),
                 ("m1", 105, "streams_restore", "start", "counts", "c", 1, 0, 0, None, None),
                 ("m0", 110, "streams_restore", "batch", "counts", "c", 1, None, 20, 20, None),
                 ("m1", 115, "streams_restore", "end", "counts", "c", 1, None, None, 0, None),
                 ("m0", 160, "streams_restore", "suspended", "counts", "c", 1, None, None, 30, None),
                 ("m0", 200, "streams_restore", "start", "counts", "c", 2, 5, 9, None, None))  # never ended
    frame = restorations(rows, ends={"m0": 260, "m1": 300}, processed={1: [120], 2: [100]})
    assert frame[["member", "start_ms", "end_ms", "duration_ms", "restored_to_offset", "records", "ended",
                  "unfinished"]].astype(object).where(frame.notna(), -1).values.tolist() == [
        ["m1", 105, 115, 10, -1, 0, "end", False], ["m0", 100, 160, 60, 20, 30, "suspended", False],
        # open until m0's life ended, and partition 2 never processed since: unfinished
        ["m0", 200, 260, 60, -1, 0, "never", True]]
    found = StreamsFound(2, frame, 0, OutputCheck(10, 0, 0, 0))
    metrics = {k: v.value for k, v in CATALOGUE.measure(found).items() if k.startswith(("streams_re", "streams_restor"))}
    # a restoration of nothing (m1's) is not one, nor one that never ended: 1 restoration, 30 records, 60 ms
    assert metrics == {"streams_restorations": 1, "streams_restored_records": 30, "streams_restore_max_ms": 60,
                       "streams_restorations_unfinished": 1, "streams_rebalancing_ms": 0}
    none = CATALOGUE.measure(StreamsFound(2, frame.iloc[:1], 0))
    assert none["streams_restore_max_ms"].value is None and none["streams_restore_max_ms"].unknown
    absent = CATALOGUE.measure(StreamsFound(0, frame.iloc[:0], None))
    assert all(v.value is None and v.unknown == ABSENT for v in absent.values())


def test_a_restoration_is_unfinished_only_when_its_store_partition_stayed_unrestored_and_its_task_stood_still() -> None:
    def restore(member: str, ts: int, phase: str, partition: int, end: int | None = None, n: int | None = None):
        return (member, ts, "streams_restore", phase, "counts", "c", partition, 0 if phase == "start" else None, end,
                n, None)

    rows = _rows(restore("m1", 500, "start", 1, 900), restore("m1", 900, "suspended", 1, n=0),  # an earlier attempt
                 restore("m1", 950, "stable", 1, 880),  # the answer to the suspension's question, after it
                 restore("m0", 1_000, "start", 1, 1183), restore("m0", 1_050, "stable", 1, 1006),
                 restore("m0", 1_100, "batch", 1, 1006, 1000),
                 restore("m0", 148_000, "suspended", 1, n=1000),  # at m0's close, 147 s on: the issue-42 shape
                 restore("m1", 2_000, "start", 2, 500), restore("m1", 9_000, "suspended", 2, n=10),  # moved on...
                 restore("m0", 9_500, "start", 2, 500), restore("m0", 9_600, "end", 2, n=490),  # ...and done there
                 restore("m1", 3_000, "start", 3, 50), restore("m1", 4_000, "suspended", 3, n=5),  # a standby took it
                 restore("m1", 200_000, "start", 0, 90))  # in the teardown
    frame = restorations(sorted(rows, key=lambda r: r["ts_ms"]), ends={"m0": 149_000, "m1": 201_000},
                         processed={1: [500], 3: [4_200]}, teardown_after=150_000)
    unfinished = frame[frame["unfinished"]]
    # only the last attempt of a store partition is judged (m1's earlier one is not counted again)
    assert unfinished[["member", "partition", "start_ms", "duration_ms", "to_offset", "restored_to_offset",
                       "last_stable_offset", "ended"]].values.tolist() == [
        ["m0", 1, 1_000, 147_000, 1183, 1006, 1006, "suspended"]]
    assert frame[frame["member"] == "m1"].sort_values("start_ms")["last_stable_offset"].tolist()[0] == 880
    metrics = CATALOGUE.measure(StreamsFound(2, frame, 0))
    assert metrics["streams_restorations_unfinished"].value == 1
    assert metrics["streams_unfinished_restore_max_ms"].value == 147_000


def test_the_application_is_stopped_only_while_no_live_instance_runs() -> None:
    def state(member: str, ts: int, to: str) -> tuple:
        return (member, ts, "streams_state", None, None, None, None, None, None, None, to)

    rows = sorted(_rows(("m0", 0, "started", *[None] * 8), ("m1", 0, "started", *[None] * 8),
                        state("m0", 10, "REBALANCING"), state("m1", 10, "REBALANCING"),  # start-up: not counted
                        state("m0", 100, "RUNNING"), state("m1", 120, "RUNNING"),
                        state("m0", 200, "REBALANCING"), state("m1", 250, "REBALANCING"),  # 250..300: both
                        state("m1", 300, "RUNNING"), state("m0", 320, "RUNNING"),
                        state("m0", 400, "REBALANCING")),  # m1 killed at 450 while RUNNING: from 450 on, m0 alone
                  key=lambda r: r["ts_ms"])
    lives = {"m0": MemberLife("m0", 600, "stopped"), "m1": MemberLife("m1", 450, "killed")}
    assert rebalancing_ms(rows, lives) == 50 + 150  # 250..300, and 450..600 with m0 REBALANCING alone
    never = [r for r in rows if r["to_state"] != "RUNNING"]
    assert rebalancing_ms(never, lives) is None


def test_the_output_is_judged_by_results_owed_by_the_acknowledged_records() -> None:
    acked = pd.DataFrame([("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 0)], columns=["key", "seq"])  # b0 acked twice
    # stateful: a owes counts 1..3, b owes 1; a's 2 repeated, a's 3 missing, a 4 no record owes, b whole
    counts = [{"key": k, "value": v} for k, v in (("a", "1"), ("a", "2"), ("a", "2"), ("a", "4"), ("b", "1"),
                                                  ("b", "not a number"))]
    assert output_check(counts, acked, "stateful") == OutputCheck(records=6, duplicates=1, missing=1, extra=1)
    # stateless: a result is the input's value, named by key and sequence number
    value = lambda k, s: json.dumps({"key": k, "seq": s, "ts": 1, "pad": ""})
    copies = [{"key": k, "value": value(k, s)} for k, s in (("a", 0), ("a", 0), ("a", 2), ("b", 0), ("c", 9))]
    assert output_check(copies + [{"key": None, "value": None}], acked, "stateless") == OutputCheck(
        records=6, duplicates=1, missing=1, extra=1)
    exact = [{"key": "a", "value": str(n)} for n in (1, 2, 3)] + [{"key": "b", "value": "1"}]
    assert output_check(exact, acked, "stateful") == OutputCheck(4, 0, 0, 0)


def test_the_output_checks_are_unknown_without_a_whole_read(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    run = SimpleNamespace(root=str(tmp_path), files=SimpleNamespace(acks=str(tmp_path / "history" / "acks" / "*")))
    assert "did not read its output" in read_output_check(run, "stateful").reason
    (tmp_path / "history" / "streams-output.failed").write_text("orders-out was not read to its end\n")
    assert "not read whole: orders-out" in read_output_check(run, "stateful").reason
    found = StreamsFound(3, restorations([]), 10, read_output_check(run, "stateful"))
    measured = CATALOGUE.measure(found)
    assert measured["streams_output_missing"].value is None and "not read whole" in measured["streams_output_missing"].unknown


def test_without_an_ack_log_the_output_checks_are_unknown_not_zero(tmp_path: Path) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "streams-output.jsonl").write_text('{"key": "a", "value": "1"}\n')
    run = SimpleNamespace(root=str(tmp_path), files=SimpleNamespace(acks=None))
    assert "no producer ack log" in read_output_check(run, "stateful").reason


def test_a_stateful_task_held_without_a_restoration_start_and_never_processed_never_began_restoring() -> None:
    """The changelog's leader down at the assignment: Streams' end-offset lookup is retried, no listener is called
    (a real run of streams-restore-blocked's first version: m1.1 held partitions 1 and 3 for 60 s so)."""
    from testbed.analysis.streams.measures import RESTORE_START_GRACE_MS, with_restorations_never_begun
    from testbed.analysis.intervals import OwnershipInterval

    rows = _rows(("m0", 100, "streams_restore", "start", "counts", "app-counts-changelog", 2, 0, 0, None, None),
                 ("m0", 200, "streams_restore", "end", "counts", "app-counts-changelog", 2, None, None, 0, None))
    frame = restorations(rows)

    def owned(member: str, partition: int, start: int, end: int) -> OwnershipInterval:
        return OwnershipInterval("orders", partition, member, start, end, "revoked")

    intervals = [owned("m0", 1, 0, 10_000), owned("m1", 1, 10_000, 80_000),  # m1 last: never began, never processed
                 owned("m0", 2, 0, 80_000),  # restored and processed
                 owned("m1", 3, 10_000, 10_000 + RESTORE_START_GRACE_MS - 1),  # too short to tell
                 owned("m0", 0, 0, 80_000)]  # no restoration start, but processed after its assignment
    out = with_restorations_never_begun(frame, rows, intervals, {0: [50_000], 2: [300, 60_000]}, teardown_after=90_000)
    never = out[out["ended"] == "not_started"]
    assert never[["member", "store", "changelog", "partition", "start_ms", "duration_ms", "records"]].values.tolist() == [
        ["m1", "counts", "app-counts-changelog", 1, 10_000, 70_000, 0]]
    assert never["unfinished"].tolist() == [True] and never["to_offset"].isna().all()
    assert CATALOGUE.measure(StreamsFound(2, out, 0))["streams_restorations_unfinished"].value == 1
    # an assignment in the teardown is not judged: the last owner before it is
    before = with_restorations_never_begun(frame, rows, intervals, {0: [50_000], 2: [300, 60_000]},
                                           teardown_after=10_000)
    assert before[before["ended"] == "not_started"][["member", "partition"]].values.tolist() == [["m0", 1]]


def test_an_instances_account_says_its_state_since_when_its_tasks_and_open_restorations(tmp_path: Path) -> None:
    """What a timed-out wait prints of an instance that never got to RUNNING."""
    history = tmp_path / "m2.jsonl"
    changelog = {"store": "counts", "topic": "app-counts-changelog"}
    events = [
        {"name": "streams_state", "ts_ms": 1_000, "from_state": "CREATED", "to_state": "REBALANCING"},
        {"name": "streams_tasks", "ts_ms": 2_000, "active": [{"task": "0_1", "partitions": [["orders", 1]]}],
         "standby": []},
        {"name": "streams_restore", "ts_ms": 3_000, "phase": "start", **changelog,
         "partition": 1, "start_offset": 10, "end_offset": 500},
        {"name": "streams_restore", "ts_ms": 3_500, "phase": "batch", **changelog,
         "partition": 1, "end_offset": 110, "records": 100},
        {"name": "streams_restore", "ts_ms": 3_600, "phase": "start", **changelog,
         "partition": 4, "start_offset": 0, "end_offset": 5},
        {"name": "streams_restore", "ts_ms": 3_700, "phase": "end", **changelog,
         "partition": 4, "records": 5},
    ]
    history.write_text("".join(json.dumps({"source": "m2", **e}) + "\n" for e in events))
    states = StreamsStates()
    assert states.account(history, now_ms=91_000) == (
        "REBALANCING for 90.0 s (before: None); active tasks by its thread metadata: 0_1; restoring: counts from "
        "app-counts-changelog-1 offsets 10 to 500, at 110 (100 records) for 88.0 s")
    with history.open("a") as f:
        f.write(json.dumps({"source": "m2", "name": "streams_restore", "ts_ms": 4_000, "phase": "end", **changelog,
                            "partition": 1, "records": 490}) + "\n")
    assert states.account(history, now_ms=91_000).endswith("active tasks by its thread metadata: 0_1; "
                                                           "no restoration open")
    assert StreamsStates().account(tmp_path / "none.jsonl", now_ms=1) == "no KafkaStreams state in its history yet"


def test_the_streams_groups_last_status_to_an_instance_is_read_from_its_log() -> None:
    """Kafka 4.4.0's client, as an instance on the streams protocol logged it while its broker held it back."""
    line = ("[2026-12-04 18:33:24,001] WARN [Consumer clientId=m1-StreamThread-1-consumer, groupId=g] Membership is in "
            "the following statuses: (5) Assignment delayed due to the configured initial rebalance delay., (3) "
            "Internal topics are missing: g-counts-changelog. "
            "(org.apache.kafka.clients.consumer.internals.StreamsGroupHeartbeatRequestManager)")
    assert last_group_status(["[2026-12-04 18:33:20,000] INFO other", line, "thread dump lines"]) == (
        "2026-12-04 18:33:24,001: (5) Assignment delayed due to the configured initial rebalance delay., (3) Internal "
        "topics are missing: g-counts-changelog.")
    assert last_group_status(["[2026-12-04 18:33:20,000] INFO other"]) is None
