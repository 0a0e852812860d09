"""Named events of a run (step start and end, phase) that the harness log and the progress display
subscribe to, instead of the runner calling each of them.

A listener that raises is logged and passed over: watching a run must never break it. Ctrl-C
(KeyboardInterrupt) is no Exception and still ends the run as it should.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from ..history.events import Action
from ..history.harness import HarnessLog
from . import model as m

log = logging.getLogger(__name__)
T = TypeVar("T")
PhaseName = Literal["services", "effects", "judging", "reporting"]


@dataclass(frozen=True)
class StepEvent:
    """A step starting or ending: its place among the run's ``total`` steps (the final drain included)."""

    index: int
    total: int
    step: m.Step


@dataclass(frozen=True)
class PhaseStarted:
    name: PhaseName
    description: str


class EventHook(Generic[T]):
    """One named event: ``hook.subscribe(listener)``; ``hook.fire(payload)`` calls each listener in turn."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._listeners: list[Callable[[T], object]] = []

    def subscribe(self, listener: Callable[[T], object]) -> Callable[[T], object]:
        self._listeners.append(listener)
        return listener

    def unsubscribe(self, listener: Callable[[T], object]) -> None:
        self._listeners.remove(listener)

    def fire(self, payload: T) -> None:
        for listener in list(self._listeners):
            try:
                listener(payload)
            except Exception:  # noqa: BLE001 - a failing listener is reported, the run goes on
                log.exception("a listener of the %s event failed (the run goes on): %r", self.name, listener)


class RunEvents:
    """The events one run fires, each with its payload type."""

    def __init__(self) -> None:
        self.step_start: EventHook[StepEvent] = EventHook("step_start")
        self.step_end: EventHook[StepEvent] = EventHook("step_end")
        self.phase: EventHook[PhaseStarted] = EventHook("phase")


@contextmanager
def steps_recorded(events: RunEvents, harness: HarnessLog) -> Iterator[None]:
    """While open, every step's start and end goes to the harness log, with the step as run."""

    def started(e: StepEvent) -> None:
        harness.record(Action.STEP_START, e.step.kind, index=e.index, step=e.step.model_dump(mode="json"))

    def ended(e: StepEvent) -> None:
        harness.record(Action.STEP_END, e.step.kind, index=e.index)

    events.step_start.subscribe(started)
    events.step_end.subscribe(ended)
    try:
        yield
    finally:
        events.step_start.unsubscribe(started)
        events.step_end.unsubscribe(ended)
