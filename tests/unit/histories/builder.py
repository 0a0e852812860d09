"""Write a tiny run directory event by event through the real history contract (typed events)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from testbed.history import HistoryWriter
from testbed.history.events import (
    Ack,
    Action,
    Assigned,
    Committed,
    CommittedOffset,
    HarnessAction,
    HostSample,
    Lost,
    Processed,
    Revoked,
    Started,
    Stopped,
)
from testbed.run.layout import RunDir

TOPIC = "t"


class HistoryBuilder:
    def __init__(self, root: Path, *, acks: bool = True) -> None:
        self.run = RunDir(root).create()
        self._writers: dict[Path, HistoryWriter] = {}
        self._next_offset: dict[int, int] = defaultdict(int)
        self._acks = acks
        # members whose clock runs ahead of the harness's by these ms (a node of a Ray cluster): their events are
        # written with that much later timestamps
        self.ahead_ms: dict[str, int] = {}

    def _w(self, path: Path) -> HistoryWriter:
        if path not in self._writers:
            self._writers[path] = HistoryWriter(path)
        return self._writers[path]

    def member(self, m: str, event) -> None:
        # Made-up wall times with a real monotonic stamp would look like a clock step: leave it out.
        self._w(self.run.member_log(m)).write(event.model_copy(update={
            "mono_ms": None, "ts_ms": event.ts_ms + self.ahead_ms.get(m, 0)}))

    def harness(self, kind: Action, ts: int, target: str | None = None, **detail) -> None:
        self._w(self.run.harness_log).write(HarnessAction(ts_ms=ts, kind=kind, target=target, detail=detail))

    def started(self, m: str, ts: int, *, assignors=("range",), commit_mode="on_revoke", protocol="classic", instance=None) -> None:
        self.member(m, Started(ts_ms=ts, source=m, client="kafka-python", client_version="3.0", group_id="g",
                               topics=[TOPIC], assignors=list(assignors), group_protocol=protocol,
                               commit_mode=commit_mode, pid=1, group_instance_id=instance))

    def assigned(self, m: str, ts: int, parts) -> None:
        self.member(m, Assigned(ts_ms=ts, source=m, partitions=[(TOPIC, p) for p in parts]))

    def revoked(self, m: str, ts: int, parts) -> None:
        self.member(m, Revoked(ts_ms=ts, source=m, partitions=[(TOPIC, p) for p in parts]))

    def lost(self, m: str, ts: int, parts) -> None:
        self.member(m, Lost(ts_ms=ts, source=m, partitions=[(TOPIC, p) for p in parts]))

    def stopped(self, m: str, ts: int, reason: str = "clean") -> None:
        self.member(m, Stopped(ts_ms=ts, source=m, reason=reason))

    def committed(self, m: str, ts: int, partition: int, offset: int, trigger: str = "auto") -> None:
        self.member(m, Committed(ts_ms=ts, source=m, trigger=trigger,
                                 offsets=[CommittedOffset(topic=TOPIC, partition=partition, offset=offset)]))

    def produce(self, partition: int, n: int, ts: int) -> tuple[int, int]:
        """Ack ``n`` new records of a partition produced at ``ts``; returns their offset range."""
        first = self._next_offset[partition]
        self._next_offset[partition] += n
        if self._acks:
            w = self._w(self.run.ack_log("producer-0"))
            for off in range(first, first + n):
                w.write(Ack(ts_ms=ts + 1, source="producer-0", topic=TOPIC, partition=partition, offset=off,
                            key=f"k{partition}", seq=off, produce_ts_ms=ts))
        return first, first + n - 1

    def processed(self, m: str, ts: int, partition: int, first: int, last: int, produce_ts: int | None = None) -> None:
        self.member(m, Processed(ts_ms=ts, source=m, topic=TOPIC, partition=partition, first_offset=first,
                                 last_offset=last, count=last - first + 1,
                                 produce_ts_min_ms=produce_ts, produce_ts_max_ms=produce_ts))

    def produce_and_process(self, m: str, ts: int, partition: int, n: int = 10, latency: int = 50) -> tuple[int, int]:
        first, last = self.produce(partition, n, ts - latency)
        self.processed(m, ts, partition, first, last, ts - latency)
        return first, last

    # ---- helpers for the invariant tests (tests/unit/test_invariants.py) ----

    def started_with_timeouts(self, m: str, ts: int, *, session_timeout_ms: int | None,
                              max_poll_interval_ms: int | None = None, commit_mode: str = "sync",
                              assignors=("cooperative-sticky",)) -> None:
        """A ``started`` event carrying the member's effective timeouts (None = the member could not tell)."""
        self.member(m, Started(ts_ms=ts, source=m, client="kafka-python", client_version="3.0", group_id="g",
                               topics=[TOPIC], assignors=list(assignors), commit_mode=commit_mode, pid=1,
                               session_timeout_ms=session_timeout_ms, max_poll_interval_ms=max_poll_interval_ms))

    def commit_result(self, m: str, ts: int, offsets: dict[int, int], *, error: str | None = None,
                      trigger: str = "batch") -> None:
        """One ``committed`` event of several partitions ({partition: next offset}), failed if ``error``."""
        self.member(m, Committed(ts_ms=ts, source=m, trigger=trigger, error=error,
                                 offsets=[CommittedOffset(topic=TOPIC, partition=p, offset=o) for p, o in offsets.items()]))

    def host_sample(self, ts: int, busy: float, *, interval_ms: int = 250, cpu_wait: float | None = 0.0) -> None:
        """One host sample over (ts - interval_ms, ts]: ``busy`` % of all cores, a task waiting ``cpu_wait`` %."""
        self._w(self.run.host_log).write(HostSample(
            ts_ms=ts, mono_ms=None, interval_ms=interval_ms, cores=2, cpu_busy_pct=busy, cpu_steal_pct=0.0,
            cpu_iowait_pct=0.0, run_queue=1, load1=1.0, mem_available_pct=60.0, cpu_pressure_pct=cpu_wait,
            memory_pressure_pct=0.0, brokers_cpu_pct=30.0, members_cpu_pct=20.0, load_cpu_pct=5.0,
            analysis_cpu_pct=0.0, harness_cpu_pct=1.0))

    def close(self) -> RunDir:
        for w in self._writers.values():
            w.close()
        return self.run
