"""Share-group (KIP-932) members and scenarios: what the spec and the scenario file refuse before anything starts,
how a member picks each record's acknowledgement, how answers are matched with what was handed over, and when the
harness counts a record settled. Pure logic: no broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from testbed.fleet.share import ShareActivity, ShareSettlement
from testbed.members.config import MemberConfig
from testbed.members.launch import host_command, runner_command
from testbed.members.share_acks import PendingAcks
from testbed.members.spec import MemberSpec
from testbed.scenario.loader import expand
from testbed.scenario.model import Scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def refused(**fields: object) -> str:
    with pytest.raises(ValidationError) as info:
        MemberSpec(group_protocol="share", **fields)
    return str(info.value)


def test_kafka_python_has_no_share_consumer() -> None:
    message = refused(client="kafka-python")
    assert "group_protocol" in message and "kafka-python has no share consumer" in message
    assert "confluent-kafka >= 2.15" in message and "java >= 4.1" in message


@pytest.mark.parametrize("client, version, needed", [("confluent-kafka", "2.14.0", "2.15"), ("java", "4.0.0", "4.1"),
                                                      ("java", "3.9.1", "4.1")])
def test_client_versions_without_a_share_consumer_are_refused(client: str, version: str, needed: str) -> None:
    message = refused(client=client, client_version=version)
    assert "client_version" in message and f"{client} {version}" in message and f">= {needed}" in message


@pytest.mark.parametrize("field, value", [("assignors", ["range"]), ("static", True), ("session_timeout_ms", 6000),
                                          ("commit_mode", "sync"), ("auto_offset_reset", "latest")])
def test_consumer_group_settings_are_refused_for_share_members(field: str, value: object) -> None:
    message = refused(client="confluent-kafka", **{field: value})
    assert f"{field}: not for group_protocol 'share'" in message and "record_lock_duration_ms" in message


def test_release_and_reject_need_explicit_acknowledgement() -> None:
    assert "need share_acknowledgement 'explicit'" in refused(client="java", release_every=3)
    with pytest.raises(ValidationError, match="only for group_protocol 'share'"):
        MemberSpec(client="confluent-kafka", share_acknowledgement="explicit")


def test_share_members_accepted_with_processing_time_for_both_clients() -> None:
    for client in ("confluent-kafka", "java"):
        spec = MemberSpec(client=client, group_protocol="share", share_acknowledgement="explicit", release_every=4,
                          reject_every=6, processing_ms_per_record=5)
        assert spec.is_share and spec.rebalance_protocol is None


def test_every_nth_record_released_or_rejected_reject_first() -> None:
    spec = MemberSpec(client="confluent-kafka", group_protocol="share", share_acknowledgement="explicit",
                      release_every=2, reject_every=3)
    assert [spec.share_ack_type(n) for n in range(1, 8)] == [
        "accept", "release", "reject", "release", "accept", "reject", "accept"]


def test_share_members_run_their_own_runners(tmp_path: Path) -> None:
    def command(client: str) -> list[str]:
        spec = MemberSpec(client=client, group_protocol="share")
        return runner_command(MemberConfig(member_id="m0", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1",
                                           spec=spec, history_path=tmp_path / "m0.jsonl"), "cfg.json")
    assert "testbed.members.confluent_kafka.share" in command("confluent-kafka")
    assert "testbed.members.java.share" in command("java")
    with pytest.raises(ValueError, match="share members: confluent-kafka only"):
        host_command(MemberSpec(client="java", group_protocol="share"))


def test_answers_are_matched_with_the_type_and_time_handed_over() -> None:
    pending = PendingAcks()
    pending.hand_over("t", 0, 5, "accept", 100)
    pending.hand_over("t", 0, 6, "release", 110)
    pending.hand_over("t", 0, 7, "accept", 90)
    pending.hand_over("t", 1, 5, "reject", 120)
    answered = pending.answered("t", 0, {5, 6, 7, 8})
    assert [(a.type, a.offsets, a.sent_ms) for a in answered] == [("accept", [5, 7, 8], 90), ("release", [6], 110)]
    assert len(pending) == 1  # partition 1's, not answered yet
    # answered again (never handed over since): the client's own implicit accept, its hand-over time unknown
    assert [(a.type, a.offsets, a.sent_ms) for a in pending.answered("t", 0, {5})] == [("accept", [5], None)]


def _write(path: Path, *events: dict) -> None:
    with path.open("a") as f:
        for event in events:
            f.write(json.dumps(event) + "\n")


def test_settlement_counts_accepts_rejects_and_archives_at_the_limit(tmp_path: Path) -> None:
    history = tmp_path / "m0.jsonl"
    acquired = lambda ts, *pairs: {"name": "share_acquired", "ts_ms": ts, "topic": "t", "partition": 0,
                                   "acquired": [list(p) for p in pairs]}
    acked = lambda ts, type_, offsets, error=None: {"name": "share_acknowledged", "ts_ms": ts, "topic": "t",
                                                    "partition": 0, "acknowledged": offsets, "type": type_,
                                                    "error": error}
    _write(history, acquired(1000, (0, 1), (1, 1), (2, 1), (3, 3), (4, 3)), acked(1010, "accept", [0]),
           acked(1010, "reject", [1]), acked(1010, "accept", [2], "INVALID_RECORD_STATE"), acked(1010, "release", [3]))
    settlement = ShareSettlement(delivery_count_limit=3, lock_ms=2000)
    settlement.read([history])
    # 2: its accept was refused; 4: at the limit but its lock has not expired yet; 5: never delivered
    assert settlement.unsettled({("t", 0): 6}, now_ms=1500) == {"t-0": 3}
    assert settlement.unsettled({("t", 0): 6}, now_ms=3100) == {"t-0": 2}  # 4's lock expired: archived
    _write(history, acquired(3200, (2, 2), (5, 1)), acked(3300, "accept", [2, 5]))
    settlement.read([history])
    assert settlement.unsettled({("t", 0): 6}, now_ms=3400) == {}


def test_activity_is_the_last_acquisition_and_waits_for_a_torn_line(tmp_path: Path) -> None:
    history = tmp_path / "m0.jsonl"
    activity = ShareActivity()
    assert activity.last_acquired_ms(history) is None
    _write(history, {"name": "share_acquired", "ts_ms": 50, "topic": "t", "partition": 0, "acquired": [[0, 1]]})
    with history.open("a") as f:
        f.write('{"name": "share_acquired", "ts_ms": 90')
    assert activity.last_acquired_ms(history) == 50
    with history.open("a") as f:
        f.write(', "topic": "t", "partition": 0, "acquired": [[1, 1]]}\n')
    assert activity.last_acquired_ms(history) == 90


SHARE_FILE = """\
name: s
cluster: {kafka_version: %s}
topics: [{name: events, partitions: 2}]
share: {record_lock_duration_ms: 2000}
members:
  sc: {client: confluent-kafka, group_protocol: share}
  sj: {client: java, group_protocol: share}
  classic: {client: confluent-kafka, assignors: [range]}
fleet:
  - {spec: sc, count: 2}
"""


def scenario(text: str, **extra: object) -> Scenario:
    data = yaml.safe_load(text)
    data.update(extra)
    return Scenario.model_validate(data)


def test_brokers_before_4_2_are_refused_for_share_members() -> None:
    with pytest.raises(ValidationError, match=r"fleet.0.spec: .*Kafka 4.1.1; share groups are served from 4.2"):
        scenario(SHARE_FILE % "4.1.1")
    assert scenario(SHARE_FILE % "4.2.0").is_share


def test_one_group_is_a_share_group_or_a_consumer_group() -> None:
    with pytest.raises(ValidationError, match=r"steps.0.scale_out.spec: this scenario's group is a share group"):
        scenario(SHARE_FILE % "4.3.1", steps=[{"scale_out": {"spec": "classic", "count": 1}}])


def test_share_settings_without_share_members_are_refused() -> None:
    with pytest.raises(ValidationError, match="share: share-group settings, but no member spec"):
        scenario(SHARE_FILE % "4.3.1", fleet=[{"spec": "classic", "count": 1}])


def test_java_share_members_run_one_per_process() -> None:
    with pytest.raises(ValidationError, match="fleet.0.spec: member spec 'sj' is a Java share member"):
        scenario(SHARE_FILE % "4.3.1", fleet=[{"spec": "sj", "count": 4, "members_per_process": 2}])


def test_share_group_settings_become_group_configs_with_earliest_by_default() -> None:
    share = scenario(SHARE_FILE % "4.3.1").share_group
    assert share.group_configs() == {"share.record.lock.duration.ms": "2000", "share.delivery.count.limit": "5",
                                     "share.auto.offset.reset": "earliest"}
    with pytest.raises(ValidationError, match="heartbeat_interval_ms: 6000 must be below the session timeout"):
        scenario(SHARE_FILE % "4.3.1", share={"session_timeout_ms": 6000, "heartbeat_interval_ms": 6000})


def test_shipped_share_scenarios_are_short_and_expect_no_loss() -> None:
    files = sorted(SCENARIOS.glob("share-*.yaml"))
    assert len(files) >= 5
    for path in files:
        run = expand(path)[0]
        assert run.scenario.is_share, path.name
        assert "share_records_lost == 0" in [e.text for e in run.scenario.expect], path.name
        assert run.scenario.load is not None and run.scenario.load.rate <= 300, path.name


def test_a_fault_can_wait_for_a_share_member_holding_records_or_acks_in_flight() -> None:
    steps = [{"kill": {"member": "m0", "when": "acks_in_flight"}}, {"pause": {"member": "m1", "when": "holding_records"}}]
    s = scenario(SHARE_FILE % "4.3.1", steps=steps)
    assert [(st.kind, st.when) for st in s.steps] == [("kill", "acks_in_flight"), ("pause", "holding_records")]
    with pytest.raises(ValidationError, match="steps.0.kill.when: 'm0' runs spec 'classic', not a share member"):
        scenario(SHARE_FILE % "4.3.1", fleet=[{"spec": "classic", "count": 1}], share=None,
                 steps=[{"kill": {"member": "m0", "when": "holding_records"}}])
    with pytest.raises(ValidationError, match="when"):
        scenario(SHARE_FILE % "4.3.1", steps=[{"kill": {"member": "m0", "when": "sometime"}}])


def test_broker_log_levels_are_typed_and_only_for_brokers_the_testbed_starts() -> None:
    s = scenario(SHARE_FILE % "4.3.1")
    assert s.cluster.broker_log_levels == {}
    with pytest.raises(ValidationError, match="broker_log_levels"):
        scenario("name: s\ncluster: {bootstrap_servers: '127.0.0.1:9092', broker_log_levels: {kafka: DEBUG}}\n"
                 "topics: [{name: e, partitions: 1}]\nmembers: {a: {client: confluent-kafka}}\n"
                 "fleet: [{spec: a, count: 1}]\n")
    with pytest.raises(ValidationError, match="broker_log_levels"):
        scenario(SHARE_FILE.replace("cluster: {kafka_version: %s}", "cluster: {broker_log_levels: {kafka: LOUD}}"))


def test_group_configs_are_read_back_once_the_brokers_describe_them(monkeypatch) -> None:
    """The controller answers a group config change once committed; a broker may describe the old values a
    moment longer (seen in a share-kill run: the defaults read back). The read-back waits for the values set."""
    from testbed.admin.kafka_admin import KafkaAdmin

    class Future:
        def result(self, timeout=None):
            return None

    class Client:
        def incremental_alter_configs(self, resources):
            return {resources[0]: Future()}

    described = [{"share.record.lock.duration.ms": "30000"}, {"share.record.lock.duration.ms": "30000"},
                 {"share.record.lock.duration.ms": "3000"}]
    admin = KafkaAdmin("127.0.0.1:1")
    monkeypatch.setattr(KafkaAdmin, "client", property(lambda self: Client()))
    monkeypatch.setattr(KafkaAdmin, "group_configs", lambda self, g, t=30.0: described.pop(0) if len(described) > 1
                        else described[0])
    assert admin.set_group_configs("g", {"share.record.lock.duration.ms": "3000"}, timeout_s=5) == {
        "share.record.lock.duration.ms": "3000"}
    described[:] = [{"share.record.lock.duration.ms": "30000"}]  # never: what the brokers said last, to compare
    assert admin.set_group_configs("g", {"share.record.lock.duration.ms": "3000"}, timeout_s=0.5) == {
        "share.record.lock.duration.ms": "30000"}
