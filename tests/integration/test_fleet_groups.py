"""Fleets on real brokers: every supported (client, assignor or protocol) pair forms a correct group.

For each pair, 3 members (Java: 2) on a 12-partition topic reach a stable group in which every partition has
exactly one owner, by the admin API and by the members' replayed histories alike; then a rolling
bounce of every member ends in the same state. The pairs of one client run as concurrent groups
(one thread each) to keep the wall time of the whole matrix near that of its slowest group.
Also here: mixed fleets (two confluent-kafka versions; confluent-kafka with kafka-python) and the
KIP-429 double bounce of Java members.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.members.spec import MemberSpec

from fleet_support import (
    BOUNCE,
    MEMBERS,
    PARTITIONS,
    ConcurrentGroups,
    fleet_on,
    wait_owned_once,
)

pytestmark = pytest.mark.integration

# label -> spec; every supported pair of docs/clients.md (kafka-python also with one seed assignor).
PAIRS: dict[str, dict[str, MemberSpec]] = {
    "confluent-kafka": {
        "range": MemberSpec(client="confluent-kafka", assignors=["range"]),
        "roundrobin": MemberSpec(client="confluent-kafka", assignors=["roundrobin"]),
        "cooperative-sticky": MemberSpec(client="confluent-kafka", assignors=["cooperative-sticky"],
                                         commit_mode="on_revoke"),
        "consumer-uniform": MemberSpec(client="confluent-kafka", group_protocol="consumer",
                                       remote_assignor="uniform"),
        "consumer-range": MemberSpec(client="confluent-kafka", group_protocol="consumer", remote_assignor="range"),
    },
    "kafka-python": {
        "range": MemberSpec(client="kafka-python", assignors=["range"]),
        "roundrobin": MemberSpec(client="kafka-python", assignors=["roundrobin"]),
        "sticky": MemberSpec(client="kafka-python", assignors=["sticky"]),
        "cooperative-sticky": MemberSpec(client="kafka-python", assignors=["cooperative-sticky"],
                                         commit_mode="on_revoke"),
        "sticky-stream-join": MemberSpec(client="kafka-python",
                                         assignors=["testbed.assignors.kafka_python:StickyStreamJoinAssignor"]),
    },
    "java": {
        "range": MemberSpec(client="java", assignors=["range"]),
        "roundrobin": MemberSpec(client="java", assignors=["roundrobin"]),
        "sticky": MemberSpec(client="java", assignors=["sticky"]),
        "cooperative-sticky": MemberSpec(client="java", assignors=["cooperative-sticky"], commit_mode="sync"),
        "consumer": MemberSpec(client="java", group_protocol="consumer", remote_assignor="uniform"),
    },
}
# JVMs are the heavy ones on 2 cores: fewer Java groups at once.
CONCURRENT_GROUPS = {"confluent-kafka": 5, "kafka-python": 5, "java": 3}


def form_and_bounce(bootstrap: str, topic: str, root: Path, label: str, specs: list[MemberSpec]) -> None:
    """Start one member per spec, check the group, bounce every member into its own spec, check again."""
    with fleet_on(bootstrap, topic, root, label) as fleet:
        for member_spec in specs:
            fleet.start(member_spec, 1)
        wait_owned_once(fleet)
        restarted = fleet.rolling_bounce(options=BOUNCE)
        assert [p.member_id for p in restarted] == [f"m{i}.1" for i in range(len(specs))]
        wait_owned_once(fleet)


# JVMs are the slow part of CI on 2 cores: CI bounces the Java group of the consumer protocol here; eager range and
# cooperative-sticky Java groups are bounced in CI by scenarios/kip429-double-bounce.yaml (range, then both, then
# cooperative-sticky), and every Java assignor runs here with -m full_matrix. Two Java members a group: a bounce
# under the consumer protocol waits on its heartbeats (5 s) for each member, and two show the mechanism as well.
JAVA_LATER = ("range", "roundrobin", "sticky", "cooperative-sticky")
GROUP_SIZE = {"java": 2}


def _pair_sets() -> list:
    params = []
    for client, pairs in PAIRS.items():
        later = JAVA_LATER if client == "java" else ()
        params.append(pytest.param(client, {k: v for k, v in pairs.items() if k not in later}, id=client))
        if later:
            params.append(pytest.param(client, {k: pairs[k] for k in later}, id=f"{client}-more",
                                       marks=pytest.mark.full_matrix))
    return params


@pytest.mark.parametrize(("client", "pairs"), _pair_sets())
def test_every_assignor_forms_a_group_and_survives_a_rolling_bounce(client: str, pairs: dict[str, MemberSpec],
                                                                     kafka_cluster, topic_factory,
                                                                     tmp_path: Path) -> None:
    groups = ConcurrentGroups(max_workers=CONCURRENT_GROUPS[client])
    scenarios = {}
    for name, member_spec in pairs.items():
        topic = topic_factory(partitions=PARTITIONS)
        scenarios[f"{client}-{name}"] = (
            lambda topic=topic, label=f"{client}-{name}", s=member_spec:
            form_and_bounce(kafka_cluster.bootstrap_servers, topic, tmp_path, label,
                            [s] * GROUP_SIZE.get(client, MEMBERS))
        )
    groups.run(scenarios)
    groups.assert_all_passed()


MIXED: dict[str, list[MemberSpec]] = {
    # two librdkafka generations in one cooperative group: 2.3.0 (own venv) beside the project's 2.16.x
    "confluent-2.3.0+current": [
        MemberSpec(client="confluent-kafka", client_version="2.3.0", assignors=["cooperative-sticky"]),
        MemberSpec(client="confluent-kafka", assignors=["cooperative-sticky"]),
    ] * 2,
    "confluent+kafka-python-range": [
        MemberSpec(client="confluent-kafka", assignors=["range"]),
        MemberSpec(client="kafka-python", assignors=["range"]),
    ] * 2,
    "confluent+kafka-python-cooperative": [
        MemberSpec(client="confluent-kafka", assignors=["cooperative-sticky"]),
        MemberSpec(client="kafka-python", assignors=["cooperative-sticky"]),
    ] * 2,
}


def test_mixed_clients_and_versions_form_one_group(kafka_cluster, topic_factory, tmp_path: Path) -> None:
    groups = ConcurrentGroups(max_workers=len(MIXED))
    scenarios = {}
    for label, specs in MIXED.items():
        topic = topic_factory(partitions=PARTITIONS)
        scenarios[label] = (lambda topic=topic, label=label, specs=specs:
                            form_and_bounce(kafka_cluster.bootstrap_servers, topic, tmp_path, label, specs))
    groups.run(scenarios)
    groups.assert_all_passed()


@pytest.mark.full_matrix  # CI runs the same double bounce of Java members as scenarios/kip429-double-bounce.yaml
def test_java_kip429_double_bounce_from_range_to_cooperative(kafka_cluster, topic_factory, tmp_path: Path) -> None:
    """range -> [cooperative-sticky, range] -> cooperative-sticky, stable after each bounce."""
    steps = [
        MemberSpec(name="both", client="java", assignors=["cooperative-sticky", "range"], commit_mode="sync"),
        MemberSpec(name="cooperative", client="java", assignors=["cooperative-sticky"], commit_mode="sync"),
    ]
    topic = topic_factory(partitions=PARTITIONS)
    with fleet_on(kafka_cluster.bootstrap_servers, topic, tmp_path, "java-kip429") as fleet:
        fleet.start(MemberSpec(name="range", client="java", assignors=["range"], commit_mode="sync"), MEMBERS)
        wait_owned_once(fleet)
        assert fleet.describe().assignor == "range"
        for step in steps:
            fleet.rolling_bounce(step, BOUNCE)
            wait_owned_once(fleet)
            assert {p.config.spec.name for p in fleet.live()} == {step.name}
        # Only once no member offers range any more does the group switch protocol.
        assert fleet.describe().assignor == "cooperative-sticky"
