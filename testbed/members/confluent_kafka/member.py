"""Member runner for confluent-kafka (librdkafka): ``python -m testbed.members.confluent_kafka.member --config <json>``.

Callbacks (on_assign / on_revoke / on_lost / on_commit / error_cb) run inside consume() and
close() on the main thread. Under cooperative-sticky and KIP-848 the binding applies the
increment itself (incremental_assign / incremental_unassign) after on_assign / on_revoke return,
so the partitions a callback sees are exactly the change. librdkafka exposes no generation id
or member epoch to Python: those fields stay None and the broker's member id is written as
``kafka_member_id`` instead.
"""

from __future__ import annotations

import sys
from typing import Any

import confluent_kafka
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from ..batches import RecordView
from ..client_settings import confluent_settings
from ..config import MemberConfig, parse_config
from ..runtime import (BatchProcessor, MemberControls, MemberHistory, ProcessedOffsets, dump_stacks_on_request,
                      signal_controls)

POLL_TIMEOUT_S = 0.5  # bounds how long a SIGTERM waits for the poll loop to notice


def _tps(partitions: list[TopicPartition]) -> list[tuple[str, int]]:
    return [(tp.topic, tp.partition) for tp in partitions]


class ConfluentMember:
    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.spec = config.spec
        self.history = MemberHistory(config)
        self.offsets = ProcessedOffsets()
        self.fatal_error = False
        self.settings = confluent_settings(config)  # recorded in 'started'; the callbacks are added below
        callbacks: dict[str, Any] = {"error_cb": self._on_error}
        if self.spec.commit_mode == "auto":
            callbacks["on_commit"] = self._on_auto_commit
        self.consumer = Consumer({**self.settings, **callbacks})

    # ---- callbacks (main thread, inside consume/close) ----------------------------------------

    def _member_id(self) -> str | None:
        try:
            return self.consumer.memberid()
        except (KafkaException, RuntimeError):
            return None

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.history.partitions("assigned", _tps(partitions), kafka_member_id=self._member_id())

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        tps = _tps(partitions)
        if self.spec.commit_mode in ("on_revoke", "sync"):
            self._commit(self.offsets.pending(tps), "revoke")
        self.history.partitions("revoked", tps, kafka_member_id=self._member_id())
        self.offsets.forget(tps)

    def _on_lost(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        tps = _tps(partitions)
        self.history.partitions("lost", tps, kafka_member_id=self._member_id())
        self.offsets.forget(tps)

    def _on_auto_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return  # nothing new to commit: not a commit
        offsets = {(tp.topic, tp.partition): tp.offset for tp in partitions if tp.offset >= 0}
        if offsets or err is not None:
            self.history.committed(offsets, "auto", None if err is None else err.name())

    def _on_error(self, err: KafkaError) -> None:
        self.history.error(err.name(), err.str(), fatal=err.fatal())
        if err.fatal():
            self.fatal_error = True

    # ---- commits --------------------------------------------------------------------------

    def _commit(self, offsets: dict[tuple[str, int], int], trigger: str) -> None:
        if not offsets:
            return
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        try:
            result = self.consumer.commit(offsets=tps, asynchronous=False) or []
            failed = [tp for tp in result if tp.error is not None]
            error = ",".join(sorted({tp.error.name() for tp in failed})) or None
            done = {k: v for k, v in offsets.items() if (k[0], k[1]) not in {(tp.topic, tp.partition) for tp in failed}}
            self.offsets.mark_committed(done)
            self.history.committed(offsets, trigger, error)
        except KafkaException as exc:
            err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            self.history.committed(offsets, trigger, err.name() if err else str(exc))

    # ---- main loop ------------------------------------------------------------------------

    def run(self, controls: MemberControls | None = None) -> int:
        """The poll loop until stopped (``controls``: default from this process's signals)."""
        controls = controls or signal_controls()
        stop, stall = controls.stop, controls.stall
        version = confluent_kafka.version()  # a (str, int) tuple in older releases, a str in newer ones
        self.history.started(
            version[0] if isinstance(version, tuple) else version, librdkafka_version=confluent_kafka.libversion()[0],
            settings=self.settings,
        )
        self.consumer.subscribe(
            list(self.config.topics), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        reason = "clean"
        processor = BatchProcessor(self.history, self.offsets)
        try:
            while not stop.is_set():
                stall.hold()
                if self.fatal_error:
                    reason = "error"
                    break
                messages = self.consumer.consume(num_messages=self.spec.max_poll_records, timeout=POLL_TIMEOUT_S)
                records = []
                for msg in messages:
                    err = msg.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            self.history.error(err.name(), err.str(), fatal=err.fatal())
                            self.fatal_error = self.fatal_error or err.fatal()
                        continue
                    ts_type, ts = msg.timestamp()
                    records.append(
                        RecordView(
                            topic=msg.topic(),
                            partition=msg.partition(),
                            offset=msg.offset(),
                            headers=msg.headers(),
                            timestamp_ms=ts if ts_type != confluent_kafka.TIMESTAMP_NOT_AVAILABLE else None,
                            key=msg.key(),
                            value=msg.value(),
                        )
                    )
                if processor.process(records) and self.spec.commit_mode == "sync":
                    self._commit(self.offsets.pending(), "batch")
                if processor.end_reason is not None:
                    reason = processor.end_reason
                    break
        finally:
            # close() leaves the group; under the classic protocol it serves a last on_revoke first.
            try:
                self.consumer.close()
            except KafkaException as exc:
                self.history.error("CLOSE_FAILED", str(exc))
            self.history.stopped(reason)
            self.history.close()
        return 0 if reason != "error" else 1


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    return ConfluentMember(parse_config(argv, runner="confluent_kafka.member", client="confluent-kafka")).run()


if __name__ == "__main__":
    sys.exit(main())
