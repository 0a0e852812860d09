"""Member runner for kafka-python 2.x and 3.x: ``python -m testbed.members.kafka_python.member --config <json>``.

kafka-python 3 runs rebalance callbacks on its background IO thread (docs/clients.md), beside the poll
loop: a blocking commit there would deadlock, so on 3.x the listener is an
AsyncConsumerRebalanceListener that awaits the coordinator's commit. In cooperative mode 3.x
skips on_partitions_assigned when nothing was added, so an unchanged member writes no
``assigned`` event. 2.x calls the listener inside poll() on the main thread, has no
cooperative-sticky and no on_partitions_lost (lost partitions arrive as revoked).
The classic generation id comes from the coordinator (a private attribute in both majors).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
import time
from typing import Any

import kafka
from kafka import KafkaConsumer, TopicPartition
from kafka import errors as kafka_errors
from kafka.structs import OffsetAndMetadata

from testbed.instrument.kafka_python import generation_of
from testbed.instrument.python_records import error_code

from ..batches import python_client_records
from ..client_settings import kafka_python_settings
from ..config import MemberConfig, parse_config
from ..runtime import (BatchProcessor, MemberControls, MemberHistory, ProcessedOffsets, dump_stacks_on_request,
                      log_rebalances, poll_failed, signal_controls)
from ..spec import SEED_ASSIGNORS

try:  # kafka-python >= 3.0
    from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener as _ListenerBase

    LISTENER_IS_ASYNC = True
except ImportError:  # kafka-python 2.x
    from kafka import ConsumerRebalanceListener as _ListenerBase  # type: ignore[assignment]

    LISTENER_IS_ASYNC = False

POLL_TIMEOUT_MS = 500  # bounds how long a SIGTERM waits for the poll loop to notice
METADATA_WAIT_S = 10.0  # for the subscribed topics' partitions before the first poll (_load_topic_metadata)
BUILTIN_ASSIGNORS = {
    "range": "kafka.coordinator.assignors.range:RangePartitionAssignor",
    "roundrobin": "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
    "sticky": "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
    "cooperative-sticky": "kafka.coordinator.assignors.cooperative_sticky:CooperativeStickyAssignor",
}


def load_assignor(name: str) -> type:
    """A built-in name or 'pkg.mod:Class'; an assignor missing from this kafka-python is a clear error."""
    path = BUILTIN_ASSIGNORS.get(name, name)
    module_name, _, attr = path.partition(":")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise SystemExit(f"assignors: {name!r} is not available in kafka-python {kafka.__version__}: {exc}") from exc


def build_assignor(name: str, consumer_config: dict[str, Any]) -> Any:
    """A built-in's class as kafka-python expects it; a custom class that takes ``consumer_config``
    (e.g. the lag-aware leader needs the bootstrap servers and group id) as an instance given it."""
    klass = load_assignor(name)
    if name not in BUILTIN_ASSIGNORS and "consumer_config" in inspect.signature(klass).parameters:
        return klass(consumer_config=consumer_config)
    return klass



def offset_and_metadata(offset: int) -> OffsetAndMetadata:
    # 2.0 has (offset, metadata); 2.1+ and 3.x add leader_epoch.
    return OffsetAndMetadata(offset, "", -1) if len(OffsetAndMetadata._fields) == 3 else OffsetAndMetadata(offset, "")


class KafkaPythonMember:
    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.spec = config.spec
        self.history = MemberHistory(config)
        self.offsets = ProcessedOffsets()
        # The settings as built (assignors by name): recorded in 'started'; the runner adds its objects below.
        self.settings = kafka_python_settings(config)
        kwargs: dict[str, Any] = {**self.settings, "default_offset_commit_callback": self._on_auto_commit}
        if self.spec.assignors:
            # An assignor that takes consumer_config is given the member's settings (the lag-aware leader needs
            # the bootstrap servers, group id and security keys) and its slot, which lets it tell members apart
            # stably across bounces (failover priority).
            assignor_config = {k: v for k, v in self.settings.items() if k != "partition_assignment_strategy"}
            assignor_config["testbed_member_slot"] = config.slot
            kwargs["partition_assignment_strategy"] = [build_assignor(n, assignor_config) for n in self.spec.assignors]
        self.consumer = KafkaConsumer(**kwargs)
        if any(name in SEED_ASSIGNORS for name in self.spec.assignors):
            # A cooperative seed variant reports what its consumer owns and the generation it joined, or nothing
            # when it runs eager (listed beside an eager assignor); kafka-python does not tell it. 3.x only, as they are.
            from testbed.assignors.kafka_python import attach_to_consumer

            attach_to_consumer(self.consumer)

    # ---- group state ----------------------------------------------------------------------

    def _partitions_event(self, kind: str, partitions: Any) -> list[tuple[str, int]]:
        tps = [(tp.topic, tp.partition) for tp in partitions]
        generation, member_id = generation_of(self.consumer)
        self.history.partitions(kind, tps, generation=generation, kafka_member_id=member_id)
        return tps

    # ---- callbacks --------------------------------------------------------------------------

    def _on_auto_commit(self, offsets: dict, response: Any) -> None:
        error = error_code(response) if isinstance(response, BaseException) else None
        done = {(tp.topic, tp.partition): om.offset for tp, om in offsets.items()}
        self.history.committed(done, "auto", error)

    def on_assigned(self, partitions: Any) -> None:
        self._partitions_event("assigned", partitions)

    def on_revoked_before_commit(self, partitions: Any) -> list[tuple[str, int]]:
        return [(tp.topic, tp.partition) for tp in partitions]

    def on_revoked_after_commit(self, tps: list[tuple[str, int]], partitions: Any) -> None:
        self._partitions_event("revoked", partitions)
        self.offsets.forget(tps)

    def on_lost(self, partitions: Any) -> None:
        tps = self._partitions_event("lost", partitions)
        self.offsets.forget(tps)

    # ---- commits ----------------------------------------------------------------------------

    def _commit_request(self, offsets: dict[tuple[str, int], int]) -> dict:
        return {TopicPartition(t, p): offset_and_metadata(o) for (t, p), o in offsets.items()}

    def commit_sync(self, offsets: dict[tuple[str, int], int], trigger: str) -> None:
        """Blocking commit from the poll thread (any version) or a 2.x listener."""
        if not offsets:
            return
        try:
            self.consumer.commit(self._commit_request(offsets))
        except kafka_errors.KafkaError as exc:
            self.offsets.commit_done(self.history, offsets, trigger, error_code(exc))
            return
        self.offsets.commit_done(self.history, offsets, trigger)

    async def commit_on_io_thread(self, offsets: dict[tuple[str, int], int], trigger: str) -> None:
        """3.x listener: await the coordinator's commit instead of blocking its own loop."""
        if not offsets:
            return
        try:
            await self.consumer._coordinator._commit_offsets_sync_async(self._commit_request(offsets))
        except Exception as exc:  # noqa: BLE001 - any failure is recorded as the commit's error
            self.offsets.commit_done(self.history, offsets, trigger, error_code(exc))
            return
        self.offsets.commit_done(self.history, offsets, trigger)

    # ---- main loop --------------------------------------------------------------------------

    def _load_topic_metadata(self, stop: threading.Event) -> None:
        """Have the subscribed topics' partitions in the client's metadata before its first poll joins the group.

        Otherwise a leader that joins before its first metadata answer assigns nothing, and the answer's arrival
        starts a second rebalance: kafka-python 3.0.x (up to 3.0.12 and its main branch) can leave that one
        unfinished for good when it outlives the poll() that started it. Assigning sets the leader's assignment
        snapshot equal to its metadata snapshot, so need_rejoin() turns false while the join is in flight; no
        later poll finishes the join, its heartbeats stay off and the coordinator drops the member, whose
        process polls on (docs/findings.md). A member started beside its topic's creation met it about once in
        ten CI runs; a user's own program, which testbed runs unchanged, meets it as it is.

        Bounded (``METADATA_WAIT_S``, in slices that see a stop): the public ``partitions_for_topic`` waits without
        end when no broker answers. 3.x only (its consumer's network fields): the hang was not seen on 2.x.
        """
        cluster, net, manager = (getattr(self.consumer, name, None) for name in ("_cluster", "_net", "_manager"))
        if cluster is None or net is None or manager is None:
            return
        deadline = time.monotonic() + METADATA_WAIT_S
        while (missing := [t for t in self.config.topics if cluster.partitions_for_topic(t) is None]) \
                and not stop.is_set():
            wait_ms = min(POLL_TIMEOUT_MS, (deadline - time.monotonic()) * 1000)
            if wait_ms <= 0:
                self.history.error("NO_METADATA", f"no partitions of {', '.join(missing)} in the client's metadata "
                                                  f"{METADATA_WAIT_S:.0f} s after subscribing; polling on")
                return
            try:
                net.run(manager.wait_for, cluster.request_update(), wait_ms)
            except kafka_errors.KafkaTimeoutError:
                continue
            except Exception as exc:  # noqa: BLE001 - no broker answers yet (the poll loop retries as it always
                # does), or a 3.x whose internals differ: recorded, and polling goes on as it would have
                self.history.error(error_code(exc), f"metadata of {', '.join(missing)} before the first poll: {exc}")
                return

    def run(self, controls: MemberControls | None = None) -> int:
        """The poll loop until stopped (``controls``: default from this process's signals)."""
        controls = controls or signal_controls()
        stop, stall = controls.stop, controls.stall
        # The timeouts as the consumer resolved them (3.x adjusts session_timeout_ms to the broker version);
        # the defaults table is the fallback should a version not keep its config dict.
        config = getattr(self.consumer, "config", None) or {}
        self.history.started(kafka.__version__, listener_thread="io" if LISTENER_IS_ASYNC else "poll",
                             session_timeout_ms=config.get("session_timeout_ms"),
                             max_poll_interval_ms=config.get("max_poll_interval_ms"),
                             heartbeat_interval_ms=config.get("heartbeat_interval_ms"), settings=self.settings)
        self.consumer.subscribe(topics=list(self.config.topics), listener=make_listener(self))
        reason = "clean"
        processor = BatchProcessor(self.history, self.offsets)
        try:
            self._load_topic_metadata(stop)
            while not stop.is_set():
                stall.hold()
                try:
                    batch = self.consumer.poll(timeout_ms=POLL_TIMEOUT_MS, max_records=self.spec.max_poll_records)
                except kafka_errors.KafkaError as exc:
                    if poll_failed(self.history, exc, error_code(exc)):
                        reason = "error"
                        break
                    continue
                records = python_client_records(batch)
                if processor.process(records) and self.spec.commit_mode == "sync":
                    self.commit_sync(self.offsets.pending(), "batch")
                if processor.end_reason is not None:
                    reason = processor.end_reason
                    break
        finally:
            # 3.x close() revokes through the listener (which commits); 2.x close() leaves without
            # calling it, so 2.x commits what it processed here or would lose it on a clean stop.
            if not LISTENER_IS_ASYNC and self.spec.commits_on_revoke:
                self.commit_sync(self.offsets.pending(), "close")
            try:
                self.consumer.close()
            except Exception as exc:  # noqa: BLE001 - a failed close is recorded, the stop still is
                self.history.error(error_code(exc), f"close failed: {exc}")
            self.history.stopped(reason)
            self.history.close()
        return 0 if reason != "error" else 1


def make_listener(member: KafkaPythonMember) -> Any:
    if LISTENER_IS_ASYNC:

        class IoThreadListener(_ListenerBase):
            async def on_partitions_revoked(self, revoked: Any) -> None:
                tps = member.on_revoked_before_commit(revoked)
                if member.spec.commits_on_revoke:
                    await member.commit_on_io_thread(member.offsets.pending(tps), "revoke")
                member.on_revoked_after_commit(tps, revoked)

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member.on_assigned(assigned)

            async def on_partitions_lost(self, lost: Any) -> None:
                member.on_lost(lost)

        return IoThreadListener()

    class PollThreadListener(_ListenerBase):
        def on_partitions_revoked(self, revoked: Any) -> None:
            tps = member.on_revoked_before_commit(revoked)
            if member.spec.commits_on_revoke:
                member.commit_sync(member.offsets.pending(tps), "revoke")
            member.on_revoked_after_commit(tps, revoked)

        def on_partitions_assigned(self, assigned: Any) -> None:
            member.on_assigned(assigned)

    return PollThreadListener()


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    log_rebalances("kafka.coordinator")
    return KafkaPythonMember(parse_config(argv, runner="kafka_python.member", client="kafka-python")).run()


if __name__ == "__main__":
    sys.exit(main())
