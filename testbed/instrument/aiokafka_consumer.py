"""The instrumented ``aiokafka.AIOKafkaConsumer``: a subclass that records the history, as testbed's aiokafka runner
does. Imported only once the program has imported ``aiokafka`` (``testbed.instrument.hooks`` patches
``aiokafka.AIOKafkaConsumer`` and ``aiokafka.consumer.AIOKafkaConsumer``; FastStream imports it from there).

- ``started`` at ``start()`` once subscribed (or at ``subscribe()`` after a start), from the consumer's resolved
  settings;
- ``assigned`` / ``revoked`` from a listener of ours wrapping the program's (or standing alone): aiokafka awaits
  whatever a listener method returns when it is a coroutine, so ours are coroutine functions that call the
  program's method and await it when it returned one. ``assigned`` is recorded before the program's method,
  ``revoked`` after it (a commit it makes there is recorded first, trigger ``revoke``). aiokafka has no
  ``on_partitions_lost``: a member whose session expired sees its partitions revoked at its next join.
  ``generation`` and ``kafka_member_id`` come from the coordinator;
- ``processed`` by the rule of ``testbed.instrument.tracker``: the records ``getmany()`` or ``getone()`` handed over
  (``async for msg in consumer`` calls ``getone()``) are processed at the next of those calls, or when marked;
- ``committed``: ``commit()`` from its outcome (trigger ``batch``, ``revoke`` inside a revoke callback, ``close``),
  auto-commits as the coordinator makes them (its ``_do_commit_offsets``, wrapped on the instance at ``start()``:
  a commit of the program's runs it in the program's task, an auto-commit in the coordinator's, told apart by a
  context variable);
- ``error`` for a ``KafkaError`` raised from ``getmany()`` / ``getone()`` (then raised on);
- ``stopped`` (clean) when ``stop()`` returns (also through ``async with consumer:``).

A stall (SIGUSR1) holds the program's next ``getmany()`` / ``getone()`` without blocking the event loop: aiokafka
heartbeats on that loop, and a stall is a slow handler, not a frozen process.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import weakref
from contextvars import ContextVar
from typing import Any, Dict, List, Optional, Tuple

import aiokafka
from aiokafka import ConsumerRebalanceListener
from aiokafka import errors as aiokafka_errors

from .python_records import (ConsumerState, after_close, before_close, error_code, offsets_of, partition_recorder,
                             partitions_of, subscribed_topics)
from .stall import HOLD_CHECK_S, STALL
from .started import aiokafka_started, program_fields
from .state import Instrumentation

monotonic_ns = time.monotonic_ns
PROGRAMS_COMMIT: ContextVar[bool] = ContextVar("testbed_aiokafka_programs_commit", default=False)


def generation_of(consumer: Any) -> Tuple[Optional[int], Optional[str]]:
    coordinator = getattr(consumer, "_coordinator", None)
    generation, member_id = getattr(coordinator, "generation", None), getattr(coordinator, "member_id", None)
    if not isinstance(generation, int) or generation < 0:
        return None, member_id or None
    return generation, member_id or None


class _ConsumerState(ConsumerState):
    def __init__(self, inst: Instrumentation, user_settings: Dict[str, Any]) -> None:
        super().__init__(inst, user_settings)
        self.topics: Optional[List[str]] = None  # subscribed to
        self.running = False  # start() was called


def make_listener(inst: Instrumentation, st: _ConsumerState, consumer_ref: Any, user: Any) -> Any:
    """A ConsumerRebalanceListener that records, then (or first) calls the program's ``user`` listener."""
    context, trackers, tracker = inst.context, inst.trackers, st.tracker

    record = partition_recorder(st, consumer_ref, generation_of)

    async def call_program(name: str, partitions: Any) -> None:
        method = getattr(user, name, None) if user is not None else None
        if method is not None:
            result = method(partitions)
            if asyncio.iscoroutine(result):
                await result

    class InstrumentedListener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            try:
                if st.recording:
                    tracker.before_revoke(partitions_of(revoked))
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka on_partitions_revoked", exc)
            try:
                with context.inside("revoke"):
                    await call_program("on_partitions_revoked", revoked)
            finally:  # the partitions go whether or not the program's method raised
                try:
                    trackers.released(tracker, record("revoked", revoked))
                except Exception as exc:  # noqa: BLE001
                    inst.failed("aiokafka on_partitions_revoked", exc)

        async def on_partitions_assigned(self, assigned: Any) -> None:
            try:
                trackers.assigned(tracker, record("assigned", assigned))
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka on_partitions_assigned", exc)
            await call_program("on_partitions_assigned", assigned)

    listener = InstrumentedListener()
    listener.program_listener = user
    return listener


def make_consumer_class(base: type, inst: Instrumentation) -> type:
    """A subclass of ``base`` (``aiokafka.AIOKafkaConsumer``) recording into ``inst``'s history."""
    history, context, stall = inst.history, inst.context, STALL
    base_start, base_stop, base_subscribe = base.start, base.stop, base.subscribe
    base_getmany, base_getone, base_commit = base.getmany, base.getone, base.commit

    def record_started(consumer: Any, st: _ConsumerState) -> None:
        if st.started or not st.running or st.topics is None or not st.recording:
            return
        st.started = True
        try:
            fields = aiokafka_started(consumer, st.user_settings, st.topics, aiokafka.__version__)
            fields.update(program_fields(inst.config.spec_name, inst.config.command, os.getpid()))
            history.event("started", fields)
        except Exception as exc:  # noqa: BLE001
            inst.failed("aiokafka started", exc)

    def record_commit(st: _ConsumerState, offsets: Any, trigger: str, error: Optional[str] = None) -> None:
        try:
            if st.recording and offsets:
                st.tracker.before_answer()
                history.committed(offsets_of(offsets), trigger, error)
        except Exception as exc:  # noqa: BLE001
            inst.failed("aiokafka commit", exc)

    def record_auto_commits(consumer: Any, st: _ConsumerState) -> None:
        coordinator = getattr(consumer, "_coordinator", None)
        original = getattr(coordinator, "_do_commit_offsets", None)
        if original is None:
            return

        async def do_commit_offsets(assignment: Any, offsets: Any) -> Any:
            if PROGRAMS_COMMIT.get():  # the program's commit(): recorded there with its trigger
                return await original(assignment, offsets)
            try:
                result = await original(assignment, offsets)
            except aiokafka_errors.KafkaError as exc:
                record_commit(st, offsets, "auto", error_code(exc))
                raise
            record_commit(st, offsets, "auto")
            return result

        coordinator._do_commit_offsets = do_commit_offsets

    async def hold_stall() -> None:
        while stall.on:
            await asyncio.sleep(HOLD_CHECK_S)

    def record_poll_error(st: _ConsumerState, exc: BaseException) -> None:
        try:
            if st.recording:
                history.error(error_code(exc), str(exc), fatal=not getattr(exc, "retriable", False))
        except Exception as failure:  # noqa: BLE001
            inst.failed("aiokafka error record", failure)

    class AIOKafkaConsumer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *topics: Any, **configs: Any) -> None:
            st = self._testbed = _ConsumerState(inst, dict(configs))
            super().__init__(*topics, **configs)
            if topics:
                # aiokafka subscribed inside the constructor, without a listener: give it ours.
                st.topics = subscribed_topics(topics, None)
                base_subscribe(self, topics=list(topics), listener=make_listener(inst, st, weakref.ref(self), None))

        def subscribe(self, topics: Any = (), pattern: Any = None, listener: Any = None) -> Any:
            st = self._testbed
            result = base_subscribe(self, topics=topics, pattern=pattern,
                                    listener=make_listener(inst, st, weakref.ref(self), listener))
            st.topics = subscribed_topics(topics, pattern)
            record_started(self, st)
            return result

        async def start(self) -> Any:
            st = self._testbed
            st.running = True
            record_started(self, st)
            result = await base_start(self)
            try:
                record_auto_commits(self, st)
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka start", exc)
            return result

        async def getmany(self, *partitions: Any, timeout_ms: int = 0, max_records: Any = None) -> Any:
            if stall.on:
                await hold_stall()
            st = self._testbed
            tracker = st.tracker
            try:
                tracker.settle(monotonic_ns())
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka getmany", exc)
            try:
                records = await base_getmany(self, *partitions, timeout_ms=timeout_ms, max_records=max_records)
            except aiokafka_errors.KafkaError as exc:
                record_poll_error(st, exc)
                raise
            if records and not tracker.marked:
                tracker.pending_many = itertools.chain.from_iterable(records.values())
            return records

        async def getone(self, *partitions: Any) -> Any:
            if stall.on:
                await hold_stall()
            st = self._testbed
            tracker = st.tracker
            try:
                tracker.settle_next(monotonic_ns())
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka getone", exc)
            try:
                record = await base_getone(self, *partitions)
            except aiokafka_errors.KafkaError as exc:
                record_poll_error(st, exc)
                raise
            if not tracker.marked:
                tracker.pending_one = record
            return record

        async def commit(self, offsets: Any = None) -> Any:
            st = self._testbed
            trigger = context.trigger()
            try:
                st.tracker.before_commit()
                if offsets is None:
                    # What aiokafka commits when given nothing, named here so it can be recorded.
                    assignment = self._subscription.subscription.assignment
                    offsets = assignment.all_consumed_offsets() if assignment is not None else None
            except Exception as exc:  # noqa: BLE001
                inst.failed("aiokafka commit", exc)
            token = PROGRAMS_COMMIT.set(True)
            try:
                result = await base_commit(self, offsets)
            except aiokafka_errors.KafkaError as exc:
                record_commit(st, offsets, trigger, error_code(exc))
                raise
            finally:
                PROGRAMS_COMMIT.reset(token)
            record_commit(st, offsets, trigger)
            return result

        async def stop(self) -> Any:
            st = self._testbed
            if st.closed:
                return await base_stop(self)
            before_close(inst, st, "aiokafka stop")
            try:
                with context.inside("close"):
                    result = await base_stop(self)
            except Exception as exc:
                after_close(inst, st, "aiokafka stop", exc)
                raise
            after_close(inst, st, "aiokafka stop")
            return result

    AIOKafkaConsumer.__name__ = AIOKafkaConsumer.__qualname__ = base.__name__
    AIOKafkaConsumer.__doc__ = base.__doc__
    return AIOKafkaConsumer
