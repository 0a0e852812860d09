"""The final drain: after the load stops, wait until the group has processed every record written.

A live tracker reading the members' saved histories: it feeds this wait only, never a verdict
(lost records are judged later by the analysis from the same files).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import KafkaException

from ..admin.kafka_admin import KafkaAdmin
from ..errors import WaitAborted
from ..fleet.share import ShareSettlement
from ..history.events import Processed, event_name, now_ms
from ..history.tail import HistoryTail, markers
from ..run.layout import RunDir
from ..waits import wait_until

log = logging.getLogger(__name__)

_PROCESSED = markers(Processed)  # the only events the drain reads
PROCESSED = event_name(Processed)


class ProcessedTracker:
    """Highest processed offset per partition over all member histories, read incrementally."""

    def __init__(self, run_dir: RunDir) -> None:
        self.run_dir = run_dir
        self._tails: dict[Path, HistoryTail] = {}
        self.highest: dict[tuple[str, int], int] = {}
        self.records = 0

    def refresh(self) -> None:
        for path in sorted(self.run_dir.members.glob("*.jsonl")):
            for ev in self._tails.setdefault(path, HistoryTail(path, _PROCESSED)).new_events():
                if ev.get("name") == PROCESSED:
                    key = (ev["topic"], ev["partition"])
                    self.highest[key] = max(self.highest.get(key, -1), ev["last_offset"])
                    self.records += ev["count"]


Gone = Callable[[], "str | None"]  # why no member is left to process anything (None while one may)


def _end_offsets(bootstrap_servers: str, topics: list[str]) -> dict[tuple[str, int], int]:
    with KafkaAdmin(bootstrap_servers) as admin:  # closed here, not left to a garbage collection (KafkaAdmin.close)
        return admin.end_offsets(topics)


class _EndOffsets:
    """The partitions' end offsets, asked of the brokers until they answer: a drain while they are out of reach (a
    broker the scenario stopped and never started again) waits for them within its timeout, and then ends
    incomplete saying why, a finding like any drain that cannot finish, not the run's error."""

    def __init__(self, bootstrap_servers: str, topics: list[str]) -> None:
        self.bootstrap_servers, self.topics = bootstrap_servers, topics
        self.value: dict[tuple[str, int], int] | None = None
        self.error: str | None = None

    def get(self) -> dict[tuple[str, int], int] | None:
        if self.value is None:
            try:
                self.value = _end_offsets(self.bootstrap_servers, self.topics)
            except KafkaException as exc:
                self.error = str(exc)[:300]
                log.warning("drain: the brokers did not answer for the topics' end offsets: %s", self.error)
        return self.value


def drain(run_dir: RunDir, bootstrap_servers: str, topics: list[str], timeout_s: float,
          gone: Gone | None = None) -> dict[str, object]:
    """Wait until every partition's records up to its end offset were processed by some member.

    Returns what is still missing at the end (empty on success); a timeout does not raise, because
    a drain that cannot finish is a finding (lost records, a stuck group) for the analysis to report.
    It ends early, just as incomplete, once ``gone`` says no member is left that could process anything (every
    program crashed for good, say), instead of waiting out its timeout.
    """
    ends = _EndOffsets(bootstrap_servers, topics)
    tracker = ProcessedTracker(run_dir)

    def missing() -> dict[str, int]:
        if (offsets := ends.get()) is None:
            return {"end offsets unknown": -1}
        tracker.refresh()
        return {f"{t}-{p}": end - 1 - tracker.highest.get((t, p), -1)
                for (t, p), end in offsets.items() if tracker.highest.get((t, p), -1) < end - 1}

    result = _wait_drained(missing, timeout_s, "every written record to be processed", "records behind", gone)
    if ends.value is None:
        return {"complete": False, "behind": {}, "ended": f"the brokers did not answer for the topics' end offsets "
                                                         f"within the drain's {timeout_s:g} s: {ends.error}"}
    return result


StartOffsets = Callable[[], dict[tuple[str, int], "int | None"]]
BROKER_ASK_EVERY_S = 5.0  # how often a drain still waiting asks the brokers for the share group's start offsets


def share_drain(run_dir: RunDir, bootstrap_servers: str, topics: list[str], timeout_s: float,
                delivery_count_limit: int, lock_ms: int, start_offsets: StartOffsets | None = None) -> dict[str, object]:
    """A share group's drain: wait until every record up to each partition's end offset is settled (accepted or
    rejected with the broker's consent, or archived at the delivery count limit), by the members' histories,
    or, by the brokers, below the group's start offset there (``start_offsets``, asked every
    ``BROKER_ASK_EVERY_S`` while records wait: every record below it is in a terminal state, so none will be
    delivered again; a member killed before its acknowledgement's answer leaves such a record unsettled in the
    histories). The start offset the brokers report is the one persisted with the share partition's last state
    write, which precedes that write's own move of it (Kafka 4.3.1 ``SharePartition.rollbackOrProcessStateUpdates``):
    a lower bound, so a partition is settled by the brokers when every offset the histories leave open is below it.

    The group reads from offset 0 (share.auto.offset.reset=earliest, set before its first member joined). Same
    result as ``drain``: a timeout is a finding, not an error; ``settled_by_brokers`` names the partitions the
    brokers' offsets settled."""
    ends = _end_offsets(bootstrap_servers, topics)
    settlement = ShareSettlement(delivery_count_limit, lock_ms)
    by_brokers: set[str] = set()
    asked = [time.monotonic()]

    def missing() -> dict[str, int]:
        settlement.read(sorted(run_dir.members.glob("*.jsonl")))
        pending = settlement.pending(ends, now_ms())
        if pending and start_offsets is not None and time.monotonic() - asked[0] >= BROKER_ASK_EVERY_S:
            asked[0] = time.monotonic()
            try:
                starts = start_offsets()
            except Exception as exc:  # noqa: BLE001 - the histories still decide
                log.warning("share drain: the brokers' start offsets unknown: %s", exc)
                starts = {}
            for key, offsets in pending.items():
                start = starts.get(key)
                if start is not None and max(offsets) < start:
                    by_brokers.add(f"{key[0]}-{key[1]}")
        return {f"{t}-{p}": len(offsets) for (t, p), offsets in pending.items() if f"{t}-{p}" not in by_brokers}

    result = _wait_drained(missing, timeout_s,
                           "every written record to be accepted, rejected or archived by the share group",
                           "records not settled")
    return {**result, "settled_by_brokers": sorted(by_brokers)} if by_brokers else result


def _wait_drained(missing: Callable[[], dict[str, int]], timeout_s: float, what: str,
                  behind: str, gone: Gone | None = None) -> dict[str, object]:
    """Wait until ``missing()`` (partition -> records left) is empty; a timeout is a finding, not an error, and
    so is the end of every member (``gone``), which ends the wait at once with ``ended`` saying why."""
    try:
        wait_until(lambda: not missing(), timeout_s=timeout_s, interval_s=0.5, what=what,
                   diagnostics=lambda: f"{behind} per partition: {missing()}", abort=gone)
        return {"complete": True, "behind": {}}
    except TimeoutError as exc:
        log.warning("drain incomplete: %s", exc)
        return {"complete": False, "behind": missing()}
    except WaitAborted as exc:
        log.warning("drain incomplete: %s", exc)
        return {"complete": False, "behind": missing(), "ended": str(exc).splitlines()[0][:300]}
