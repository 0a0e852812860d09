"""Share-group member (KIP-932) for confluent-kafka: ``python -m testbed.members.confluent_kafka.share --config <json>``.

A ``ShareConsumer`` (confluent-kafka >= 2.15, preview) subscribes to the topics; each poll returns a batch of
records the broker lent this member under an acquisition lock. The member writes ``share_acquired`` per poll
and partition (offsets with the broker's delivery count), spends the spec's processing time on them, then
acknowledges:

- implicit: the client accepts the previous poll's records at the next poll (or at close); they are handed
  over then;
- explicit: each record is accepted, released or rejected (the spec's ``release_every``/``reject_every``)
  and the acknowledgements are committed with ``commit_sync`` after each poll.

The broker's answer comes through the acknowledgement commit callback, which the client runs on this
thread inside poll, commit_sync and close: one ``share_acknowledged`` per partition and type, with the error
name (e.g. INVALID_RECORD_STATE for a record whose lock expired) or null. No assigned/revoked/processed
events: a share member owns no partition.
"""

from __future__ import annotations

import sys
from typing import Any

import confluent_kafka
from confluent_kafka import AcknowledgeType, KafkaError, KafkaException, ShareConsumer

from ...history.events import now_ms
from ..batches import RecordView, produce_ts_ms
from ..client_settings import confluent_settings
from ..config import MemberConfig, parse_config
from ..runtime import MemberControls, MemberHistory, dump_stacks_on_request, signal_controls, simulate_processing
from ..share_acks import PendingAcks

POLL_TIMEOUT_S = 0.5  # bounds how long a SIGTERM waits for the poll loop to notice
ACK_TYPES = {"accept": AcknowledgeType.ACCEPT, "release": AcknowledgeType.RELEASE, "reject": AcknowledgeType.REJECT}


def _error_name(exc: BaseException | None) -> str | None:
    if exc is None:
        return None
    err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
    return err.name() if err is not None else type(exc).__name__


class ConfluentShareMember:
    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.spec = config.spec
        self.history = MemberHistory(config)
        self.pending = PendingAcks()
        self.fatal_error = False
        self.received = 0  # records this member received, counting redeliveries: picks release/reject
        self.unacked: list[tuple[str, int, int]] = []  # implicit mode: the last poll's records, accepted at the next
        self.settings = confluent_settings(config)  # recorded in 'started'; the callback is added here
        self.consumer = ShareConsumer({**self.settings, "error_cb": self._on_error})
        self.consumer.set_acknowledgement_commit_callback(self._on_ack_commit)

    def _on_error(self, err: KafkaError) -> None:
        self.history.error(err.name(), err.str(), fatal=err.fatal())
        if err.fatal():
            self.fatal_error = True

    def _on_ack_commit(self, offsets: dict[Any, set[int]], exc: KafkaException | None) -> None:
        error = _error_name(exc)
        for tp, answered in offsets.items():
            for acks in self.pending.answered(tp.topic, tp.partition, answered):
                self.history.share_acknowledged(acks.topic, acks.partition, acks.offsets, acks.type,
                                                self.spec.share_acknowledgement, acks.sent_ms, error)

    def _record_sent(self, handed: list[tuple[str, int, int, str]], sent_ms: int) -> None:
        """One ``share_ack_sent`` per partition and type, before the call that sends them: a kill before the
        answer leaves the history saying what the broker may have taken."""
        grouped: dict[tuple[str, int, str], list[int]] = {}
        for topic, partition, offset, type_ in handed:
            grouped.setdefault((topic, partition, type_), []).append(offset)
        for (topic, partition, type_), offsets in grouped.items():
            self.history.share_ack_sent(topic, partition, offsets, type_, self.spec.share_acknowledgement, ts_ms=sent_ms)

    def _hand_over_implicit(self) -> None:
        """The previous poll's records: the client accepts them with the call about to be made."""
        sent = now_ms()
        for topic, partition, offset in self.unacked:
            self.pending.hand_over(topic, partition, offset, "accept", sent)
        self._record_sent([(t, p, o, "accept") for t, p, o in self.unacked], sent)
        self.unacked = []

    def _acquired(self, messages: list[Any]) -> list[Any]:
        """Write one share_acquired per partition of the batch; the records without errors, in poll order."""
        records, per_partition = [], {}
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() != KafkaError._PARTITION_EOF:
                    self.history.error(err.name(), err.str(), fatal=err.fatal())
                    self.fatal_error = self.fatal_error or err.fatal()
                continue
            records.append(msg)
            ts_type, ts = msg.timestamp()
            view = RecordView(msg.topic(), msg.partition(), msg.offset(), msg.headers(),
                              ts if ts_type != confluent_kafka.TIMESTAMP_NOT_AVAILABLE else None)
            entry = per_partition.setdefault((msg.topic(), msg.partition()), ([], []))
            entry[0].append((msg.offset(), msg.delivery_count()))
            if (stamp := produce_ts_ms(view)) is not None:
                entry[1].append(stamp)
        for (topic, partition), (acquired, stamps) in per_partition.items():
            self.history.share_acquired(topic, partition, acquired, stamps)
        return records

    def _acknowledge(self, records: list[Any]) -> None:
        if self.spec.share_acknowledgement == "implicit":
            self.unacked = [(m.topic(), m.partition(), m.offset()) for m in records]
            return
        handed = []
        for msg in records:
            self.received += 1
            handed.append((msg.topic(), msg.partition(), msg.offset(), self.spec.share_ack_type(self.received)))
        # Written before acknowledge(): the client may send what it holds with any request from then on.
        sent = now_ms()
        self._record_sent(handed, sent)
        for msg, (topic, partition, offset, type_) in zip(records, handed):
            self.pending.hand_over(topic, partition, offset, type_, sent)
            self.consumer.acknowledge(msg, ACK_TYPES[type_])
        try:
            self.consumer.commit_sync()  # the answers arrive through the callback, inside this call
        except KafkaException as exc:
            self.history.error(_error_name(exc) or "COMMIT_FAILED", str(exc))

    def run(self, controls: MemberControls | None = None) -> int:
        controls = controls or signal_controls()
        stop, stall = controls.stop, controls.stall
        version = confluent_kafka.version()
        self.history.started(version[0] if isinstance(version, tuple) else version,
                             librdkafka_version=confluent_kafka.libversion()[0],
                             share_acknowledgement=self.spec.share_acknowledgement, settings=self.settings)
        self.consumer.subscribe(list(self.config.topics))
        reason, total = "clean", 0
        try:
            while not stop.is_set():
                stall.hold()
                if self.fatal_error:
                    reason = "error"
                    break
                self._hand_over_implicit()
                try:
                    messages = self.consumer.poll(POLL_TIMEOUT_S)
                except KafkaException as exc:
                    self.history.error(_error_name(exc) or "POLL_FAILED", str(exc))
                    continue
                records = self._acquired(list(messages))
                if not records:
                    continue
                simulate_processing(len(records), self.spec.processing_ms_per_record)
                self._acknowledge(records)
                total += len(records)
                if self.config.max_records is not None and total >= self.config.max_records:
                    reason = "max_records"
                    break
        finally:
            # close() commits what is pending (the last poll's records, in implicit mode) and leaves the group;
            # the callback answers inside it.
            self._hand_over_implicit()
            try:
                self.consumer.close()
            except KafkaException as exc:
                self.history.error("CLOSE_FAILED", str(exc))
            self.history.stopped(reason)
            self.history.close()
        return 0 if reason != "error" else 1


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    return ConfluentShareMember(parse_config(argv, runner="confluent_kafka.share", client="confluent-kafka")).run()


if __name__ == "__main__":
    sys.exit(main())
