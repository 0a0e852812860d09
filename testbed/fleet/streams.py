"""Kafka Streams instances in the fleet: their state as their histories tell it, for the waits.

A Streams instance's main consumer is known to the brokers as ``<client.id>-StreamThread-<n>-consumer``; the
fleet names it by its ``client.id`` (the member's name). A group on the streams protocol (KIP-1071) is not
listed by the consumer-group admin API, so the fleet judges it stable from the histories alone
(``Fleet.wait_streams_stable``).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..history.tail import HistoryTail

_STREAM_THREAD_CONSUMER = re.compile(r"-StreamThread-\d+-consumer$")
_MARKERS = (b'"streams_state"', b'"started"')


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


class StreamsStates:
    """The latest KafkaStreams state each instance's history shows, and whether it runs on the streams protocol (a
    team's Streams program chooses its protocol itself: its ``started`` tells)."""

    def __init__(self) -> None:
        self._followers: dict[Path, HistoryTail] = {}
        self._state: dict[Path, str] = {}
        self._on_protocol: set[Path] = set()

    def _read(self, path: Path) -> None:
        follower = self._followers.setdefault(path, HistoryTail(path, _MARKERS))
        for event in follower.new_events():
            if event.get("name") == "streams_state":
                self._state[path] = str(event["to_state"])
            elif event.get("name") == "started" and event.get("group_protocol") == "streams":
                self._on_protocol.add(path)

    def state(self, path: Path) -> str | None:
        self._read(path)
        return self._state.get(path)

    def on_streams_protocol(self, path: Path) -> bool:
        """Whether the history's ``started`` says group_protocol streams (KIP-1071)."""
        self._read(path)
        return path in self._on_protocol
