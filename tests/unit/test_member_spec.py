"""Every refusal of MemberSpec, and the acceptances next to them, without network."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from testbed.members.config import MemberConfig
from testbed.members.spec import MemberSpec


def refused(**fields: object) -> str:
    with pytest.raises(ValidationError) as info:
        MemberSpec(**fields)
    return str(info.value)


def test_confluent_refuses_eager_sticky_and_lists_what_it_has() -> None:
    msg = refused(client="confluent-kafka", assignors=["sticky"])
    assert "assignors" in msg and "cooperative-sticky" in msg and "roundrobin" in msg


def test_kafka_python_refuses_consumer_protocol() -> None:
    msg = refused(client="kafka-python", group_protocol="consumer")
    assert "group_protocol" in msg and "classic" in msg


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_python_clients_refuse_eager_and_cooperative_together(client: str) -> None:
    msg = refused(client=client, assignors=["range", "cooperative-sticky"])
    assert "eager and cooperative" in msg and "java" in msg


def test_java_accepts_eager_and_cooperative_together_for_the_double_bounce() -> None:
    spec = MemberSpec(client="java", assignors=["range", "cooperative-sticky"])
    assert spec.assignors == ["range", "cooperative-sticky"]


def test_confluent_consumer_protocol_refuses_session_timeout() -> None:
    msg = refused(client="confluent-kafka", group_protocol="consumer", session_timeout_ms=10_000)
    assert "session_timeout_ms" in msg


def test_confluent_consumer_protocol_refuses_assignors() -> None:
    msg = refused(client="confluent-kafka", group_protocol="consumer", assignors=["range"])
    assert "assignors" in msg and "remote_assignor" in msg


def test_confluent_consumer_protocol_with_remote_assignor_is_accepted() -> None:
    spec = MemberSpec(client="confluent-kafka", group_protocol="consumer", remote_assignor="uniform")
    assert spec.is_cooperative


def test_remote_assignor_needs_consumer_protocol() -> None:
    assert "remote_assignor" in refused(client="confluent-kafka", remote_assignor="range")


def test_remote_assignor_must_be_uniform_or_range() -> None:
    msg = refused(client="java", group_protocol="consumer", remote_assignor="sticky")
    assert "remote_assignor" in msg and "uniform" in msg


@pytest.mark.parametrize(
    ("client", "listed"),
    [("confluent-kafka", "range, roundrobin, cooperative-sticky"), ("kafka-python", "pkg.mod:Class"),
     ("java", "sticky")],
)
def test_unknown_assignor_names_the_valid_ones(client: str, listed: str) -> None:
    msg = refused(client=client, assignors=["fairshare"])
    assert "'fairshare'" in msg and listed in msg


def test_kafka_python_accepts_an_import_path_assignor() -> None:
    spec = MemberSpec(client="kafka-python", assignors=["testbed.assignors.x:MyAssignor"])
    assert spec.assignors == ["testbed.assignors.x:MyAssignor"]


def test_confluent_refuses_an_import_path_assignor() -> None:
    assert "unknown assignor" in refused(client="confluent-kafka", assignors=["pkg.mod:Cls"])


def test_kafka_python_2_refuses_cooperative_sticky() -> None:
    msg = refused(client="kafka-python", client_version="2.3.3", assignors=["cooperative-sticky"])
    assert "assignors" in msg and "cooperative-sticky (added in 3.0)" in msg


def test_confluent_consumer_protocol_needs_2_12() -> None:
    assert "2.12" in refused(client="confluent-kafka", client_version="2.3.0", group_protocol="consumer")


def test_java_refuses_commit_on_revoke_and_processing_delay_and_old_series() -> None:
    assert "commit_mode" in refused(client="java", commit_mode="on_revoke")
    assert "processing_ms_per_record" in refused(client="java", processing_ms_per_record=5)
    assert "client_version" in refused(client="java", client_version="3.7.0")


def test_unknown_client_and_commit_mode_name_allowed_values() -> None:
    msg = refused(client="sarama")
    assert "client" in msg and "confluent-kafka" in msg
    assert "commit_mode" in refused(client="kafka-python", commit_mode="manual")


def test_unknown_field_is_refused() -> None:
    assert "group_protcol" in refused(client="kafka-python", group_protcol="classic")


# ---- runner config -------------------------------------------------------------------------------


def _config(static: bool, member_id: str, slot: int) -> MemberConfig:
    return MemberConfig(
        member_id=member_id, slot=slot, group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:9092",
        history_path=Path("/tmp/x.jsonl"), spec=MemberSpec(client="kafka-python", static=static),
    )


def test_static_instance_id_follows_the_slot_not_the_member() -> None:
    assert _config(True, "m3", 3).group_instance_id == _config(True, "m3-replacement", 3).group_instance_id
    assert _config(True, "m3", 3).group_instance_id != _config(True, "m4", 4).group_instance_id
    assert _config(False, "m3", 3).group_instance_id is None


def test_max_poll_interval_below_the_session_timeout_is_refused_under_the_classic_protocol() -> None:
    assert "max_poll_interval_ms" in refused(client="confluent-kafka", max_poll_interval_ms=10_000)
    spec = MemberSpec(client="confluent-kafka", max_poll_interval_ms=10_000, session_timeout_ms=6_000)
    assert spec.max_poll_interval_ms == 10_000
    assert MemberSpec(client="confluent-kafka", group_protocol="consumer", max_poll_interval_ms=10_000)


def test_java_runs_the_seed_assignors_by_their_java_class() -> None:
    from testbed.members.spec import JAVA_SEED_ASSIGNORS, SEED_ASSIGNORS

    spec = MemberSpec(client="java", assignors=["testbed.assignors.StickyStreamJoinAssignor"])
    assert not spec.is_cooperative
    both = ["testbed.assignors.StickyStreamJoinAssignor", "testbed.assignors.CooperativeStickyStreamJoinAssignor"]
    assert not MemberSpec(client="java", assignors=both).is_cooperative  # the double bounce's first bounce: eager
    assert MemberSpec(client="java", assignors=both[1:]).is_cooperative
    # every kafka-python adapter has its Java class of the same name, supporting the same protocols
    assert {name.rpartition(".")[2]: p for name, p in JAVA_SEED_ASSIGNORS.items()} == {
        name.partition(":")[2]: p for name, p in SEED_ASSIGNORS.items()}


def test_java_refuses_a_kafka_python_adapter_naming_its_java_class() -> None:
    msg = refused(client="java", assignors=["testbed.assignors.kafka_python:FailoverAssignor"])
    assert "assignors" in msg and "'testbed.assignors.FailoverAssignor'" in msg


def test_python_clients_refuse_the_java_classes() -> None:
    assert "unknown assignor" in refused(client="confluent-kafka", assignors=["testbed.assignors.LagAwareAssignor"])
    assert "unknown assignor" in refused(client="kafka-python", assignors=["testbed.assignors.LagAwareAssignor"])
