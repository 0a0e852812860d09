"""A tiny share-group run (KIP-932) written through the real history contract (typed events)."""

from __future__ import annotations

from testbed.history.events import Action, ClientError, ShareAcknowledged, ShareAckSent, ShareAcquired, Started

from .builder import TOPIC, HistoryBuilder

GROUP = "sg"


class ShareHistoryBuilder(HistoryBuilder):
    def share_started(self, m: str, ts: int, *, group: str = GROUP, topics=(TOPIC,)) -> None:
        self.member(m, Started(ts_ms=ts, source=m, client="java", client_version="4.1.1", group_id=group,
                               topics=list(topics), group_protocol="share", pid=1))

    def share_config(self, ts: int, *, lock_ms: int | None = 30_000, limit: int | None = 5, reset: str | None = "earliest",
                     group: str = GROUP) -> None:
        detail = {"group_id": group, "record_lock_duration_ms": lock_ms, "delivery_count_limit": limit,
                  "auto_offset_reset": reset}
        self.harness(Action.SHARE_GROUP_CONFIG, ts, **{k: v for k, v in detail.items() if v is not None})

    def acquired(self, m: str, ts: int, partition: int, offsets, counts=None, topic: str = TOPIC) -> None:
        """``counts``: the broker's delivery count per offset (default 1 each; None entries = not exposed)."""
        counts = [1] * len(offsets) if counts is None else counts
        self.member(m, ShareAcquired(ts_ms=ts, source=m, topic=topic, partition=partition,
                                     acquired=[(o, c) for o, c in zip(offsets, counts)]))

    def acked(self, m: str, ts: int, partition: int, offsets, type_: str = "accept", *, sent: int | None = None,
              error: str | None = None, mode: str = "explicit", topic: str = TOPIC) -> None:
        self.member(m, ShareAcknowledged(ts_ms=ts, source=m, topic=topic, partition=partition,
                                         acknowledged=list(offsets), type=type_, mode=mode,
                                         sent_ms=ts - 5 if sent is None else sent, error=error))

    def ack_sent(self, m: str, ts: int, partition: int, offsets, type_: str = "accept", *, mode: str = "explicit",
                 topic: str = TOPIC) -> None:
        self.member(m, ShareAckSent(ts_ms=ts, source=m, topic=topic, partition=partition, acknowledged=list(offsets),
                                    type=type_, mode=mode))

    def share_offsets(self, ts: int, offsets: dict[str, int | None] | None, *, group: str = GROUP,
                      error: str | None = None) -> None:
        """The harness's ``share_group_offsets`` at the drain's end (``offsets`` "topic-partition" -> start)."""
        detail = {"group_id": group, "error": error} if error else {"group_id": group, "offsets": offsets}
        self.harness(Action.SHARE_GROUP_OFFSETS, ts, group, **detail)

    def share_error(self, m: str, ts: int, code: str = "INVALID_RECORD_STATE") -> None:
        self.member(m, ClientError(ts_ms=ts, source=m, code=code, message="refused"))
