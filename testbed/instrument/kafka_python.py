"""The instrumented ``kafka.KafkaConsumer`` (kafka-python 2.x and 3.x): a subclass that records the history.

Imported only once the program has imported ``kafka`` (``testbed.instrument.hooks`` patches
``kafka.KafkaConsumer``, ``kafka.consumer.KafkaConsumer`` and ``kafka.consumer.group.KafkaConsumer``).
What it records, as the kafka-python runner does:

- ``started`` at the first ``subscribe()``, or at the end of the constructor when it was given topics
  (kafka-python then subscribes inside it), from the consumer's resolved ``config``;
- ``assigned`` / ``revoked`` / ``lost`` from a listener of ours wrapping the program's (or standing alone):
  after recording ``assigned`` the program's method runs, before recording ``revoked`` / ``lost`` (so a commit
  it makes there is recorded first, trigger ``revoke``). 3.x calls listeners on its IO thread and awaits
  the methods that are coroutine functions (``AsyncConsumerRebalanceListener``): each of our methods is a
  coroutine function exactly when the program's is. 2.x calls them inside ``poll()`` and has no
  ``on_partitions_lost``. ``generation`` and ``kafka_member_id`` come from the coordinator, as in the runner;
- ``processed`` by the rule of ``testbed.instrument.tracker`` (records of ``poll()``, ``for msg in consumer``,
  ``next(consumer)``);
- ``committed``: ``commit()`` from its outcome, ``commit_async()`` from a callback of ours (which then calls the
  program's callback, or its ``default_offset_commit_callback`` when it gave none, as kafka-python would),
  auto-commits as the coordinator completes them (``_commit_offsets_async_on_complete``, wrapped on the
  instance: 2.0.x never passes them to ``default_offset_commit_callback``), else, should a version lack that
  method, from ``default_offset_commit_callback``, chained in front of the program's. The synchronous
  auto-commits kafka-python makes before a rebalance and in ``close()`` call no callback and are not seen;
- ``error`` for a ``KafkaError`` raised from ``poll()`` / iteration (then raised on);
- ``stopped`` (clean) when ``close()`` returns (also through ``with consumer:``).
"""

from __future__ import annotations

import inspect
import itertools
import os
import time
import weakref
from typing import Any, Dict, List, Optional, Tuple

import kafka
from kafka import ConsumerRebalanceListener
from kafka import errors as kafka_errors

from .python_records import (ConsumerState, after_close, before_close, error_code, offsets_of, partition_recorder,
                             partitions_of, subscribed_topics)
from .stall import STALL
from .started import kafka_python_started, program_fields
from .state import Instrumentation

try:  # kafka-python >= 3.0: listeners run on the IO thread
    from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener  # noqa: F401

    LISTENER_THREAD = "io"
except ImportError:  # 2.x: inside poll()
    LISTENER_THREAD = "poll"

monotonic_ns = time.monotonic_ns
LISTENER_METHODS = ("on_partitions_assigned", "on_partitions_revoked", "on_partitions_lost")


def generation_of(consumer: Any) -> Tuple[Optional[int], Optional[str]]:
    """(generation id, member id) from the coordinator, a private attribute in both majors."""
    gen = getattr(getattr(consumer, "_coordinator", None), "_generation", None)
    if gen is None:
        return None, None
    generation_id = getattr(gen, "generation_id", None)
    member_id = getattr(gen, "member_id", None) or None
    if generation_id is None or generation_id < 0:
        return None, member_id
    return generation_id, member_id


def resolved_protocol(consumer: Any) -> Optional[str]:
    """The coordinator's rebalance protocol ('eager' / 'cooperative'), which 3.x resolves from the assignors."""
    protocol = getattr(getattr(consumer, "_coordinator", None), "_rebalance_protocol", None)
    name = getattr(protocol, "name", None)
    return name.lower() if isinstance(name, str) and name.lower() in ("eager", "cooperative") else None


class _ConsumerState(ConsumerState):
    def __init__(self, inst: Instrumentation, user_settings: Dict[str, Any]) -> None:
        super().__init__(inst, user_settings)
        self.user_commit_callback = user_settings.get("default_offset_commit_callback")
        self.auto_commits_hooked = False  # seen at the coordinator: the default callback then only chains


def make_listener(inst: Instrumentation, st: _ConsumerState, consumer_ref: Any, user: Any) -> Any:
    """A ConsumerRebalanceListener that records, then (or first) calls the program's ``user`` listener."""
    context, trackers, tracker = inst.context, inst.trackers, st.tracker

    record = partition_recorder(st, consumer_ref, generation_of)

    def assigned_before(partitions: Any) -> None:
        try:
            trackers.assigned(tracker, record("assigned", partitions))
        except Exception as exc:  # noqa: BLE001
            inst.failed("kafka-python on_partitions_assigned", exc)

    def taken_before(kind: str, partitions: Any) -> None:
        try:
            if st.recording:
                tracker.before_revoke(partitions_of(partitions))
        except Exception as exc:  # noqa: BLE001
            inst.failed(f"kafka-python on_partitions_{kind}", exc)

    def taken_after(kind: str, partitions: Any) -> None:
        try:
            trackers.released(tracker, record(kind, partitions))
        except Exception as exc:  # noqa: BLE001
            inst.failed(f"kafka-python on_partitions_{kind}", exc)

    def method(name: str) -> Any:
        user_method = getattr(user, name, None) if user is not None else None
        kind = {"on_partitions_assigned": "assigned", "on_partitions_revoked": "revoked",
                "on_partitions_lost": "lost"}[name]
        if inspect.iscoroutinefunction(user_method):
            if kind == "assigned":
                async def assigned_async(partitions: Any) -> None:
                    assigned_before(partitions)
                    await user_method(partitions)
                return assigned_async

            async def taken_async(partitions: Any) -> None:
                taken_before(kind, partitions)
                try:
                    with context.inside("revoke"):
                        await user_method(partitions)
                finally:  # the partitions go whether or not the program's method raised
                    taken_after(kind, partitions)
            return taken_async

        if kind == "assigned":
            def assigned_sync(partitions: Any) -> None:
                assigned_before(partitions)
                if user_method is not None:
                    user_method(partitions)
            return assigned_sync

        def taken_sync(partitions: Any) -> None:
            taken_before(kind, partitions)
            try:
                if user_method is not None:
                    with context.inside("revoke"):
                        user_method(partitions)
            finally:  # the partitions go whether or not the program's method raised
                taken_after(kind, partitions)
        return taken_sync

    class InstrumentedListener(ConsumerRebalanceListener):
        """Its methods are set per instance below: sync or async as the program's."""

        def on_partitions_revoked(self, revoked: Any) -> None:  # replaced per instance
            raise NotImplementedError

        def on_partitions_assigned(self, assigned: Any) -> None:  # replaced per instance
            raise NotImplementedError

    listener = InstrumentedListener()
    for name in LISTENER_METHODS:
        # An instance attribute wins over the class's function: 3.x looks the method up on the instance and
        # awaits it when it is a coroutine function.
        setattr(listener, name, method(name))
    listener.program_listener = user
    return listener


def make_consumer_class(base: type, inst: Instrumentation) -> type:
    """A subclass of ``base`` (``kafka.KafkaConsumer``) recording into ``inst``'s history."""
    history, context, stall = inst.history, inst.context, STALL
    base_poll, base_next, base_commit, base_commit_async, base_close, base_subscribe = (
        base.poll, base.__next__, base.commit, base.commit_async, base.close, base.subscribe)

    def record_poll_error(st: _ConsumerState, exc: BaseException) -> None:
        try:
            if st.recording:
                history.error(error_code(exc), str(exc), fatal=not getattr(exc, "retriable", False))
        except Exception as failure:  # noqa: BLE001
            inst.failed("kafka-python error record", failure)

    def record_started(consumer: Any, st: _ConsumerState, topics: List[str]) -> None:
        if st.started or not st.recording:
            return
        st.started = True
        try:
            fields = kafka_python_started(getattr(consumer, "config", None) or {}, st.user_settings, topics,
                                          kafka.__version__, resolved_protocol(consumer), LISTENER_THREAD)
            fields.update(program_fields(inst.config.spec_name, inst.config.command, os.getpid()))
            history.event("started", fields)
        except Exception as exc:  # noqa: BLE001
            inst.failed("kafka-python started", exc)

    def commit_answer(st: _ConsumerState, trigger: str, user: Any) -> Any:
        def answered(offsets: Any, response: Any) -> Any:
            try:
                if st.recording:
                    done = offsets_of(offsets)
                    error = error_code(response) if isinstance(response, BaseException) else None
                    if done or error:
                        st.tracker.before_answer()
                        history.committed(done, trigger, error)
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python commit callback", exc)
            if user is not None:
                return user(offsets, response)
            return None
        return answered

    def auto_commit_default(st: _ConsumerState) -> Any:
        answered = commit_answer(st, "auto", st.user_commit_callback)

        def default_callback(offsets: Any, response: Any) -> Any:
            if st.auto_commits_hooked:  # recorded at the coordinator already
                return st.user_commit_callback(offsets, response) if st.user_commit_callback else None
            return answered(offsets, response)
        return default_callback

    def hook_auto_commits(consumer: Any, st: _ConsumerState) -> None:
        coordinator = getattr(consumer, "_coordinator", None)
        completed = getattr(coordinator, "_commit_offsets_async_on_complete", None)
        if completed is None:
            return
        coordinator._commit_offsets_async_on_complete = commit_answer(st, "auto", completed)
        st.auto_commits_hooked = True

    class KafkaConsumer(base):  # type: ignore[misc, valid-type]
        def __init__(self, *topics: Any, **configs: Any) -> None:
            st = self._testbed = _ConsumerState(inst, dict(configs))
            configs["default_offset_commit_callback"] = auto_commit_default(st)
            super().__init__(*topics, **configs)
            hook_auto_commits(self, st)
            if topics:
                # kafka-python subscribed inside the constructor, without a listener: give it ours.
                record_started(self, st, subscribed_topics(topics, None))
                base_subscribe(self, topics=list(topics), listener=make_listener(inst, st, weakref.ref(self), None))

        def subscribe(self, topics: Any = (), pattern: Any = None, listener: Any = None) -> Any:
            st = self._testbed
            result = base_subscribe(self, topics=topics, pattern=pattern,
                                    listener=make_listener(inst, st, weakref.ref(self), listener))
            record_started(self, st, subscribed_topics(topics, pattern))
            return result

        def poll(self, timeout_ms: Any = 0, max_records: Any = None, update_offsets: bool = True) -> Any:
            if not update_offsets:  # kafka-python's own iterator asking: __next__ keeps the books
                return base_poll(self, timeout_ms=timeout_ms, max_records=max_records, update_offsets=False)
            if stall.on:
                stall.hold()
            st = self._testbed
            tracker = st.tracker
            try:
                tracker.settle(monotonic_ns())
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python poll", exc)
            try:
                records = base_poll(self, timeout_ms=timeout_ms, max_records=max_records)
            except kafka_errors.KafkaError as exc:
                record_poll_error(st, exc)
                raise
            if records and not tracker.marked:
                tracker.pending_many = itertools.chain.from_iterable(records.values())
            return records

        def __next__(self) -> Any:
            if stall.on:
                stall.hold()
            st = self._testbed
            tracker = st.tracker
            try:
                tracker.settle_next(monotonic_ns())
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python next", exc)
            try:
                record = base_next(self)
            except kafka_errors.KafkaError as exc:
                record_poll_error(st, exc)
                raise
            if not tracker.marked:
                tracker.pending_one = record
            return record

        def commit(self, *args: Any, **kwargs: Any) -> Any:
            st = self._testbed
            trigger = context.trigger()
            offsets = args[0] if args else kwargs.get("offsets")
            try:
                st.tracker.before_commit()
                if offsets is None:
                    # What kafka-python commits when given nothing, named here so it can be recorded.
                    offsets = self._subscription.all_consumed_offsets()
                    args, kwargs = ((offsets,) + tuple(args[1:]), kwargs) if args else (args, {**kwargs, "offsets": offsets})
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python commit", exc)
            try:
                result = base_commit(self, *args, **kwargs)
            except kafka_errors.KafkaError as exc:
                try:
                    if st.recording and offsets:
                        history.committed(offsets_of(offsets), trigger, error_code(exc))
                except Exception as failure:  # noqa: BLE001
                    inst.failed("kafka-python commit", failure)
                raise
            try:
                if st.recording and offsets:
                    history.committed(offsets_of(offsets), trigger)
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python commit", exc)
            return result

        def commit_async(self, offsets: Any = None, callback: Any = None) -> Any:
            st = self._testbed
            trigger = context.trigger()
            try:
                st.tracker.before_commit()
            except Exception as exc:  # noqa: BLE001
                inst.failed("kafka-python commit_async", exc)
            # Without a callback of its own the program's default one would answer: ours then calls it.
            user = callback if callback is not None else st.user_commit_callback
            return base_commit_async(self, offsets, commit_answer(st, trigger, user))

        def close(self, *args: Any, **kwargs: Any) -> Any:
            st = self._testbed
            if st.closed:
                return base_close(self, *args, **kwargs)
            before_close(inst, st, "kafka-python close")
            try:
                with context.inside("close"):
                    result = base_close(self, *args, **kwargs)
            except Exception as exc:
                after_close(inst, st, "kafka-python close", exc)
                raise
            after_close(inst, st, "kafka-python close")
            return result

    KafkaConsumer.__name__ = KafkaConsumer.__qualname__ = base.__name__
    KafkaConsumer.__doc__ = base.__doc__
    return KafkaConsumer
