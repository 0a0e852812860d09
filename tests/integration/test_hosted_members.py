"""Members hosted many to a process, on a real broker: each keeps its own identity, controls and history.

confluent-kafka, Java and kafka-python members. Per member (through the host's control channel): a stall that
only that member's poll loop feels, a clean stop, a bounce whose replacement joins the same host. Per process:
a SIGKILL that takes every member of the host, each recorded as killed. Histories and the admin view agree throughout, and no
host outlives the fleet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.fleet import BounceOptions
from testbed.history.events import Action, Committed, Lost, Revoked, Started, Stopped
from testbed.members.spec import MemberSpec

from fleet_support import (
    PARTITIONS,
    STABLE_TIMEOUT_S,
    fleet_on,
    harness_actions,
    member_events,
    started_pids,
    wait_owned_once,
)

pytestmark = pytest.mark.integration

PER_PROCESS = 3
MAX_POLL_MS = 6000  # a stalled member is evicted after this; the broker's minimum session timeout too
SPEC = MemberSpec(name="hosted", client="confluent-kafka", assignors=["cooperative-sticky"],
                  session_timeout_ms=MAX_POLL_MS, max_poll_interval_ms=MAX_POLL_MS)


def test_members_sharing_a_process_are_controlled_one_by_one_and_killed_together(kafka_cluster, tmp_path: Path) -> None:
    topic = kafka_cluster.create_topic(f"hosted-{tmp_path.name}", PARTITIONS)
    with fleet_on(kafka_cluster.bootstrap_servers, topic, tmp_path, "hosted") as fleet:
        fleet.start(SPEC, 6, PER_PROCESS)
        wait_owned_once(fleet)
        assert [h.name for h in fleet.hosts] == ["host-m0", "host-m3"]
        pids = started_pids(fleet.run_dir)
        assert pids["m0"] == pids["m1"] == pids["m2"] != pids["m3"] == pids["m4"] == pids["m5"]

        # A stall reaches m0's poll loop only: past max.poll.interval.ms it alone leaves the group, whose
        # other five members (m1, m2 in its process among them) take its partitions.
        fleet.stall_member("m0")
        view = fleet.wait_stable(members=5, timeout_s=MAX_POLL_MS / 1000 + STABLE_TIMEOUT_S)
        assert sorted(m.client_id for m in view.members) == ["m1", "m2", "m3", "m4", "m5"]
        fleet.unstall_member("m0")
        wait_owned_once(fleet)  # m0 polls again, hears it lost its partitions, and rejoins
        assert any(isinstance(e, (Revoked, Lost)) for e in member_events(fleet.run_dir, "m0"))
        for other in ("m1", "m2", "m3"):
            assert not any(isinstance(e, Stopped) for e in member_events(fleet.run_dir, other))

        # A clean stop of one member ends its thread, not its host.
        fleet.stop_member("m1")
        assert fleet.member("m1").exit_info["cause"] == "stopped"
        assert isinstance(member_events(fleet.run_dir, "m1")[-1], Stopped)
        assert fleet.hosts[0].alive() and fleet.member("m2").alive()
        wait_owned_once(fleet)

        # A bounce's replacement joins the same host.
        [replacement] = fleet.rolling_bounce(None, BounceOptions(count=1, stable_timeout_s=STABLE_TIMEOUT_S))
        assert replacement.member_id == "m0.1" and replacement.host is fleet.hosts[0]
        wait_owned_once(fleet)

        # SIGKILL is per process: every member of host-m3 is recorded killed, and the group heals without them.
        fleet.kill_member("m4")
        for member_id in ("m3", "m4", "m5"):
            assert fleet.member(member_id).exit_info["cause"] == "killed"
            assert not fleet.member(member_id).alive()
        assert not fleet.hosts[1].alive()
        wait_owned_once(fleet)
        assert sorted(p.member_id for p in fleet.live()) == ["m0.1", "m2"]

    actions = harness_actions(fleet.run_dir)
    killed = [a.target for a in actions if a.kind == Action.MEMBER_KILL]
    assert sorted(killed) == ["m3", "m4", "m5"]
    exits = {a.target: a.detail for a in actions if a.kind == Action.MEMBER_EXIT}
    assert {m: d["cause"] for m, d in exits.items()} == {
        "m0": "stopped", "m1": "stopped", "m0.1": "stopped", "m2": "stopped",
        "m3": "killed", "m4": "killed", "m5": "killed"}
    assert all(d["host"] in ("host-m0", "host-m3") for d in exits.values())
    # every member wrote its own history, with the host's pid
    for member_id in ("m0", "m1", "m2", "m0.1", "m3", "m4", "m5"):
        events = member_events(fleet.run_dir, member_id)
        assert isinstance(events[0], Started) and events[0].source == member_id


def test_java_members_share_one_jvm_each_with_its_own_history(kafka_cluster, tmp_path: Path) -> None:
    """KafkaConsumers in one JVM (testbed.members.java.host): per member stop and bounce, SIGKILL per JVM."""
    topic = kafka_cluster.create_topic(f"hosted-java-{tmp_path.name}", PARTITIONS)
    spec = MemberSpec(name="java-hosted", client="java", assignors=["cooperative-sticky"], commit_mode="sync",
                      session_timeout_ms=MAX_POLL_MS)  # the killed JVM's members are evicted in seconds, not 45
    with fleet_on(kafka_cluster.bootstrap_servers, topic, tmp_path, "hosted-java") as fleet:
        fleet.start(spec, 4, 2)
        wait_owned_once(fleet)
        pids = started_pids(fleet.run_dir)
        # the wrapper's pid, then its JVM's: one of each per host
        assert pids["m0"] == pids["m1"] != pids["m2"] == pids["m3"] and len(pids["m0"]) == 2

        [replacement] = fleet.rolling_bounce(None, BounceOptions(count=1, stable_timeout_s=STABLE_TIMEOUT_S))
        assert replacement.host is fleet.hosts[0] and fleet.member("m1").alive()
        assert isinstance(member_events(fleet.run_dir, "m0")[-1], Stopped)
        wait_owned_once(fleet)

        fleet.kill_member("m2")
        assert [fleet.member(m).exit_info["cause"] for m in ("m2", "m3")] == ["killed", "killed"]
        wait_owned_once(fleet)
        assert sorted(p.member_id for p in fleet.live()) == ["m0.1", "m1"]
    for member_id in ("m0", "m0.1", "m1"):  # stopped through the channel or at close: clean ends
        events = member_events(fleet.run_dir, member_id)
        assert isinstance(events[-1], Stopped) and events[-1].reason == "clean"


def test_kafka_python_members_share_a_process_each_with_its_own_history(kafka_cluster, tmp_path: Path) -> None:
    """kafka-python consumers in threads of one host (its heartbeat threads beside them): per member stop and
    bounce through the control channel, SIGKILL per host."""
    topic = kafka_cluster.create_topic(f"hosted-kp-{tmp_path.name}", PARTITIONS)
    spec = MemberSpec(name="kp-hosted", client="kafka-python", assignors=["roundrobin"],
                      session_timeout_ms=MAX_POLL_MS)  # the killed host's members are evicted in seconds
    with fleet_on(kafka_cluster.bootstrap_servers, topic, tmp_path, "hosted-kp") as fleet:
        fleet.start(spec, 4, 2)
        wait_owned_once(fleet)
        pids = started_pids(fleet.run_dir)
        assert pids["m0"] == pids["m1"] != pids["m2"] == pids["m3"]

        fleet.stop_member("m1")  # its thread ends, its host and m0 stay
        assert isinstance(member_events(fleet.run_dir, "m1")[-1], Stopped)
        assert fleet.hosts[0].alive() and fleet.member("m0").alive()
        wait_owned_once(fleet)

        [replacement] = fleet.rolling_bounce(None, BounceOptions(count=1, stable_timeout_s=STABLE_TIMEOUT_S))
        assert replacement.member_id == "m0.1" and replacement.host is fleet.hosts[0]
        wait_owned_once(fleet)

        fleet.kill_member("m3")
        assert [fleet.member(m).exit_info["cause"] for m in ("m2", "m3")] == ["killed", "killed"]
        assert not fleet.hosts[1].alive()
        wait_owned_once(fleet)
        assert [p.member_id for p in fleet.live()] == ["m0.1"]
    exits = {a.target: a.detail["cause"] for a in harness_actions(fleet.run_dir) if a.kind == Action.MEMBER_EXIT}
    assert exits == {"m0": "stopped", "m1": "stopped", "m0.1": "stopped", "m2": "killed", "m3": "killed"}
    for member_id in ("m0", "m1", "m0.1", "m2", "m3"):
        events = member_events(fleet.run_dir, member_id)
        assert isinstance(events[0], Started) and events[0].source == member_id


def test_aiokafka_members_share_one_event_loop_each_with_its_own_history(kafka_cluster, tmp_path: Path) -> None:
    """aiokafka consumers on one event loop of one host: a stall of one member's loop turn must not block the
    loop (the others heartbeat on it and stay), a bounce's replacement joins the same loop, SIGKILL takes all."""
    topic = kafka_cluster.create_topic(f"hosted-aio-{tmp_path.name}", PARTITIONS)
    spec = MemberSpec(name="aio-hosted", client="aiokafka", assignors=["roundrobin"],
                      session_timeout_ms=MAX_POLL_MS, max_poll_interval_ms=MAX_POLL_MS)
    with fleet_on(kafka_cluster.bootstrap_servers, topic, tmp_path, "hosted-aio") as fleet:
        fleet.start(spec, 3, 3)
        wait_owned_once(fleet)
        pids = started_pids(fleet.run_dir)
        assert pids["m0"] == pids["m1"] == pids["m2"]

        # Past max_poll_interval_ms the stalled m0 alone leaves; m1 and m2, on the same loop, heartbeat on.
        fleet.stall_member("m0")
        view = fleet.wait_stable(members=2, timeout_s=MAX_POLL_MS / 1000 + STABLE_TIMEOUT_S)
        assert sorted(m.client_id for m in view.members) == ["m1", "m2"]
        fleet.unstall_member("m0")
        wait_owned_once(fleet)  # m0 rejoins at its next getmany

        [replacement] = fleet.rolling_bounce(None, BounceOptions(count=1, stable_timeout_s=STABLE_TIMEOUT_S))
        assert replacement.member_id == "m0.1" and replacement.host is fleet.hosts[0]
        wait_owned_once(fleet)

        fleet.kill_member("m1")
        assert [fleet.member(m).exit_info["cause"] for m in ("m0.1", "m1", "m2")] == ["killed"] * 3
    exits = {a.target: a.detail["cause"] for a in harness_actions(fleet.run_dir) if a.kind == Action.MEMBER_EXIT}
    assert exits == {"m0": "stopped", "m0.1": "killed", "m1": "killed", "m2": "killed"}
    for member_id in ("m0", "m0.1", "m1", "m2"):
        events = member_events(fleet.run_dir, member_id)
        assert isinstance(events[0], Started) and events[0].source == member_id and events[0].client == "aiokafka"
    # auto-commit (the spec's default): aiokafka has no commit callback, its coordinator's commits are recorded
    commits = [e for e in member_events(fleet.run_dir, "m0") if isinstance(e, Committed)]
    assert commits and {c.trigger for c in commits} == {"auto"}
