"""Shared test vectors: the seed assignors in Java (testbed/members/java/src/assignors) against the kafka-python adapters.

A kafka-python member and a Java member can only share a group on a seed assignor if whichever of them leads
computes the same assignment and both send the same user data. Each case below runs through both: in Python
the adapter's ``assign(cluster, members)`` (the cores behind it), ``on_assignment`` and ``metadata()``; in Java
``configure``, ``assign(Cluster, GroupSubscription)``, ``onAssignment`` and ``subscriptionUserData`` as a
KafkaConsumer calls them, driven by ``tests/unit/java/AssignorVectors.java`` (one JSON case a line, in a JVM
that lives for this module). Assignments, every member's assignment user data and the subscription user data
must be equal byte for byte, and a case one side refuses (bad user data, a bad setting) the other must refuse
too. Cases: the seeds' worked examples, the KIP-429 rounds of the cooperative variants (a second ``assign`` on the
same instance is the follow-up round), then hypothesis-generated ones.
"""

from __future__ import annotations

import base64
import json
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from testbed.assignors import kafka_python as adapters
from testbed.assignors.lag_aware import PartitionOffsets
from testbed.assignors.model import AssignorInputError, group_by_topic
from testbed.assignors.simulator_assignors import FakeCluster
from testbed.assignors.stream_join import encode_assignment_user_data, encode_subscription_user_data
from testbed.errors import ConfigError
from testbed.members.envs import EnvBuildError, java_assignor_classes, java_classpath, java_dir
from testbed.members.spec import DEFAULT_JAVA_VERSION, JAVA_SEED_ASSIGNORS

Case = dict[str, Any]
DRIVER = Path(__file__).with_name("java") / "AssignorVectors.java"
PY_ADAPTERS = {
    "lag-aware": adapters.LagAwareAssignor, "lag-aware-group": adapters.GroupLagAwareAssignor,
    "failover": adapters.FailoverAssignor, "sticky-stream-join": adapters.StickyStreamJoinAssignor,
    "lag-aware-cooperative": adapters.CooperativeLagAwareAssignor,
    "lag-aware-group-cooperative": adapters.CooperativeGroupLagAwareAssignor,
    "failover-cooperative": adapters.CooperativeFailoverAssignor,
    "sticky-stream-join-cooperative": adapters.CooperativeStickyStreamJoinAssignor,
}
SLOT_PRIORITY = {"failover": adapters.SlotPriorityFailoverAssignor,
                 "failover-cooperative": adapters.CooperativeSlotPriorityFailoverAssignor}


class JavaVectors:
    """A JVM running AssignorVectors: one case in, one result out."""

    def __init__(self, classpath: str) -> None:
        self.jvm = subprocess.Popen(["java", "-cp", classpath, "AssignorVectors"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)

    def run(self, case: Case) -> dict[str, Any]:
        assert self.jvm.stdin is not None and self.jvm.stdout is not None
        self.jvm.stdin.write(json.dumps(case) + "\n")
        self.jvm.stdin.flush()
        line = self.jvm.stdout.readline()
        assert line, f"the AssignorVectors JVM ended (exit {self.jvm.poll()})"
        return json.loads(line)

    def close(self) -> None:
        if self.jvm.stdin:
            self.jvm.stdin.close()
        self.jvm.wait(timeout=30)


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaVectors]:
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not on PATH: the Java seed assignors cannot be compiled (install a JDK 17)")
    if not (java_dir(DEFAULT_JAVA_VERSION) / ".ready").exists() and shutil.which("mvn") is None:
        pytest.skip("no cached kafka-clients classpath and no mvn to fetch it (apt-get install -y maven)")
    try:
        classpath = f"{java_assignor_classes()}:{java_classpath()}"
    except EnvBuildError as exc:
        pytest.skip(f"the kafka-clients classpath or the Java assignors could not be built: {exc}")
    out = tmp_path_factory.mktemp("assignor-vectors")
    subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", str(out), str(DRIVER)], check=True)
    vectors = JavaVectors(f"{out}:{classpath}")
    yield vectors
    vectors.close()


# ---- the Python side -----------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def python_adapter(case: Case, offsets_key: list[str]) -> Any:
    """The kafka-python adapter a case names; a lag-aware one reads the offsets under ``offsets_key[0]``."""
    config = case.get("config", {})
    name = case["assignor"]
    if name.startswith("lag-aware"):
        def source(parts: Any) -> dict[Any, PartitionOffsets]:
            table = {(t, p): PartitionOffsets(b, e, c) for t, p, b, e, c in case.get(offsets_key[0], [])}
            return {tp: table[tp] for tp in parts if tp in table}

        return PY_ADAPTERS[name](consumer_config={"auto_offset_reset": config.get("auto.offset.reset", "latest")},
                                 offsets_source=source)
    if name in SLOT_PRIORITY and case.get("slot_priority"):
        py_config = {k: v for k, v in config.items() if k != "testbed.member.slot"}
        if "testbed.member.slot" in config:
            slot = config["testbed.member.slot"]
            py_config["testbed_member_slot"] = int(slot) if slot.lstrip("-").isdigit() else slot
        return SLOT_PRIORITY[name](consumer_config=py_config)
    if name.startswith("failover"):
        return PY_ADAPTERS[name](consumer_config=config)
    return PY_ADAPTERS[name]()


def python_assign(assignor: Any, case: Case, members: list[dict[str, Any]]) -> dict[str, Any]:
    joined = [
        SimpleNamespace(member_id=m["id"], group_instance_id=None, metadata=ConsumerProtocolSubscription(
            version=2, topics=m["topics"], user_data=base64.b64decode(m.get("user_data", "")),
            owned_partitions=[ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps) for t, ps in
                              sorted(group_by_topic((t, p) for t, p in m.get("owned", [])).items())],
            generation_id=m.get("generation", -1)))
        for m in members
    ]
    result = assignor.assign(FakeCluster(case["partitions"]), joined)
    return {
        "assignment": {mid: [[tp.topic, tp.partition] for tp in a.partitions()] for mid, a in sorted(result.items())},
        "user_data": {mid: b64(a.user_data or b"") for mid, a in sorted(result.items())},
    }


def python_run(case: Case) -> dict[str, Any]:
    """What the kafka-python adapter answers for a case, in the driver's shape."""
    offsets_key = ["offsets"]
    try:
        assignor = python_adapter(case, offsets_key)
        out = {"protocol": assignor.name, "protocols": [p.name.lower() for p in assignor.supported_protocols()],
               **python_assign(assignor, case, case["members"])}
        if case.get("follow_up") is not None:
            offsets_key[0] = "follow_up_offsets"
            out["follow_up"] = python_assign(assignor, case, case["follow_up"])
        received = case.get("received")
        if received:
            grouped = sorted(group_by_topic((t, p) for t, p in received["partitions"]).items())
            assignor.on_assignment(ConsumerProtocolAssignment(0, grouped, base64.b64decode(received["user_data"])), 1)
        out["subscription_user_data"] = b64(assignor.metadata(set()).user_data or b"")
    except (AssignorInputError, ConfigError) as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return out


def assert_same(java: JavaVectors, case: Case) -> dict[str, Any]:
    expected, got = python_run(case), java.run(case)
    if "error" in expected or "error" in got:
        assert ("error" in expected, "error" in got) == (True, True), f"only one side refused {case}:\n" \
            f"python {expected}\njava   {got}"
        return expected
    assert got == expected, f"case {json.dumps(case)}"
    return expected


# ---- the seeds' worked examples -----------------------------------------------------------------


def member(mid: str, *topics: str, user_data: bytes = b"") -> dict[str, Any]:
    return {"id": mid, "topics": list(topics), "user_data": b64(user_data)}


def owned(result: dict[str, Any]) -> dict[str, list[list[Any]]]:
    return result["assignment"]


def test_kip169_worked_example_100k_60k_50k(java: JavaVectors) -> None:
    case = {"assignor": "lag-aware", "config": {"auto.offset.reset": "earliest"}, "partitions": {"t0": 3},
            "members": [member("C0", "t0"), member("C1", "t0")],
            "offsets": [["t0", 0, 0, 100_000, 0], ["t0", 1, 0, 60_000, 0], ["t0", 2, 0, 50_000, 0]]}
    result = assert_same(java, case)
    assert owned(result) == {"C0": [["t0", 0]], "C1": [["t0", 1], ["t0", 2]]}
    assert result["subscription_user_data"] == "" and set(result["user_data"].values()) == {""}


@pytest.mark.parametrize(("reset", "expected"), [
    ("earliest", {"C0": [["t0", 2]], "C1": [["t0", 0], ["t0", 1]]}),  # p2 the heaviest (1,000): alone
    ("latest", {"C0": [["t0", 0]], "C1": [["t0", 1], ["t0", 2]]}),  # p2 no lag: beside the lighter p1
])
def test_kip169_never_committed_partitions_follow_auto_offset_reset(java: JavaVectors, reset: str,
                                                                    expected: dict[str, Any]) -> None:
    # p2 never committed with 1,000 records in the log: the whole log under earliest, nothing under latest.
    case = {"assignor": "lag-aware", "config": {"auto.offset.reset": reset}, "partitions": {"t0": 3},
            "members": [member("C0", "t0"), member("C1", "t0")],
            "offsets": [["t0", 0, 0, 500, 0], ["t0", 1, 0, 300, 0], ["t0", 2, 0, 1_000, None]]}
    assert owned(assert_same(java, case)) == expected


def test_lag_aware_group_scope_spreads_one_partition_topics(java: JavaVectors) -> None:
    topics = ("a", "b", "c")
    case = {"assignor": "lag-aware-group", "partitions": dict.fromkeys(topics, 1),
            "members": [member(m, *topics) for m in ("C0", "C1", "C2")]}
    assert sorted(len(ps) for ps in owned(assert_same(java, case)).values()) == [1, 1, 1]


def test_seed_002_failover_everything_to_the_highest_priority(java: JavaVectors) -> None:
    def priority(p: int) -> bytes:
        return struct.pack(">i", p)

    members = [member("C1", "a", "b", user_data=priority(10)), member("C2", "a", "b", user_data=priority(5)),
               member("C3", "a", "b")]
    case = {"assignor": "failover", "config": {"assignment.consumer.priority": "10"},
            "partitions": {"a": 3, "b": 2}, "members": members}
    result = assert_same(java, case)
    assert owned(result) == {"C1": [["a", 0], ["a", 1], ["a", 2], ["b", 0], ["b", 1]], "C2": [], "C3": []}
    assert base64.b64decode(result["subscription_user_data"]) == priority(10)
    # C1 gone: everything to C2; unconfigured: the seed's Integer.MAX_VALUE
    case.update(members=members[1:], config={})
    result = assert_same(java, case)
    assert owned(result)["C2"] and base64.b64decode(result["subscription_user_data"]) == priority(2**31 - 1)


def test_slot_priority_failover_ranks_slot_0_highest(java: JavaVectors) -> None:
    case = {"assignor": "failover", "slot_priority": True, "config": {"testbed.member.slot": "2"},
            "partitions": {"events": 2}, "members": [member("m2", "events", user_data=struct.pack(">i", -2)),
                                                     member("m0.1", "events", user_data=struct.pack(">i", 0))]}
    result = assert_same(java, case)
    assert owned(result)["m0.1"] == [["events", 0], ["events", 1]]
    assert base64.b64decode(result["subscription_user_data"]) == struct.pack(">i", -2)


def test_seed_003_d_leaves_and_only_the_orphans_move(java: JavaVectors) -> None:
    # Before: A 0,1,2  B 3,4,5  C 6,7  D 8,9 (the seed's valid assignment, epoch 3); D leaves.
    topics = ("impressions", "clicks")
    before = {"A": [0, 1, 2], "B": [3, 4, 5], "C": [6, 7]}
    case = {"assignor": "sticky-stream-join", "partitions": dict.fromkeys(topics, 10),
            "members": [member(m, *topics, user_data=encode_subscription_user_data(3, ps)) for m, ps in before.items()],
            "received": {"partitions": [["clicks", 9], ["impressions", 9], ["impressions", 0]],
                         "user_data": b64(encode_assignment_user_data(4))}}
    result = assert_same(java, case)
    expected = {"A": [0, 1, 2, 9], "B": [3, 4, 5], "C": [6, 7, 8]}
    assert owned(result) == {m: [[t, p] for t in sorted(topics) for p in ps] for m, ps in expected.items()}
    assert set(result["user_data"].values()) == {b64(encode_assignment_user_data(4))}
    assert base64.b64decode(result["subscription_user_data"]) == encode_subscription_user_data(4, [0, 9])


def test_refused_user_data_is_refused_by_both(java: JavaVectors) -> None:
    for name, bad in (("failover", b"\x00\x01"), ("sticky-stream-join", b"\x00\x01\x00\x00\x00\x01\x00\x00\x00\x05")):
        assert "error" in assert_same(java, {"assignor": name, "partitions": {"t": 2},
                                             "members": [member("a", "t", user_data=bad), member("b", "t")]})


# ---- the cooperative variants (KIP-429: a move takes two rounds) --------------------------------


def test_cooperative_failover_hands_over_in_the_follow_up_round(java: JavaVectors) -> None:
    # m1 took everything while m0 was away (generation 5); m0 is back. Round one: m1 gives it up, m0 gets nothing
    # yet; the follow-up round (m1 owns nothing now, generation 6) gives it all to m0.
    def joined(mid: str, priority: int, owned: list[list[Any]], generation: int) -> dict[str, Any]:
        return {**member(mid, "t", user_data=struct.pack(">i", priority)), "owned": owned, "generation": generation}

    everything = [["t", 0], ["t", 1], ["t", 2]]
    case = {"assignor": "failover-cooperative", "partitions": {"t": 3},
            "members": [joined("m0", 0, [], -1), joined("m1", -1, everything, 5)],
            "follow_up": [joined("m0", 0, [], 6), joined("m1", -1, [], 6)]}
    result = assert_same(java, case)
    assert result["protocol"] == "failover-cooperative" and result["protocols"] == ["cooperative", "eager"]
    assert owned(result) == {"m0": [], "m1": []}
    assert owned(result["follow_up"]) == {"m0": everything, "m1": []}


def test_cooperative_claims_of_an_older_generation_do_not_count_and_two_claims_withhold(java: JavaVectors) -> None:
    case = {"assignor": "sticky-stream-join-cooperative", "partitions": {"t": 2}, "members": [
        {**member("a", "t"), "owned": [["t", 0], ["t", 1]], "generation": 3},  # stale: not an owner
        {**member("b", "t"), "owned": [["t", 0]], "generation": 4},
        {**member("c", "t"), "owned": [["t", 0]], "generation": 4},  # b and c both claim t-0: nobody gets it
    ]}
    assigned = [tp for tps in owned(assert_same(java, case)).values() for tp in tps]
    assert ["t", 0] not in assigned


def test_cooperative_lag_aware_keeps_its_target_when_lags_move_between_rounds(java: JavaVectors) -> None:
    members = [{**member("a", "t"), "owned": [["t", 0], ["t", 1]], "generation": 2}, member("b", "t")]
    case = {"assignor": "lag-aware-cooperative", "config": {"auto.offset.reset": "earliest"}, "partitions": {"t": 2},
            "members": members, "offsets": [["t", 0, 0, 10, 0], ["t", 1, 0, 900, 0]],
            "follow_up": [{**members[0], "owned": [["t", 1]], "generation": 3}, members[1]],
            "follow_up_offsets": [["t", 0, 0, 900, 0], ["t", 1, 0, 10, 0]]}
    result = assert_same(java, case)
    assert owned(result) == {"a": [["t", 1]], "b": []}  # the target: a t-1 (heaviest), b t-0, which a still holds
    assert owned(result["follow_up"]) == {"a": [["t", 1]], "b": [["t", 0]]}  # the same target, lags reversed


def test_every_java_seed_class_is_compiled() -> None:
    if shutil.which("javac") is None or not (java_dir(DEFAULT_JAVA_VERSION) / ".ready").exists():
        pytest.skip("javac or the cached kafka-clients classpath is missing")
    classes = java_assignor_classes()
    for name in JAVA_SEED_ASSIGNORS:
        assert (classes / (name.replace(".", "/") + ".class")).is_file(), name


def test_a_difference_is_caught(java: JavaVectors) -> None:
    """The comparison can fail: the same case with one member's user data changed on the Java side only."""
    case = {"assignor": "failover", "partitions": {"t": 2},
            "members": [member("a", "t", user_data=struct.pack(">i", 1)), member("b", "t", user_data=struct.pack(">i", 2))]}
    tampered = json.loads(json.dumps(case))
    tampered["members"][0]["user_data"] = b64(struct.pack(">i", 3))
    assert java.run(tampered)["assignment"] != python_run(case)["assignment"]


# ---- generated cases ----------------------------------------------------------------------------

TOPICS = ("t0", "t1", "t2")
member_ids = st.lists(st.text(alphabet="abcAB019-.", min_size=1, max_size=5), min_size=1, max_size=6, unique=True)
# Kafka has no topic of 0 partitions (Java's Cluster cannot even hold one); a topic without metadata is one a member
# subscribes to that is not in this table.
partition_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 7), min_size=1)
subscriptions = st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True)
int32 = st.integers(-(2**31), 2**31 - 1)


@st.composite
def lag_aware_cases(draw: st.DrawFn) -> Case:
    counts = draw(partition_counts)
    offsets = []
    for topic, count in counts.items():
        for p in range(count):
            if draw(st.booleans()):
                begin = draw(st.integers(0, 50))
                end = begin + draw(st.integers(0, 1_000))
                committed = draw(st.none() | st.integers(0, end + 10))
                offsets.append([topic, p, begin, end, committed])
    return {"assignor": draw(st.sampled_from(["lag-aware", "lag-aware-group"])), "partitions": counts,
            "config": {"auto.offset.reset": draw(st.sampled_from(["earliest", "latest", "Smallest", "largest", "none"]))},
            "offsets": offsets, "members": [member(m, *draw(subscriptions)) for m in draw(member_ids)]}


@st.composite
def failover_cases(draw: st.DrawFn) -> Case:
    user_data = st.just(b"") | int32.map(lambda p: struct.pack(">i", p)) | st.integers(-3, 3).map(
        lambda p: struct.pack(">i", p)) | st.binary(max_size=6)
    slot_priority = draw(st.booleans())
    config = draw(st.fixed_dictionaries({}, optional={
        "assignment.consumer.priority": st.sampled_from(["10", " -3 ", "x", "2147483647", "2147483648"]) | int32.map(str),
        **({"testbed.member.slot": st.sampled_from(["0", "1", "7", "-1", "x"])} if slot_priority else {}),
    }))
    if slot_priority and "assignment.consumer.priority" not in config:
        config.setdefault("testbed.member.slot", "0")
    return {"assignor": "failover", "slot_priority": slot_priority, "config": config, "partitions": draw(partition_counts),
            "members": [member(m, *draw(subscriptions), user_data=draw(user_data)) for m in draw(member_ids)]}


@st.composite
def stream_join_cases(draw: st.DrawFn) -> Case:
    claim = st.builds(encode_subscription_user_data, st.integers(0, 4), st.lists(st.integers(-1, 9), max_size=6))
    user_data = st.just(b"") | claim | claim.map(lambda d: d + b"\x07") | st.binary(max_size=12)
    received = st.none() | st.fixed_dictionaries({
        "partitions": st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 9)).map(list), max_size=6),
        "user_data": (st.integers(0, 5).map(encode_assignment_user_data) | st.binary(max_size=7)).map(b64),
    })
    return {"assignor": "sticky-stream-join", "partitions": draw(partition_counts), "received": draw(received),
            "members": [member(m, *draw(subscriptions), user_data=draw(user_data)) for m in draw(member_ids)]}


@st.composite
def cooperative_cases(draw: st.DrawFn) -> Case:
    """An eager case made cooperative: members report owned partitions and a generation, and a follow-up round
    comes with the same members (the round-one target reused) or one fewer (computed again)."""
    case = draw(st.one_of(lag_aware_cases(), failover_cases(), stream_join_cases()))
    claims = st.lists(st.tuples(st.sampled_from(TOPICS), st.integers(0, 7)).map(list), max_size=5)
    generation = st.sampled_from([-1, 3, 4])

    def rejoined(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**m, "owned": draw(claims), "generation": draw(generation)} for m in members]

    case["assignor"] += "-cooperative"
    case["members"] = rejoined(case["members"])
    if draw(st.booleans()):
        follow_up = case["members"][: -1 if draw(st.booleans()) and len(case["members"]) > 1 else None]
        case["follow_up"] = rejoined(follow_up)
        if "offsets" in case:
            case["follow_up_offsets"] = [[t, p, b, e + draw(st.integers(0, 500)), c] for t, p, b, e, c in case["offsets"]]
    return case


GENERATED = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@GENERATED
@given(case=lag_aware_cases())
def test_lag_aware_java_equals_python(java: JavaVectors, case: Case) -> None:
    assert_same(java, case)


@GENERATED
@given(case=failover_cases())
def test_failover_java_equals_python(java: JavaVectors, case: Case) -> None:
    assert_same(java, case)


@GENERATED
@given(case=stream_join_cases())
def test_stream_join_java_equals_python(java: JavaVectors, case: Case) -> None:
    assert_same(java, case)


@GENERATED
@given(case=cooperative_cases())
def test_cooperative_variants_java_equal_python(java: JavaVectors, case: Case) -> None:
    assert_same(java, case)
