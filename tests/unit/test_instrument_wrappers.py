"""The instrumented consumer classes without a broker: what each call of the program's records, and in what order.

confluent-kafka's Consumer is stood in for by a fake base class with its API (real ``Message`` and
``TopicPartition`` objects); kafka-python's is the real class, built with ``api_version`` given so it never
connects, its callbacks driven by hand.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from kafka import ConsumerRebalanceListener, KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.structs import OffsetAndMetadata

from testbed.history.events import parse_event
from testbed.instrument import confluent as instrumented_confluent
from testbed.instrument import kafka_python as instrumented_kafka_python
from testbed.instrument.config import InstrumentConfig
from testbed.instrument.state import Instrumentation
from testbed.instrument.tracker import Trackers


def message(partition: int, offset: int) -> Any:
    return confluent_kafka.Message(topic="t", partition=partition, offset=offset, timestamp=(1, 1_700_000_000_000))


class FakeConsumer:
    """confluent_kafka.Consumer's API as the instrumentation uses it; callbacks run inside poll and close."""

    def __init__(self, conf: dict) -> None:
        self.conf = conf
        self.queue: list = []
        self.callbacks: dict = {}
        self.commits: list = []
        self.positions: dict = {}
        self.closed = False

    def subscribe(self, topics, on_assign=None, on_revoke=None, on_lost=None) -> None:
        self.callbacks = {"assign": on_assign, "revoke": on_revoke, "lost": on_lost}

    def poll(self, timeout=None) -> Any:
        item = self.queue.pop(0) if self.queue else None
        if callable(item):  # a rebalance the test scheduled: it runs inside poll, as librdkafka's do
            item(self)
            return None
        if item is not None:
            self.positions[(item.topic(), item.partition())] = item.offset() + 1
        return item

    def consume(self, num_messages=1, timeout=-1) -> list:
        batch, self.queue = self.queue[:num_messages], self.queue[num_messages:]
        return batch

    def commit(self, message=None, offsets=None, asynchronous=True) -> Any:
        if message is not None:
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        elif offsets is None:  # the positions: what poll returned so far
            offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(self.positions.items())]
        self.commits.append((offsets, asynchronous))
        if asynchronous:
            self.conf["on_commit"](None, offsets or [])
            return None
        return offsets

    def close(self) -> None:
        if self.callbacks.get("revoke"):
            self.callbacks["revoke"](self, [TopicPartition("t", 0), TopicPartition("t", 1)])
        self.closed = True

    def memberid(self) -> str:
        return "member-1"


@pytest.fixture
def inst(tmp_path: Path) -> Instrumentation:
    return Instrumentation(InstrumentConfig("m0", str(tmp_path / "m0.jsonl"), "app", ["prog"]), Trackers())


def events(inst: Instrumentation) -> list:
    path = Path(inst.history.path)
    return [parse_event(json.loads(line)) for line in path.read_text().splitlines()] if path.exists() else []


def names(inst: Instrumentation) -> list[str]:
    return [e.name if e.name != "committed" else f"committed:{e.trigger}" for e in events(inst)]


def test_confluent_poll_loop_records_in_the_runners_order(inst: Instrumentation) -> None:
    Consumer = instrumented_confluent.make_consumer_class(FakeConsumer, inst)
    program_calls: list[str] = []

    def on_revoke(consumer, partitions):
        program_calls.append("on_revoke")
        consumer.commit(asynchronous=False)  # the program commits what it processed: trigger revoke

    consumer = Consumer({"group.id": "g", "enable.auto.commit": False, "on_commit": lambda err, tps: None})
    consumer.subscribe(["t"], on_revoke=on_revoke)
    consumer.callbacks["assign"](consumer, [TopicPartition("t", 0), TopicPartition("t", 1)])
    consumer.queue += [message(0, 0), message(0, 1), message(1, 0)]
    for _ in range(3):
        assert consumer.poll(1.0) is not None
    consumer.commit(asynchronous=False)  # the third record counts: the program commits after it
    consumer.queue.append(message(0, 2))
    consumer.poll(1.0)
    consumer.close()
    assert program_calls == ["on_revoke"]
    assert names(inst) == ["started", "assigned", "processed", "processed", "committed:batch", "processed",
                           "committed:revoke", "revoked", "stopped"]
    started = events(inst)[0]
    assert started.spec == "app" and started.command == ["prog"] and started.commit_mode == "manual"
    processed = [(e.partition, e.first_offset, e.last_offset) for e in events(inst) if e.name == "processed"]
    assert sorted(processed) == [(0, 0, 1), (0, 2, 2), (1, 0, 0)]
    assert consumer.closed


def test_confluent_async_commits_are_recorded_once_when_answered(inst: Instrumentation) -> None:
    Consumer = instrumented_confluent.make_consumer_class(FakeConsumer, inst)
    answered: list = []
    consumer = Consumer({"group.id": "g", "enable.auto.commit": False,
                         "on_commit": lambda err, tps: answered.append([tp.offset for tp in tps])})
    consumer.subscribe(["t"])
    consumer.queue.append(message(0, 4))
    msg = consumer.poll(1.0)
    consumer.commit(msg)  # asynchronous, the default
    assert answered == [[5]]  # the program's own on_commit still runs
    (committed,) = [e for e in events(inst) if e.name == "committed"]
    assert committed.trigger == "batch" and [(o.partition, o.offset) for o in committed.offsets] == [(0, 5)]
    assert names(inst).index("processed") < names(inst).index("committed:batch")


def test_confluent_lost_partitions_go_to_on_revoke_when_the_program_gave_no_on_lost(inst: Instrumentation) -> None:
    Consumer = instrumented_confluent.make_consumer_class(FakeConsumer, inst)
    seen: list = []
    consumer = Consumer({"group.id": "g"})
    consumer.subscribe(["t"], on_revoke=lambda c, tps: seen.append([tp.partition for tp in tps]))
    consumer.callbacks["lost"](consumer, [TopicPartition("t", 1)])
    assert seen == [[1]]
    lost = [e for e in events(inst) if e.name == "lost"]
    assert lost and lost[0].partitions == [("t", 1)] and lost[0].model_extra["kafka_member_id"] == "member-1"


def test_confluent_revoked_is_recorded_even_when_the_programs_callback_raises(inst: Instrumentation) -> None:
    def on_revoke(consumer, partitions):
        raise RuntimeError("the program's own bug")

    consumer = instrumented_confluent.make_consumer_class(FakeConsumer, inst)({"group.id": "g"})
    consumer.subscribe(["t"], on_revoke=on_revoke)
    with pytest.raises(RuntimeError, match="own bug"):
        consumer.callbacks["revoke"](consumer, [TopicPartition("t", 0)])
    assert [e.name for e in events(inst)] == ["started", "revoked"]


def test_confluent_consume_batches_count_at_the_next_call(inst: Instrumentation) -> None:
    Consumer = instrumented_confluent.make_consumer_class(FakeConsumer, inst)
    consumer = Consumer({"group.id": "g"})
    consumer.subscribe(["t"])
    consumer.queue += [message(0, o) for o in range(5)]
    assert len(consumer.consume(5, 1.0)) == 5
    assert "processed" not in names(inst)  # handed over, not yet processed
    consumer.consume(5, 0.1)
    consumer.close()
    (processed,) = [e for e in events(inst) if e.name == "processed"]
    assert (processed.first_offset, processed.last_offset, processed.count) == (0, 4, 5)


def test_confluent_errors_of_the_client_are_recorded_and_raised(inst: Instrumentation) -> None:
    class Failing(FakeConsumer):
        def poll(self, timeout=None):
            raise KafkaException(KafkaError(KafkaError._FATAL, "fenced", fatal=True))

    consumer = instrumented_confluent.make_consumer_class(Failing, inst)({"group.id": "g"})
    with pytest.raises(KafkaException):
        consumer.poll(1.0)
    (error,) = events(inst)
    assert error.name == "error" and error.code == "_FATAL" and error.fatal is True


def test_confluent_config_callbacks_are_replaced_where_the_program_put_them() -> None:
    ours = {"on_commit": "ours-commit", "error_cb": "ours-error"}
    program_conf = {"group.id": "g", "on_commit": "theirs"}
    args, kwargs = instrumented_confluent._with_callbacks((program_conf,), {"error_cb": "theirs-kw"}, ours)
    assert args[0] == {"group.id": "g", "on_commit": "ours-commit"} and kwargs == {"error_cb": "ours-error"}
    assert program_conf["on_commit"] == "theirs"  # the program's dict is never changed
    assert instrumented_confluent._with_callbacks((), {"group.id": "g"}, ours) == ((), {"group.id": "g", **ours})


# ---- kafka-python ----------------------------------------------------------------------------------


@pytest.fixture
def kafka_consumer(inst: Instrumentation):
    Consumer = instrumented_kafka_python.make_consumer_class(KafkaConsumer, inst)
    made: list = []

    def make(**configs: Any) -> Any:
        consumer = Consumer(bootstrap_servers="127.0.0.1:1", group_id="g", api_version=(2, 8), **configs)
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer._testbed.closed = True  # no stopped event from the teardown's close
        consumer.close(autocommit=False, timeout_ms=100)


def test_kafka_python_auto_commits_are_recorded_once_and_the_programs_callback_still_runs(
        inst: Instrumentation, kafka_consumer) -> None:
    seen: list = []
    consumer = kafka_consumer(default_offset_commit_callback=lambda offsets, response: seen.append(response))
    offsets = {KafkaTopicPartition("t", 0): OffsetAndMetadata(7, "", -1)}
    consumer._coordinator._commit_offsets_async_on_complete(offsets, None)  # as an auto-commit completes
    assert seen == [None]
    (committed,) = events(inst)
    assert committed.trigger == "auto" and [(o.partition, o.offset) for o in committed.offsets] == [(0, 7)]


def test_kafka_python_listener_methods_are_async_exactly_where_the_programs_are(
        inst: Instrumentation, kafka_consumer) -> None:
    calls: list[str] = []

    class Mixed(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked):
            calls.append("revoked")

        def on_partitions_assigned(self, assigned):
            calls.append("assigned")

    consumer = kafka_consumer()
    consumer.subscribe(["t"], listener=Mixed())
    listener = consumer._subscription.rebalance_listener
    assert listener.program_listener is not None
    assert inspect.iscoroutinefunction(listener.on_partitions_revoked)
    assert not inspect.iscoroutinefunction(listener.on_partitions_assigned)
    listener.on_partitions_assigned({KafkaTopicPartition("t", 0)})
    asyncio.run(listener.on_partitions_revoked({KafkaTopicPartition("t", 0)}))
    assert calls == ["assigned", "revoked"]
    assert [e.name for e in events(inst)] == ["started", "assigned", "revoked"]
    assert events(inst)[0].topics == ["t"]


def test_kafka_python_lost_goes_to_the_programs_listener_as_kafka_python_would_send_it(
        inst: Instrumentation, kafka_consumer) -> None:
    calls: list[str] = []

    class Revoking(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            calls.append("revoked")

        def on_partitions_assigned(self, assigned):
            calls.append("assigned")

    consumer = kafka_consumer()
    consumer.subscribe(["t"], listener=Revoking())
    consumer._subscription.rebalance_listener.on_partitions_lost({KafkaTopicPartition("t", 0)})
    assert calls == ["revoked"]  # the base class's on_partitions_lost calls on_partitions_revoked
    assert [e.name for e in events(inst)] == ["started", "lost"]


def test_kafka_python_without_a_listener_still_records_assignments(inst: Instrumentation, kafka_consumer) -> None:
    consumer = kafka_consumer()
    consumer.subscribe(pattern="^t-.*")
    listener = consumer._subscription.rebalance_listener
    listener.on_partitions_assigned({KafkaTopicPartition("t-1", 0)})
    started, assigned = events(inst)
    assert started.topics == ["^t-.*"] and assigned.partitions == [("t-1", 0)]
