"""aiokafka members: what a spec may ask of them, the settings their runner builds, and the asyncio processing
that lets many of them share one event loop (pure logic; tests/integration runs them against brokers)."""

from __future__ import annotations

import asyncio
import textwrap
import time
from pathlib import Path

import pytest

from testbed.history.events import Processed
from testbed.history.writer import read_events
from testbed.members.aiokafka.member import BUILTIN_ASSIGNORS, load_assignor
from testbed.members.batches import RecordView
from testbed.members.client_settings import aiokafka_settings
from testbed.members.config import MemberConfig
from testbed.members.defaults import effective_timeouts
from testbed.members.launch import host_command, runner_module
from testbed.members.preflight import check
from testbed.members.runtime import BatchProcessor, MemberHistory, ProcessedOffsets
from testbed.members.spec import MemberSpec


@pytest.mark.parametrize("fields, message", [
    ({"assignors": ["cooperative-sticky"]}, "aiokafka runs the eager protocol only"),
    ({"assignors": ["testbed.assignors.kafka_python:LagAwareAssignor"]}, "not ported to aiokafka's"),
    ({"group_protocol": "consumer"}, "aiokafka supports only 'classic'"),
    ({"group_protocol": "share"}, "aiokafka has no share consumer"),
    ({"streams": {"topology": "stateful"}}, "streams"),
    ({"client_version": "0.9.0", "static": True}, "aiokafka 0.9.0 has no group_instance_id"),
    ({"client_config": {"group_id": "mine"}}, r"client_config.group_id: set by testbed \(the run's group\)"),
    ({"client_config": {"partition_assignment_strategy": "x"}}, "use the spec's assignors"),
])
def test_an_aiokafka_spec_that_cannot_work_is_refused_naming_the_field(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        MemberSpec(client="aiokafka", **fields)


def _config(tmp_path: Path, **spec: object) -> MemberConfig:
    return MemberConfig(member_id="m0", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1,127.0.0.2:1",
                        spec=MemberSpec(client="aiokafka", **spec), history_path=tmp_path / "m0.jsonl")


def test_the_runner_builds_aiokafka_keywords_with_the_users_on_top(tmp_path: Path) -> None:
    config = _config(tmp_path, assignors=["sticky"], commit_mode="on_revoke", session_timeout_ms=12_000,
                     client_config={"fetch_max_wait_ms": 100})
    assert aiokafka_settings(config) == {
        "bootstrap_servers": ["127.0.0.1:1", "127.0.0.2:1"], "group_id": "g", "client_id": "m0",
        "enable_auto_commit": False, "auto_offset_reset": "earliest", "max_poll_records": 500,
        "partition_assignment_strategy": ["sticky"], "session_timeout_ms": 12_000, "fetch_max_wait_ms": 100}
    assert effective_timeouts(MemberSpec(client="aiokafka")) == (10_000, 300_000)  # aiokafka never took KIP-735
    assert MemberSpec(client="aiokafka", max_poll_interval_ms=20_000).max_poll_interval_ms == 20_000  # above 10 s
    assert runner_module(config.spec) == "testbed.members.aiokafka.member"
    assert host_command(config.spec)[1:] == ["-m", "testbed.members.host"]


def test_every_builtin_assignor_loads_by_its_protocol_name() -> None:
    for name in BUILTIN_ASSIGNORS:
        assert load_assignor(name).name == name


def test_aiokafka_itself_judges_the_users_settings_without_connecting(tmp_path: Path) -> None:
    config = _config(tmp_path, client_config={"fetch_max_wait_ms": 100, "no_such_setting": 1,
                                              "enable_idempotence": True})
    answer = check(config)
    assert answer["client"].startswith("aiokafka ")
    assert {e["key"] for e in answer["errors"]} == {"no_such_setting", "enable_idempotence"}


HANDLERS = """
import asyncio

seen = []

async def store(records):
    await asyncio.sleep(0.2)
    seen.append(len(records))
"""


def _records(n: int, partition: int = 0) -> list[RecordView]:
    return [RecordView("t", partition, i, None, 1000 + i, key=b"k", value=b"v") for i in range(n)]


def test_an_async_handler_is_awaited_and_members_on_one_loop_process_side_by_side(tmp_path: Path) -> None:
    (tmp_path / "user_async.py").write_text(textwrap.dedent(HANDLERS))
    processors = []
    for i in range(3):
        spec = MemberSpec(client="aiokafka", handler="user_async:store", handler_path=str(tmp_path))
        config = MemberConfig(member_id=f"m{i}", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1",
                              spec=spec, history_path=tmp_path / f"m{i}.jsonl")
        processors.append(BatchProcessor(MemberHistory(config), ProcessedOffsets()))

    async def all_at_once() -> list[int]:
        return list(await asyncio.gather(*(p.process_async(_records(4)) for p in processors)))

    began = time.monotonic()
    assert asyncio.run(all_at_once()) == [4, 4, 4]
    assert time.monotonic() - began < 0.5  # three 0.2 s handlers awaited together, not one after another
    import user_async

    assert user_async.seen == [4, 4, 4]
    for i in range(3):
        done = [e for e in read_events(tmp_path / f"m{i}.jsonl") if isinstance(e, Processed)]
        assert [(e.first_offset, e.last_offset) for e in done] == [(0, 3)]


def test_simulated_processing_sleeps_without_blocking_the_loop(tmp_path: Path) -> None:
    processors = [BatchProcessor(MemberHistory(_config(tmp_path / f"{i}", processing_ms_per_record=50)),
                                 ProcessedOffsets()) for i in range(2)]

    async def both() -> None:
        await asyncio.gather(*(p.process_async(_records(4)) for p in processors))

    began = time.monotonic()
    asyncio.run(both())
    assert time.monotonic() - began < 0.35  # 2 x 200 ms of simulated work, side by side
