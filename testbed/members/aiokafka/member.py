"""Member runner for aiokafka (asyncio): ``python -m testbed.members.aiokafka.member --config <json>``.

An ``AIOKafkaConsumer`` on the process's event loop: ``getmany`` batches, a ``ConsumerRebalanceListener`` whose
callbacks are coroutines awaited by the coordinator's task (it waits for them before it rejoins), commits as the
spec asks (auto, after each batch, on revoke; aiokafka has no commit callback, so its auto-commits are recorded where
its coordinator makes them). A member host runs many of them on one event loop
(``run_async``), as a FastStream service runs its subscribers.

What aiokafka does differently (docs/clients.md): its own classic-protocol coordinator, eager only (range,
roundrobin, its own sticky; no cooperative protocol, no KIP-848); no ``on_partitions_lost``: a member whose
session expired learns it at its next join, which revokes everything, so lost partitions arrive as ``revoked``;
``stop()`` does not call the listener (it finishes the coordination task, commits the consumed offsets only under
auto-commit, and leaves the group unless it is static), so the runner commits what it processed before it stops,
as a service's shutdown hook would.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from contextvars import ContextVar
from typing import Any

import aiokafka
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka import errors as aiokafka_errors

from testbed.instrument.aiokafka_consumer import generation_of
from testbed.instrument.python_records import error_code

from ..batches import python_client_records
from ..client_settings import aiokafka_settings
from ..config import MemberConfig, parse_config
from ..runtime import (BatchProcessor, MemberControls, MemberHistory, ProcessedOffsets, dump_stacks_on_request,
                      log_rebalances, poll_failed, signal_controls)

OUR_COMMIT: ContextVar[bool] = ContextVar("testbed_aiokafka_runner_commit", default=False)
POLL_TIMEOUT_MS = 500  # bounds how long a stop waits for the loop to notice
# Where each built-in assignor lives: aiokafka vendored kafka-python's coordinator in 0.9; before, it imported
# kafka-python's assignors.
BUILTIN_ASSIGNORS = {
    "range": ("aiokafka.coordinator.assignors.range:RangePartitionAssignor",
              "kafka.coordinator.assignors.range:RangePartitionAssignor"),
    "roundrobin": ("aiokafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
                   "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor"),
    "sticky": ("aiokafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
               "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor"),
}


def load_assignor(name: str) -> type:
    """A built-in's class, from where this aiokafka keeps it; one it lacks is a clear error."""
    failures = []
    for path in BUILTIN_ASSIGNORS[name]:
        module_name, _, attr = path.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            failures.append(f"{path}: {exc}")
    raise SystemExit(f"assignors: {name!r} is not available in aiokafka {aiokafka.__version__}: {'; '.join(failures)}")



class AiokafkaMember:
    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.spec = config.spec
        self.history = MemberHistory(config)
        self.offsets = ProcessedOffsets()
        self.settings = aiokafka_settings(config)  # assignors by name: recorded in 'started'
        self.consumer: AIOKafkaConsumer | None = None

    def _make_consumer(self) -> AIOKafkaConsumer:
        """Made on the running loop (aiokafka binds a consumer to the loop it was made on)."""
        kwargs: dict[str, Any] = dict(self.settings)
        if self.spec.assignors:
            kwargs["partition_assignment_strategy"] = tuple(load_assignor(n) for n in self.spec.assignors)
        return AIOKafkaConsumer(**kwargs)

    # ---- group state ----------------------------------------------------------------------

    def _partitions_event(self, kind: str, partitions: Any) -> list[tuple[str, int]]:
        tps = [(tp.topic, tp.partition) for tp in partitions]
        generation, member_id = generation_of(self.consumer)
        self.history.partitions(kind, tps, generation=generation, kafka_member_id=member_id)
        return tps

    # ---- commits ----------------------------------------------------------------------------

    async def commit(self, offsets: dict[tuple[str, int], int], trigger: str) -> None:
        if not offsets or self.consumer is None:
            return
        token = OUR_COMMIT.set(True)
        try:
            await self.consumer.commit({TopicPartition(t, p): o for (t, p), o in offsets.items()})
        except (aiokafka_errors.KafkaError, aiokafka_errors.IllegalStateError) as exc:
            self.offsets.commit_done(self.history, offsets, trigger, error_code(exc))
            return
        finally:
            OUR_COMMIT.reset(token)
        self.offsets.commit_done(self.history, offsets, trigger)

    def record_auto_commits(self) -> None:
        """aiokafka has no commit callback: its auto-commits are recorded where its coordinator makes them (its
        ``_do_commit_offsets``, wrapped on the instance), in the coordinator's task; a commit of ours runs it in
        our task, told apart by a context variable, and is recorded by ``commit``."""
        coordinator = getattr(self.consumer, "_coordinator", None)
        original = getattr(coordinator, "_do_commit_offsets", None)
        if original is None or self.spec.commit_mode != "auto":
            return

        async def do_commit_offsets(assignment: Any, offsets: Any) -> Any:
            if OUR_COMMIT.get():
                return await original(assignment, offsets)
            done = {(tp.topic, tp.partition): getattr(om, "offset", om) for tp, om in (offsets or {}).items()}
            try:
                result = await original(assignment, offsets)
            except aiokafka_errors.KafkaError as exc:
                if done:
                    self.offsets.commit_done(self.history, done, "auto", error_code(exc))
                raise
            if done:
                self.offsets.commit_done(self.history, done, "auto")
            return result

        coordinator._do_commit_offsets = do_commit_offsets

    # ---- the loop ---------------------------------------------------------------------------

    def run(self, controls: MemberControls | None = None) -> int:
        """This member alone on a loop of its own (``controls``: default from this process's signals)."""
        controls = controls or signal_controls()
        return asyncio.run(self.run_async(controls))

    async def run_async(self, controls: MemberControls) -> int:
        """The getmany loop until stopped, on the running loop (other members may share it)."""
        stop, stall = controls.stop, controls.stall
        self.consumer = consumer = self._make_consumer()
        self.history.started(aiokafka.__version__, listener_thread="event_loop",
                             session_timeout_ms=self.settings.get("session_timeout_ms"),
                             max_poll_interval_ms=self.settings.get("max_poll_interval_ms"),
                             heartbeat_interval_ms=self.settings.get("heartbeat_interval_ms"),
                             settings=self.settings)
        consumer.subscribe(topics=list(self.config.topics), listener=Listener(self))
        reason = "clean"
        processor = BatchProcessor(self.history, self.offsets)
        try:
            await consumer.start()
            self.record_auto_commits()
            while not stop.is_set():
                await stall.hold_async()
                try:
                    batch = await consumer.getmany(timeout_ms=POLL_TIMEOUT_MS,
                                                   max_records=self.spec.max_poll_records)
                except aiokafka_errors.KafkaError as exc:
                    if poll_failed(self.history, exc, error_code(exc)):
                        reason = "error"
                        break
                    continue
                records = python_client_records(batch)
                if await processor.process_async(records) and self.spec.commit_mode == "sync":
                    await self.commit(self.offsets.pending(), "batch")
                if processor.end_reason is not None:
                    reason = processor.end_reason
                    break
        finally:
            # stop() leaves without calling the listener: commit what was processed, or a clean stop would
            # give it to the next owner again.
            if self.spec.commits_on_revoke:
                await self.commit(self.offsets.pending(), "close")
            try:
                await consumer.stop()
            except Exception as exc:  # noqa: BLE001 - a failed stop is recorded, the stop still is
                self.history.error(error_code(exc), f"stop failed: {exc}")
            self.history.stopped(reason)
            self.history.close()
        return 0 if reason != "error" else 1


class Listener(ConsumerRebalanceListener):
    """Coroutines the coordinator awaits: revoke before it rejoins (eager: everything held), assign after."""

    def __init__(self, member: AiokafkaMember) -> None:
        self.member = member

    async def on_partitions_revoked(self, revoked: Any) -> None:
        member = self.member
        tps = [(tp.topic, tp.partition) for tp in revoked]
        if member.spec.commits_on_revoke:
            await member.commit(member.offsets.pending(tps), "revoke")
        member._partitions_event("revoked", revoked)
        member.offsets.forget(tps)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        self.member._partitions_event("assigned", assigned)


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    log_rebalances("aiokafka.consumer.group_coordinator")
    return AiokafkaMember(parse_config(argv, runner="aiokafka.member", client="aiokafka")).run()


if __name__ == "__main__":
    sys.exit(main())
