"""Kafka Streams instances in the fleet: their state as their histories tell it, for the waits.

A Streams instance's main consumer is known to the brokers as ``<client.id>-StreamThread-<n>-consumer``; the
fleet names it by its ``client.id`` (the member's name). A group on the streams protocol (KIP-1071) is not
listed by the consumer-group admin API, so the fleet judges it stable from the histories alone
(``Fleet.wait_streams_stable``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..history.tail import HistoryTail
from ..members.java.thread_dump import dump_reader

_STREAM_THREAD_CONSUMER = re.compile(r"-StreamThread-\d+-consumer$")
_STREAM_THREAD = re.compile(r"-StreamThread-\d+$")
_MARKERS = (b'"streams_state"', b'"started"', b'"streams_tasks"', b'"streams_restore"')


def instance_name(client_id: str) -> str:
    """The member name of a Streams instance's main consumer (its client.id without the thread's suffix); any
    other client id as it is."""
    return _STREAM_THREAD_CONSUMER.sub("", client_id)


def instance_of_thread(instance_id: str, client_id: str) -> str:
    """The group.instance.id a static Streams instance was given, from its main consumer's: a stream thread's
    consumer joins as ``<group.instance.id>-<thread index>`` (StreamThread.create); any other member's as it is."""
    if _STREAM_THREAD_CONSUMER.search(client_id):
        base, _, thread = instance_id.rpartition("-")
        if base and thread.isdigit():
            return base
    return instance_id


def not_running(states: dict[str, str | None], unknown: str | None = None) -> list[str]:
    """A line per Streams instance (by member name) whose latest state is not RUNNING; one whose history shows no
    state yet is listed as ``unknown`` says, or left out when it is None (a member that is not a Streams instance
    shows none)."""
    return [f"{name}: Streams instance {state or unknown}, not RUNNING" for name, state in sorted(states.items())
            if state != "RUNNING" and (state is not None or unknown is not None)]


@dataclass
class _Restoring:
    """One store partition's restoration not ended yet, by the instance's restore listener."""

    started_ms: int
    start_offset: int | None
    end_offset: int | None
    position: int | None = None
    records: int = 0


@dataclass
class _Instance:
    """What a Streams instance's history says of where it is: for a wait's diagnostics."""

    state: str | None = None
    since_ms: int | None = None
    previous: str | None = None
    active: list[str] = field(default_factory=list)
    standby: list[str] = field(default_factory=list)
    restoring: dict[tuple[str, str, int], _Restoring] = field(default_factory=dict)

    def apply(self, event: dict) -> None:
        name = event.get("name")
        if name == "streams_state":
            self.previous, self.state, self.since_ms = self.state, str(event["to_state"]), int(event["ts_ms"])
        elif name == "streams_tasks":
            self.active = [t["task"] for t in event.get("active", [])]
            self.standby = [t["task"] for t in event.get("standby", [])]
        elif name == "streams_restore":
            key = (str(event["store"]), str(event["topic"]), int(event["partition"]))
            phase = event.get("phase")
            if phase == "start":
                self.restoring[key] = _Restoring(int(event["ts_ms"]), event.get("start_offset"),
                                                 event.get("end_offset"))
            elif phase == "batch" and key in self.restoring:
                self.restoring[key].position = event.get("end_offset")
                self.restoring[key].records += int(event.get("records") or 0)
            elif phase in ("end", "suspended"):
                self.restoring.pop(key, None)

    def account(self, now_ms: int) -> str:
        """Where the instance is, in a line: its state and since when, its tasks, its open restorations."""
        if self.state is None:
            return "no KafkaStreams state in its history yet"
        parts = [f"{self.state} for {(now_ms - (self.since_ms or now_ms)) / 1000:.1f} s (before: {self.previous})",
                 f"active tasks by its thread metadata: {', '.join(self.active) or '-'}"
                 + (f"; standby: {', '.join(self.standby)}" if self.standby else "")]
        if self.restoring:
            parts.append("restoring: " + "; ".join(
                f"{store} from {topic}-{partition} offsets {r.start_offset} to {r.end_offset}, at {r.position} "
                f"({r.records} records) for {(now_ms - r.started_ms) / 1000:.1f} s"
                for (store, topic, partition), r in sorted(self.restoring.items())))
        else:
            parts.append("no restoration open")
        return "; ".join(parts)


STATUS_LOG_LINES = 400  # how far back in an instance's log its last group status is looked for
# The streams group heartbeat's statuses as the client logs them (StreamsGroupHeartbeatRequestManager, Kafka 4.1+):
# why the broker holds the instance back (internal topics missing, assignment delayed, shutdown requested...).
_GROUP_STATUS = re.compile(r"Membership is in the following statuses: (?P<statuses>.*?)\s*\(org\.apache\.kafka")


def last_group_status(log_lines: list[str]) -> str | None:
    """The streams group's last statuses to an instance, from its client's log, with their time; None if none."""
    for line in reversed(log_lines):
        if found := _GROUP_STATUS.search(line):
            return f"{line[1:24]}: {found['statuses']}" if line.startswith("[") else found["statuses"]
    return None


# Where a Streams instance's stream threads stand, by the last complete JVM thread dump among a log's lines.
stream_threads = dump_reader(_STREAM_THREAD, "stream thread")


class StreamsStates:
    """The latest KafkaStreams state each instance's history shows, and whether it runs on the streams protocol (a
    team's Streams program chooses its protocol itself: its ``started`` tells); for diagnostics, where each
    instance is (``account``)."""

    def __init__(self) -> None:
        self._followers: dict[Path, HistoryTail] = {}
        self._instances: dict[Path, _Instance] = {}
        self._on_protocol: set[Path] = set()

    def _read(self, path: Path) -> _Instance:
        follower = self._followers.setdefault(path, HistoryTail(path, _MARKERS))
        instance = self._instances.setdefault(path, _Instance())
        for event in follower.new_events():
            if event.get("name") == "started":
                if event.get("group_protocol") == "streams":
                    self._on_protocol.add(path)
            else:
                instance.apply(event)
        return instance

    def state(self, path: Path) -> str | None:
        return self._read(path).state

    def account(self, path: Path, now_ms: int) -> str:
        """A line on where the instance is by its history: state and since when, tasks, open restorations."""
        return self._read(path).account(now_ms)

    def on_streams_protocol(self, path: Path) -> bool:
        """Whether the history's ``started`` says group_protocol streams (KIP-1071)."""
        self._read(path)
        return path in self._on_protocol
