"""The cooperative seed variants: the KIP-429 rule, the adapters' wire data, kafka-python's protocol choice, specs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kafka.coordinator.assignors.abstract import RebalanceProtocol
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.consumer import ConsumerCoordinator
from kafka.errors import KafkaConfigurationError
from kafka.protocol.consumer.group import JoinGroupResponse
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from pydantic import ValidationError

from testbed.analysis.group.config import protocol_of
from testbed.assignors import kafka_python as adapters
from testbed.assignors.cooperative import cooperative_round, current_owners
from testbed.assignors.lag_aware import PartitionOffsets
from testbed.assignors.model import GroupAssignment, MemberSubscription
from testbed.assignors.simulator_assignors import FakeCluster
from testbed.members.spec import SEED_ASSIGNOR_MODULE, SEED_ASSIGNORS, MemberSpec

COOPERATIVE_CLASSES = [
    adapters.CooperativeLagAwareAssignor,
    adapters.CooperativeGroupLagAwareAssignor,
    adapters.CooperativeFailoverAssignor,
    adapters.CooperativeSlotPriorityFailoverAssignor,
    adapters.CooperativeStickyStreamJoinAssignor,
]


def sub(member: str, owned=(), generation: int = -1, topics=("t",)) -> MemberSubscription:
    return MemberSubscription(member, frozenset(topics), owned_partitions=tuple(owned), generation=generation)


# ---- the rule (pure) -----------------------------------------------------------------------------------


def test_a_moving_partition_is_withheld_and_the_rest_assigned():
    target = GroupAssignment({"a": {"t": [0]}, "b": {"t": [1, 2]}}, {"a": b"x"})
    subs = [sub("a", [("t", 0), ("t", 1)], 4), sub("b", [], 4)]
    r = cooperative_round(target, subs)
    assert r.assignment.partitions == {"a": {"t": [0]}, "b": {"t": [2]}}  # 2 was nobody's: given at once
    assert r.withheld == {("t", 1)} and r.assignment.user_data == {"a": b"x"}


def test_claims_of_an_older_generation_do_not_count():
    # c was dropped from the group at generation 3 and rejoins claiming what b has held since generation 4
    owners = current_owners([sub("b", [("t", 0)], 4), sub("c", [("t", 0), ("t", 1)], 3)])
    assert owners.by_partition == {("t", 0): "b"} and not owners.disputed
    r = cooperative_round(GroupAssignment({"b": {}, "c": {"t": [0, 1]}}), [sub("b", [("t", 0)], 4), sub("c", [("t", 1)], 3)])
    assert r.assignment.partitions["c"] == {"t": [1]} and r.withheld == {("t", 0)}


def test_a_partition_two_members_claim_in_one_generation_goes_to_nobody_this_round():
    subs = [sub("a", [("t", 0)], 5), sub("b", [("t", 0)], 5)]
    r = cooperative_round(GroupAssignment({"a": {"t": [0]}, "b": {}}), subs)
    assert r.assignment.partitions == {"a": {}, "b": {}} and r.withheld == {("t", 0)}


# ---- the adapters ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("klass", COOPERATIVE_CLASSES, ids=lambda k: k.__name__)
def test_variants_are_named_after_their_eager_original_and_run_either_protocol(klass):
    eager = klass.__mro__[2]
    assert klass.name == eager.name + "-cooperative"
    assignor = klass(consumer_config={"group_id": "g", "testbed_member_slot": 1})
    assert assignor.supported_protocols() == [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]


def test_the_spec_table_matches_the_classes():
    for path, protocols in SEED_ASSIGNORS.items():
        klass = getattr(adapters, path.partition(":")[2])
        supported = {p.name.lower() for p in klass.supported_protocols(klass.__new__(klass))}
        assert supported == protocols, path
    declared = {n for n in dir(adapters) if n.endswith("Assignor") and not n.startswith("_")
                and issubclass(getattr(adapters, n), adapters._CoreAssignor)}
    assert {p.partition(":")[2] for p in SEED_ASSIGNORS} == declared  # a new adapter needs its row


def test_kafka_python_runs_eager_beside_an_eager_assignor_and_cooperative_alone():
    def protocol(*assignors):
        return ConsumerCoordinator._validate_rebalance_protocol(
            SimpleNamespace(_assignors={a.name: a for a in assignors}))

    eager, cooperative = adapters.LagAwareAssignor(), adapters.CooperativeLagAwareAssignor()
    assert protocol(eager, cooperative) == RebalanceProtocol.EAGER  # the double bounce's first step
    assert protocol(cooperative) == RebalanceProtocol.COOPERATIVE
    assert protocol(CooperativeStickyAssignor(), cooperative) == RebalanceProtocol.COOPERATIVE
    with pytest.raises(KafkaConfigurationError, match="Mixing EAGER and COOPERATIVE"):
        protocol(CooperativeStickyAssignor(), eager)  # kafka-python's own cooperative-sticky is cooperative only
    with pytest.raises(KafkaConfigurationError):
        protocol(CooperativeStickyAssignor(), RangePartitionAssignor())


def test_subscription_reports_owned_partitions_and_generation_unless_the_consumer_runs_eager():
    assignor = adapters.CooperativeFailoverAssignor(priority=3)
    assignor.on_assignment(ConsumerProtocolAssignment(2, [("t", [2, 0]), ("u", [1])], b""), 7)
    wire = ConsumerProtocolSubscription.decode(assignor.metadata({"t", "u"}).encode())
    assert wire.version == 2 and wire.generation_id == 7 and wire.user_data == b"\x00\x00\x00\x03"
    assert [(tp.topic, tp.partitions) for tp in wire.owned_partitions] == [("t", [0, 2]), ("u", [1])]
    consumer = offline_consumer(adapters.FailoverAssignor(priority=3), assignor)  # runs eager
    try:
        adapters.attach_to_consumer(consumer)  # an eager consumer revoked everything before joining
        wire = ConsumerProtocolSubscription.decode(assignor.metadata({"t"}).encode())
    finally:
        consumer.close()
    assert wire.owned_partitions == [] and wire.generation_id == -1


def offline_consumer(*assignors):
    from kafka import KafkaConsumer

    # api_version given: the consumer is built without contacting a broker (nothing listens on port 9)
    return KafkaConsumer(bootstrap_servers="127.0.0.1:9", group_id="g", api_version=(3, 0),
                         partition_assignment_strategy=list(assignors))


def test_a_member_whose_sync_failed_reports_the_generation_it_joined_and_keeps_its_claims():
    """The CI failure of seed-cooperative-upgrade: a member that joined generation 8 but whose SyncGroup was
    refused (another member joined first) still owns its partitions. Reporting its last assignment's generation
    (7) got its claims ignored next to a member that did get generation 8's assignment, and the leader handed
    its partitions to a third member while it still held them. It reports its join's generation, as Java."""
    from kafka.coordinator.base import Generation
    from kafka.errors import RebalanceInProgressError
    from kafka.protocol.consumer.group import SyncGroupResponse
    from kafka.structs import TopicPartition

    a = adapters.CooperativeFailoverAssignor(priority=1)
    consumer = offline_consumer(a)
    try:
        adapters.attach_to_consumer(consumer)
        coordinator = consumer._coordinator
        consumer.subscribe(["t"])
        coordinator._subscription.assign_from_subscribed([TopicPartition("t", 0), TopicPartition("t", 1)])
        a.on_assignment(ConsumerProtocolAssignment(2, [("t", [0, 1])], b""), 7)
        coordinator._generation = Generation(8, "a", a.name)  # the JoinGroup response of generation 8
        with pytest.raises(RebalanceInProgressError):  # kafka-python's own handling of the refused SyncGroup
            coordinator._process_sync_group_response(SyncGroupResponse(error_code=27, assignment=b""), 0)
        wire = ConsumerProtocolSubscription.decode(a.metadata({"t"}).encode())
        assert wire.generation_id == 8
        assert [(tp.topic, tp.partitions) for tp in wire.owned_partitions] == [("t", [0, 1])]

        b = adapters.CooperativeFailoverAssignor(priority=2)
        b.on_assignment(ConsumerProtocolAssignment(2, [("t", [2, 3])], b""), 8)  # its SyncGroup went through
        c = adapters.CooperativeFailoverAssignor(priority=3)  # joins now and ranks first: failover moves all to c
        members = wire_members({"a": a, "b": b, "c": c})
        assert current_owners([adapters.member_subscription(m) for m in members]).by_partition == {
            ("t", 0): "a", ("t", 1): "a", ("t", 2): "b", ("t", 3): "b"}
        first = c.assign(FakeCluster({"t": 4}), members)
        assert [first[m].partitions() for m in "abc"] == [[], [], []]  # everything moves: withheld this round

        coordinator._subscription.assign_from_subscribed([])  # a lost membership empties the subscription
        coordinator._generation = Generation(-1, "a", None)
        wire = ConsumerProtocolSubscription.decode(a.metadata({"t"}).encode())
        assert wire.owned_partitions == [] and wire.generation_id == -1
    finally:
        consumer.close()


def wire_members(assignors: dict[str, adapters.CooperativeVariant]):
    members = []
    for name, assignor in assignors.items():
        encoded = assignor.metadata({"t"}).encode()
        members.append(JoinGroupResponse.JoinGroupResponseMember(
            member_id=name, group_instance_id=None, metadata=ConsumerProtocolSubscription.decode(encoded)))
    return members


def test_the_leader_keeps_its_target_for_the_follow_up_round_and_recomputes_for_new_members():
    lags = {"now": [100, 0, 0, 0]}
    offsets = lambda tps: {tp: PartitionOffsets(0, lags["now"][tp[1]], 0) for tp in tps}  # noqa: E731
    group = {m: adapters.CooperativeLagAwareAssignor(offsets_source=offsets) for m in ("a", "b")}
    leader, cluster = group["a"], FakeCluster({"t": 4})
    for name, assignment in leader.assign(cluster, wire_members({"a": group["a"]})).items():
        group[name].on_assignment(assignment, 1)
    first = leader.assign(cluster, wire_members(group))  # b joins: by these lags b takes 1 and 2 from a
    assert [tp.partition for tp in first["a"].partitions()] == [0, 3] and first["b"].partitions() == []
    for name, assignment in first.items():
        group[name].on_assignment(assignment, 2)
    lags["now"] = [0, 0, 0, 100]  # lags move between the rounds under load: recomputed, a would get 2 and 3
    second = leader.assign(cluster, wire_members(group))
    assert [tp.partition for tp in second["b"].partitions()] == [1, 2]
    assert [tp.partition for tp in second["a"].partitions()] == [0, 3]
    for name, assignment in second.items():
        group[name].on_assignment(assignment, 3)
    group["c"] = adapters.CooperativeLagAwareAssignor(offsets_source=offsets)
    third = leader.assign(cluster, wire_members(group))  # a new member: a new target, on the lags of now
    # target a [3], b [0, 2], c [1]: a and b keep 3 and 2; 0 and 1 wait for a and b to revoke them
    assert [[tp.partition for tp in third[m].partitions()] for m in "abc"] == [[3], [2], []]


# ---- member specs ----------------------------------------------------------------------------------------


def path(cls: str) -> str:
    return f"{SEED_ASSIGNOR_MODULE}:{cls}"


def test_kafka_python_specs_take_the_variants_alone_and_after_their_eager_original():
    alone = MemberSpec(client="kafka-python", assignors=[path("CooperativeSlotPriorityFailoverAssignor")])
    assert alone.is_cooperative
    both = MemberSpec(client="kafka-python",
                      assignors=[path("SlotPriorityFailoverAssignor"), path("CooperativeSlotPriorityFailoverAssignor")])
    assert not both.is_cooperative  # kafka-python runs eager: the first bounce of the double bounce
    with_builtin = MemberSpec(client="kafka-python", assignors=["cooperative-sticky", path("CooperativeLagAwareAssignor")])
    assert with_builtin.is_cooperative
    # the started event says so, and the analysis takes it from there rather than from the assignors' names
    assert (alone.rebalance_protocol, both.rebalance_protocol, with_builtin.rebalance_protocol) == \
        ("cooperative", "eager", "cooperative")
    assert protocol_of({"assignors": alone.assignors, "rebalance_protocol": alone.rebalance_protocol}) == "cooperative"
    assert protocol_of({"assignors": alone.assignors}) == "eager"  # a history from before members said so
    unknown = MemberSpec(client="kafka-python", assignors=["my.module:MyAssignor"])
    assert unknown.rebalance_protocol is None
    assert MemberSpec(client="confluent-kafka", group_protocol="consumer").rebalance_protocol == "consumer"


def test_a_cooperative_only_assignor_beside_an_eager_seed_assignor_is_refused():
    with pytest.raises(ValidationError, match=r"assignors: kafka-python refuses eager and cooperative .*Cooperative"):
        MemberSpec(client="kafka-python", assignors=["cooperative-sticky", path("LagAwareAssignor")])


def test_clients_without_python_assignors_refuse_the_variants_naming_what_they_have():
    with pytest.raises(ValidationError) as info:
        MemberSpec(client="confluent-kafka", assignors=[path("CooperativeLagAwareAssignor")])
    msg = str(info.value)
    assert "assignors: unknown assignor" in msg and "only in kafka-python" in msg and "cooperative-sticky" in msg
    # Java has the variants as Java classes (tests/unit/test_java_assignors.py): the refusal names the class
    with pytest.raises(ValidationError, match=r"testbed\.assignors\.CooperativeLagAwareAssignor"):
        MemberSpec(client="java", assignors=[path("CooperativeLagAwareAssignor")])


def test_kafka_python_2_refuses_the_seed_assignors():
    with pytest.raises(ValidationError, match="cannot run the seed assignors"):
        MemberSpec(client="kafka-python", client_version="2.2.15", assignors=[path("CooperativeFailoverAssignor")])


@pytest.mark.parametrize(("listed", "reports_owned"), [(("eager", "cooperative"), False), (("cooperative",), True)])
def test_a_real_consumer_tells_its_variant_the_protocol_it_runs(listed, reports_owned):
    from kafka import KafkaConsumer

    from kafka.structs import TopicPartition

    made = {"eager": adapters.LagAwareAssignor(), "cooperative": adapters.CooperativeLagAwareAssignor()}
    consumer = offline_consumer(*(made[n] for n in listed))
    try:
        adapters.attach_to_consumer(consumer)
        consumer.subscribe(["t"])
        consumer._coordinator._subscription.assign_from_subscribed([TopicPartition("t", 0)])
        owned = ConsumerProtocolSubscription.decode(made["cooperative"].metadata({"t"}).encode()).owned_partitions
    finally:
        consumer.close()
    assert bool(owned) is reports_owned
