"""The Java member host's pure parts: each member's consumer settings and its history from tagged lines."""

from __future__ import annotations

import json
from pathlib import Path

from testbed.history.events import Assigned, Committed, Processed, Started, Stopped
from testbed.history.writer import read_events
from testbed.members.client_settings import java_settings
from testbed.members.config import MemberConfig
from testbed.members.java.member import verifiable_consumer_args, verifiable_settings
from testbed.members.java.host import HostedJavaMember
from testbed.members.spec import MemberSpec


def config(tmp_path: Path, **spec: object) -> MemberConfig:
    return MemberConfig(member_id="m3", slot=3, group_id="g", topics=["events"], bootstrap_servers="127.0.0.1:9",
                        spec=MemberSpec(client="java", **spec), history_path=tmp_path / "m3.jsonl")


def test_classic_settings_match_what_verifiable_consumer_sets(tmp_path: Path) -> None:
    cfg = config(tmp_path, assignors=["cooperative-sticky"], session_timeout_ms=6000, static=True,
                 commit_mode="sync", max_poll_interval_ms=7000)
    props = java_settings(cfg)
    assert props == {
        "bootstrap.servers": "127.0.0.1:9", "group.id": "g", "client.id": "m3", "enable.auto.commit": "false",
        "auto.offset.reset": "earliest", "max.poll.records": "500",
        "partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        "session.timeout.ms": "6000", "max.poll.interval.ms": "7000", "group.instance.id": "g-slot-3"}
    # VerifiableConsumer: the same settings in its --consumer.config file, the flags it would put over them
    assert verifiable_settings(cfg) == props
    args = verifiable_consumer_args(cfg, tmp_path / "p.properties")
    assert args[args.index("--assignment-strategy") + 1] == props["partition.assignment.strategy"]
    assert args[args.index("--session-timeout") + 1] == "6000" and "--enable-autocommit" not in args
    assert "--group-instance-id" not in args  # VerifiableConsumer puts it only from the flag: the file carries it


def test_consumer_protocol_settings_leave_the_classic_ones_out(tmp_path: Path) -> None:
    props = java_settings(config(tmp_path, group_protocol="consumer", remote_assignor="uniform"))
    assert props["group.protocol"] == "consumer" and props["group.remote.assignor"] == "uniform"
    assert "partition.assignment.strategy" not in props and "session.timeout.ms" not in props
    assert props["enable.auto.commit"] == "true"


def test_a_members_tagged_lines_become_its_history(tmp_path: Path) -> None:
    member = HostedJavaMember(config(tmp_path, commit_mode="sync"))
    lines = [
        {"member": "m3", "name": "startup_complete", "timestamp": 1000},
        {"member": "m3", "name": "partitions_assigned", "timestamp": 1100,
         "partitions": [{"topic": "events", "partition": 1}]},
        {"member": "m3", "name": "records_consumed", "timestamp": 1200, "count": 2,
         "partitions": [{"topic": "events", "partition": 1, "count": 2, "minOffset": 4, "maxOffset": 5}]},
        {"member": "m3", "name": "offsets_committed", "timestamp": 1300, "success": True,
         "offsets": [{"topic": "events", "partition": 1, "offset": 6}]},
    ]
    assert not any(member.line(obj, json.dumps(obj), jvm_pid=42) for obj in lines)
    done = {"member": "m3", "name": "shutdown_complete", "timestamp": 1400}
    assert member.line(done, json.dumps(done), jvm_pid=42)
    member.end(None, jvm_pid=42)
    events = list(read_events(tmp_path / "m3.jsonl"))
    assert [type(e) for e in events] == [Started, Assigned, Processed, Committed, Stopped]
    assert events[0].ts_ms == 1000 and events[0].model_extra["jvm_pid"] == 42
    assert events[2].first_offset == 4 and events[2].last_offset == 5 and events[3].trigger == "batch"


def test_a_member_the_jvm_took_down_ends_in_error(tmp_path: Path) -> None:
    member = HostedJavaMember(config(tmp_path))
    member.end("the JVM exited with -9 before shutdown_complete", jvm_pid=42)
    member.end("a second end is ignored", jvm_pid=42)
    events = list(read_events(tmp_path / "m3.jsonl"))
    assert [e.name for e in events] == ["started", "error", "stopped"]
    assert events[1].fatal and events[2].reason == "error"


def test_client_errors_are_recorded_and_a_fatal_one_ends_the_member_in_error(tmp_path: Path) -> None:
    member = HostedJavaMember(config(tmp_path))
    lines = [{"member": "m3", "name": "startup_complete", "timestamp": 1000},
             {"member": "m3", "name": "client_error", "timestamp": 1100, "code": "TimeoutException",
              "message": "java.util.concurrent.TimeoutException", "fatal": False},
             {"member": "m3", "name": "client_error", "timestamp": 1200, "code": "KafkaException", "message": "boom",
              "fatal": True},
             {"member": "m3", "name": "shutdown_complete", "timestamp": 1300}]
    done = [member.line(obj, json.dumps(obj), jvm_pid=42) for obj in lines]
    assert done == [False, False, False, True] and member.failed
    member.end(None, jvm_pid=42)
    events = list(read_events(tmp_path / "m3.jsonl"))
    assert [(e.name, getattr(e, "fatal", None)) for e in events] == [
        ("started", None), ("error", False), ("error", True), ("stopped", None)]
    assert events[-1].reason == "error" and events[1].code == "TimeoutException"


def test_a_seed_assignor_in_java_gets_the_members_slot_in_both_runners(tmp_path: Path) -> None:
    cfg = config(tmp_path, assignors=["testbed.assignors.SlotPriorityFailoverAssignor"], commit_mode="sync")
    props = java_settings(cfg)
    assert props["partition.assignment.strategy"] == "testbed.assignors.SlotPriorityFailoverAssignor"
    assert props["testbed.member.slot"] == "3"
    args = verifiable_consumer_args(cfg, tmp_path / "p.properties")
    assert args[args.index("--assignment-strategy") + 1] == "testbed.assignors.SlotPriorityFailoverAssignor"
    assert "testbed.member.slot" not in java_settings(config(tmp_path, assignors=["range"]))
