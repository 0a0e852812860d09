"""The instrumented ``confluent_kafka.Consumer``: a subclass of the client's C type that records the history.

Imported only once the program has imported ``confluent_kafka`` (``testbed.instrument.hooks`` patches
``confluent_kafka.Consumer`` and ``confluent_kafka.DeserializingConsumer`` with classes made here; ``StandsIn``
keeps ``isinstance`` answering as before). What it records, as the confluent runner does:

- ``started`` at the first ``subscribe()``, from the program's config (``testbed.instrument.started``);
- ``assigned`` / ``revoked`` / ``lost`` from callbacks of ours given to ``subscribe()``, which call the
  program's own (if any): after recording ``assigned``, before recording ``revoked`` / ``lost`` (so a commit
  the program makes in its revoke callback is recorded, trigger ``revoke``, before the revoke). Lost
  partitions go to the program's ``on_revoke`` when it gave no ``on_lost``, as the binding does. The
  binding assigns by itself when a callback did not call ``assign()``, so passing ours changes nothing;
- ``processed`` by the rule of ``testbed.instrument.tracker`` (records of ``poll()`` / ``consume()``);
- ``committed``: a synchronous ``commit()`` from its result; an asynchronous one (the default of
  ``commit()``) and every auto-commit from ``on_commit``, chained in front of the program's own. A
  synchronous commit does not reach ``on_commit`` (the binding commits through a queue of its own;
  checked with confluent-kafka 2.16.1), so no commit is recorded twice. ``_NO_OFFSET`` (nothing new to
  commit) is not a commit;
- ``error`` from ``error_cb`` (chained in front of the program's) and from messages carrying an error
  (``_PARTITION_EOF`` is not one);
- ``stopped`` (clean) when ``close()`` returns (also through ``with consumer:``).

librdkafka exposes no generation id to Python: ``generation`` stays null and ``kafka_member_id`` is
``consumer.memberid()``.
"""

from __future__ import annotations

import os
import time
from itertools import groupby
from typing import Any, Dict, List, Optional, Tuple

import confluent_kafka
from confluent_kafka import KafkaError, KafkaException

from .flusher import FLUSHER, Flusher
from .python_records import ConsumerState
from .records import confluent_produce_ts
from .runs import ProcessedRuns
from .stall import STALL
from .started import confluent_started, is_true, program_fields
from .state import Instrumentation
from .tracker import ConsumerTracker
from .triggers import AsyncCommits

TopicPartition = Tuple[str, int]
monotonic_ns = time.monotonic_ns
NO_OFFSET = KafkaError._NO_OFFSET
HOLD_MAX = 256  # Messages held unsettled (MessageTracker)
POSITIONING = ("seek", "assign", "incremental_assign", "unassign", "incremental_unassign")
PARTITION_EOF = KafkaError._PARTITION_EOF


Message = confluent_kafka.Message
# The Message's methods as plain functions: map() calls them for a whole batch without a line of Python per record.
partition_of, offset_of, topic_of, error_of = Message.partition, Message.offset, Message.topic, Message.error


def message_fields(msg: Any) -> Tuple[str, int, int, Optional[int]]:
    return msg.topic(), msg.partition(), msg.offset(), confluent_produce_ts(msg)


def settle_messages(runs: ProcessedRuns, messages: List[Any], now_ns: int, topic: Optional[str] = None) -> None:
    """Add Messages, processed at ``now_ns``, to the runs; ``topic``: the one topic they can be of, if known.

    No Python runs per record: a batch is cut into its stretches of one partition by C code (``map`` over
    the Message methods, ``groupby``), and a stretch is judged by its two ends. A partition's records come in
    offset order between two program calls that move a position (``seek``, ``assign``: those settle what
    was handed first), so a stretch of k records from offset a to b with b - a = k - 1 holds every offset
    between them once: one ``add_range``, with the produce times of its first and last records. A stretch with
    a gap (a transaction marker, a compacted record, a reset of the position) goes record by record. Called
    under the tracker's lock."""
    count = len(messages)
    if not count:
        return
    if topic is None:
        topics = list(map(topic_of, messages))
        if topics.count(topics[0]) == count:
            topic = topics[0]
    partitions = list(map(partition_of, messages))
    if topic is not None and partitions.count(partitions[0]) == count:
        stretches: Any = ((partitions[0], count),)
    else:
        keys: Any = partitions if topic is not None else zip(topics, partitions)
        stretches = [(key, len(list(group))) for key, group in groupby(keys)]
    start = 0
    for key, length in stretches:
        end = start + length
        t, p = (topic, key) if topic is not None else key
        first_msg, last_msg = messages[start], messages[end - 1]
        first, last = first_msg.offset(), last_msg.offset()
        if last - first == length - 1:
            runs.add_range(t, p, first, last, confluent_produce_ts(first_msg), confluent_produce_ts(last_msg), now_ns)
        else:
            for msg in messages[start:end]:
                runs.add(t, p, msg.offset(), confluent_produce_ts(msg), now_ns)
        start = end


class MessageTracker(ConsumerTracker):
    """The tracker of a confluent consumer. The program's calls only note what they hand over (``handed``);
    the flusher settles it in batches (``settle_messages``) every window while records are handed, and a
    commit, a revoke, close, ``seek`` or ``subscribe`` settles everything first. The hot path so has no
    clock and no lock. It holds ``HOLD_MAX`` Messages at most: the call that finds that many settles them
    itself (a consumer whose program keeps a few thousand Messages alive fetches markedly slower: 500k
    records took 3.4 s instead of 2.4 s with 2,000 held, no slower with 1,200; librdkafka 2.16).

    Counters rather than a list swap, because the program's thread appends without the lock while the flusher
    settles under it: records ``settled_count``..``done_count`` of all ever handed were handed before the
    program's latest call, so they are processed; the rest (those of the latest call) are still the
    program's. A record settled by the flusher is stamped with the flusher's time: at most a window after the
    call that made it processed, as its run would be written anyway."""

    def __init__(self, history: Any, flusher: Flusher = FLUSHER) -> None:
        super().__init__(history, message_fields, flusher)
        self.topic: Optional[str] = None  # the one topic subscribed to, when there is one
        self.handed: List[Any] = []
        self.handed_count = 0  # the program's thread alone writes these two
        self.done_count = 0
        self.settled_count = 0  # written under the lock
        self.scheduled = False  # the flusher will come

    def schedule(self) -> None:
        """Records are handed over and the flusher is not coming: make it come within the window."""
        with self.lock:
            self.scheduled = True
            self.flusher.due(self, monotonic_ns() + self.runs.window_ns)

    def call_begins(self) -> None:
        """A call of the program's: what it was handed before is processed (settled here once HOLD_MAX are held)."""
        self.done_count = self.handed_count
        if len(self.handed) >= HOLD_MAX:
            self.settle_held()

    def hand_over(self, records: List[Any]) -> None:
        """Records a call returns to the program: its own until its next call."""
        self.handed.extend(records)
        self.handed_count += len(records)
        if not self.scheduled:
            self.schedule()

    def settle_held(self) -> None:
        """The program's call finds ``HOLD_MAX`` records held: they are processed now; settle them (their runs
        are written when their window is over, as ever)."""
        with self.lock:
            now = monotonic_ns()
            self._settle(now)
            self.runs.flush_due(now)

    def settle_all(self) -> None:
        """A call that ends the program's hold on what it was handed (a commit, a seek): settle, and write."""
        with self.lock:
            self._settle(monotonic_ns())
            self.runs.flush()

    def _settle(self, now_ns: int) -> None:
        self.done_count = self.handed_count  # a call of the program's: everything handed is processed
        self._settle_done(now_ns)

    def _settle_done(self, now_ns: Optional[int] = None) -> None:
        count = self.done_count - self.settled_count
        if count > 0:
            batch = self.handed[:count]
            del self.handed[:count]
            self.settled_count += count
            settle_messages(self.runs, batch, monotonic_ns() if now_ns is None else now_ns, self.topic)

    def _drop_handed(self) -> None:
        self._settle_done()  # handed before the program's latest call: processed by the implicit rule
        del self.handed[:]
        self.settled_count = self.done_count = self.handed_count

    def flush_due(self) -> None:
        """The flusher's call: settle and write what the program is done with. The flag is cleared before the
        last look at ``handed``, the program appends before it reads the flag: no record waits unscheduled."""
        with self.lock:
            self._settle_done()
            self.runs.flush()
            self.scheduled = False
            if self.handed:  # the program still holds these: come back once it may have called again
                self.scheduled = True
                self.flusher.due(self, monotonic_ns() + self.runs.window_ns)


def client_version() -> str:
    version = confluent_kafka.version()  # a (str, int) tuple in older releases, a str in newer ones
    return version[0] if isinstance(version, tuple) else str(version)


def librdkafka_version() -> Optional[str]:
    try:
        return confluent_kafka.libversion()[0]
    except Exception:  # noqa: BLE001 - an extra field, not worth a failure
        return None


def partitions_of(partitions: Any) -> List[TopicPartition]:
    return [(tp.topic, tp.partition) for tp in partitions]


def member_id_of(consumer: Any) -> Optional[str]:
    try:
        return consumer.memberid() or None
    except Exception:  # noqa: BLE001 - closed, or not joined yet
        return None


def error_name(exc: BaseException) -> str:
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return err.name() if err is not None else type(exc).__name__


def offsets_given(message: Any, offsets: Any) -> Optional[Dict[TopicPartition, int]]:
    """What a commit() call names: a message's offset + 1, a list of TopicPartition, or None (the positions)."""
    if message is not None:
        return {(message.topic(), message.partition()): message.offset() + 1}
    if offsets is not None:
        return {(tp.topic, tp.partition): tp.offset for tp in offsets}
    return None


class _ConsumerState(ConsumerState):
    def __init__(self, inst: Instrumentation, conf: Dict[str, Any]) -> None:
        super().__init__(inst, conf, MessageTracker(inst.history))
        self.conf = conf
        self.commits = AsyncCommits(auto_commit=_auto_commit(conf))


def _auto_commit(conf: Dict[str, Any]) -> bool:
    return is_true(conf.get("enable.auto.commit", True))


def _split_config(args: tuple, kwargs: dict) -> Dict[str, Any]:
    """The program's config as the binding merges it: the dict argument, then the keyword arguments."""
    conf: Dict[str, Any] = {}
    if args and isinstance(args[0], dict):
        conf.update(args[0])
    conf.update(kwargs)
    return conf


def _with_callbacks(args: tuple, kwargs: dict, callbacks: Dict[str, Any]) -> Tuple[tuple, dict]:
    """The constructor's arguments with ``callbacks`` in place of the program's (where the program put
    them: a keyword argument stays one); the program's dict is copied, never changed."""
    args, kwargs = tuple(args), dict(kwargs)
    if args and isinstance(args[0], dict):
        conf = dict(args[0])
        for key, cb in callbacks.items():
            if key not in kwargs:
                conf[key] = cb
        args = (conf,) + args[1:]
        kwargs.update({k: cb for k, cb in callbacks.items() if k in kwargs})
    else:
        kwargs.update(callbacks)
    return args, kwargs


class StandsIn(type):
    """The metaclass of a class put in place of the client's: ``isinstance`` and ``issubclass`` against it
    answer as against the client's class. The library's own subclasses derive from the client's class, not from
    ours (``DeserializingConsumer`` from the C type): a program's ``isinstance(c, Consumer)`` stays true for them.
    Subclasses of ours (a program's ``class MyConsumer(Consumer)``) check as usual."""

    def __instancecheck__(cls, obj: Any) -> bool:
        stands_for = cls.__dict__.get("_testbed_stands_for")
        return isinstance(obj, stands_for) if stands_for is not None else type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        stands_for = cls.__dict__.get("_testbed_stands_for")
        return issubclass(sub, stands_for) if stands_for is not None else type.__subclasscheck__(cls, sub)


def make_consumer_class(base: type, inst: Instrumentation) -> type:
    """A subclass of ``base`` (``confluent_kafka.Consumer``, or a subclass of it such as
    ``DeserializingConsumer``) recording into ``inst``'s history."""
    history, context, trackers, stall = inst.history, inst.context, inst.trackers, STALL
    base_poll, base_consume, base_commit, base_close, base_subscribe = (
        base.poll, base.consume, base.commit, base.close, base.subscribe)

    def record_message_error(msg: Any) -> None:
        try:
            err = msg.error()
            if err.code() != PARTITION_EOF and not inst.exiting:
                history.error(err.name(), err.str(), fatal=err.fatal())
        except Exception as failure:  # noqa: BLE001
            inst.failed("confluent error record", failure)

    def record_exception(st: _ConsumerState, exc: BaseException) -> None:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        try:
            if err is not None:
                history.error(err.name(), err.str(), fatal=err.fatal())
            else:
                history.error(type(exc).__name__, str(exc), fatal=False)
        except Exception as failure:  # noqa: BLE001
            inst.failed("confluent error record", failure)

    def answer_callbacks(st: _ConsumerState, user: Dict[str, Any]) -> Dict[str, Any]:
        user_on_commit, user_error_cb = user.get("on_commit"), user.get("error_cb")

        def on_commit(err: Any, partitions: Any) -> None:
            try:
                if st.recording:
                    offsets = {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}
                    trigger = st.commits.answered(offsets)
                    if err is None or err.code() != NO_OFFSET:  # _NO_OFFSET: nothing new to commit
                        failed = sorted({tp.error.name() for tp in partitions if tp.error is not None})
                        error = err.name() if err is not None else (",".join(failed) or None)
                        if offsets or error:
                            st.tracker.before_answer()
                            history.committed(offsets, trigger, error)
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent on_commit", exc)
            if user_on_commit is not None:
                user_on_commit(err, partitions)

        def error_cb(err: Any) -> None:
            try:
                if st.recording:
                    history.error(err.name(), err.str(), fatal=err.fatal())
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent error_cb", exc)
            if user_error_cb is not None:
                user_error_cb(err)

        return {"on_commit": on_commit, "error_cb": error_cb}

    def rebalance_callbacks(st: _ConsumerState, on_assign: Any, on_revoke: Any, on_lost: Any) -> Dict[str, Any]:
        tracker = st.tracker

        def assigned(consumer: Any, partitions: Any) -> None:
            try:
                if st.recording:
                    tps = partitions_of(partitions)
                    history.partitions("assigned", tps, kafka_member_id=member_id_of(consumer))
                    trackers.assigned(tracker, tps)
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent on_assign", exc)
            if on_assign is not None:
                on_assign(consumer, partitions)

        def taken(kind: str, user: Any) -> Any:
            def callback(consumer: Any, partitions: Any) -> None:
                tps: List[TopicPartition] = []
                try:
                    if st.recording:
                        tps = partitions_of(partitions)
                        tracker.before_revoke(tps)
                except Exception as exc:  # noqa: BLE001
                    inst.failed(f"confluent on_{kind}", exc)
                try:
                    if user is not None:
                        with context.inside("revoke"):
                            user(consumer, partitions)
                finally:  # the partitions go whether or not the program's callback raised
                    try:
                        if st.recording:
                            history.partitions(kind, tps, kafka_member_id=member_id_of(consumer))
                            trackers.released(tracker, tps)
                    except Exception as exc:  # noqa: BLE001
                        inst.failed(f"confluent on_{kind}", exc)
            return callback

        return {"on_assign": assigned, "on_revoke": taken("revoked", on_revoke),
                "on_lost": taken("lost", on_lost if on_lost is not None else on_revoke)}

    def settling_first(name: str) -> Any:
        """A call that moves a position: what the program was handed is processed, and settled before (a
        partition's records are in offset order only between two such calls: settle_messages)."""
        base_method = getattr(base, name)

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            tracker = self._testbed_tracker
            try:
                tracker.settle_all()
                if tracker.topic is not None and name.endswith("assign") and args:
                    if any(tp.topic != tracker.topic for tp in args[0]):
                        tracker.topic = None  # partitions of another topic than the one subscribed to
            except Exception as exc:  # noqa: BLE001
                inst.failed(f"confluent {name}", exc)
            return base_method(self, *args, **kwargs)

        method.__name__ = method.__qualname__ = name
        method.__doc__ = base_method.__doc__
        return method

    class Consumer(base, metaclass=StandsIn):  # type: ignore[misc, valid-type]
        _testbed_stands_for = base

        def __class_getitem__(cls, params: Any) -> Any:
            return cls  # DeserializingConsumer[K, V] in a program's annotations: still this class

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            conf = _split_config(args, kwargs)
            st = self._testbed = _ConsumerState(inst, conf)
            self._testbed_tracker = st.tracker  # one attribute less on the hot path
            args, kwargs = _with_callbacks(args, kwargs, answer_callbacks(st, conf))
            super().__init__(*args, **kwargs)

        def subscribe(self, topics: Any, on_assign: Any = None, on_revoke: Any = None, on_lost: Any = None) -> Any:
            st = self._testbed
            topics = list(topics)
            try:
                st.tracker.settle_all()  # a call: what the program was handed is processed
                # One topic named outright (not a '^' pattern): its records need no topic() each.
                st.tracker.topic = topics[0] if len(topics) == 1 and not topics[0].startswith("^") else None
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent subscribe", exc)
            result = base_subscribe(self, topics, **rebalance_callbacks(st, on_assign, on_revoke, on_lost))
            if not st.started and st.recording:
                st.started = True
                try:
                    fields = confluent_started(st.conf, topics, client_version(), librdkafka_version())
                    fields.update(program_fields(inst.config.spec_name, inst.config.command, os.getpid()))
                    history.event("started", fields)
                except Exception as exc:  # noqa: BLE001
                    inst.failed("confluent started", exc)
            return result

        def poll(self, timeout: Any = None) -> Any:
            # A poll-per-record program's hot path: no clock, no lock, a few attribute stores (MessageTracker);
            # call_begins and hand_over inlined, as a call of ours per record costs about as much as their work.
            if stall.on:
                stall.hold()
            tracker = self._testbed_tracker
            tracker.done_count = tracker.handed_count
            if len(tracker.handed) >= HOLD_MAX:
                try:
                    tracker.settle_held()
                except Exception as exc:  # noqa: BLE001
                    inst.failed("confluent poll", exc)
            try:
                msg = base_poll(self) if timeout is None else base_poll(self, timeout)
            except KafkaException as exc:
                record_exception(self._testbed, exc)
                raise
            if msg is not None:
                if msg.error() is None:
                    if not tracker.marked:
                        tracker.handed.append(msg)
                        tracker.handed_count += 1
                        if not tracker.scheduled:
                            tracker.schedule()
                else:
                    record_message_error(msg)
            return msg

        def consume(self, *args: Any, **kwargs: Any) -> Any:
            if stall.on:
                stall.hold()
            tracker = self._testbed_tracker
            try:
                tracker.call_begins()
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent consume", exc)
            try:
                messages = base_consume(self, *args, **kwargs)
            except KafkaException as exc:
                record_exception(self._testbed, exc)
                raise
            if messages:
                records = messages
                if any(map(error_of, messages)):
                    records = [m for m in messages if m.error() is None]
                    for bad in messages:
                        if bad.error() is not None:
                            record_message_error(bad)
                if records and not tracker.marked:
                    tracker.hand_over(records)
            return messages

        def commit(self, *args: Any, **kwargs: Any) -> Any:
            st = self._testbed
            message = args[0] if len(args) > 0 else kwargs.get("message")
            offsets = args[1] if len(args) > 1 else kwargs.get("offsets")
            asynchronous = args[2] if len(args) > 2 else kwargs.get("asynchronous", True)
            trigger = context.trigger()
            given = None
            try:
                st.tracker.before_commit()
                given = offsets_given(message, offsets)
                if asynchronous:
                    st.commits.sent(trigger, given)
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent commit", exc)
            try:
                result = base_commit(self, *args, **kwargs)
            except KafkaException as exc:
                try:
                    if asynchronous:
                        st.commits.withdraw(trigger, given)
                    if error_name(exc) != "_NO_OFFSET" and st.recording:
                        done = {k: o for k, o in (given or {}).items() if o >= 0}
                        history.committed(done, trigger, error_name(exc))
                except Exception as failure:  # noqa: BLE001
                    inst.failed("confluent commit", failure)
                raise
            if not asynchronous and st.recording:
                try:
                    tps = result or []
                    done = {(tp.topic, tp.partition): tp.offset for tp in tps if tp.offset >= 0}
                    failed = sorted({tp.error.name() for tp in tps if tp.error is not None})
                    if done or failed:
                        history.committed(done, trigger, ",".join(failed) or None)
                except Exception as exc:  # noqa: BLE001
                    inst.failed("confluent commit", exc)
            return result

        def close(self, *args: Any, **kwargs: Any) -> Any:
            st = self._testbed
            if st.closed:
                return base_close(self, *args, **kwargs)
            try:
                st.tracker.before_close()
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent close", exc)
            try:
                with context.inside("close"):
                    result = base_close(self, *args, **kwargs)
            except Exception as exc:
                st.closed = True
                try:
                    if st.started and st.recording:
                        history.error("CLOSE_FAILED", f"close failed: {exc}")
                        history.stopped("clean")
                except Exception as failure:  # noqa: BLE001
                    inst.failed("confluent close", failure)
                raise
            st.closed = True
            try:
                if st.started and st.recording:
                    history.stopped("clean")
            except Exception as exc:  # noqa: BLE001
                inst.failed("confluent close", exc)
            return result

        def __exit__(self, *exc_info: Any) -> Any:
            # The binding's own __exit__ closes in C, past the close() above.
            self.close()
            return None

    for name in POSITIONING:
        if hasattr(base, name):
            setattr(Consumer, name, settling_first(name))
    Consumer.__name__ = Consumer.__qualname__ = base.__name__
    Consumer.__doc__ = base.__doc__
    return Consumer
