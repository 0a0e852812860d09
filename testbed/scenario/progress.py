"""A live progress line for long runs: step, group state and members, records acked and processed so far.

It follows the runner's events (steps, phases), reads the same saved member histories the drain
reads and asks the admin API for the group state; it feeds the display only, never a verdict.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .drain import ProcessedTracker
from .events import PhaseStarted, StepEvent
from .runner import ScenarioRunner


class AckCounter:
    """Records the load's producers had acknowledged so far: the lines of their ack files, counted as they grow
    (one line per record; nothing parsed)."""

    def __init__(self, acks: Path) -> None:
        self.acks = acks
        self._read: dict[Path, int] = {}
        self.records = 0

    def refresh(self) -> None:
        for path in sorted(self.acks.glob("*.jsonl")):
            with path.open("rb") as f:
                f.seek(self._read.get(path, 0))
                data = f.read()
            complete = data.rfind(b"\n") + 1
            self._read[path] = self._read.get(path, 0) + complete
            self.records += data.count(b"\n", 0, complete)


class ProgressDisplay:
    def __init__(self, runner: ScenarioRunner, console: Console) -> None:
        self.runner = runner
        self.console = console
        self.step = "starting cluster and fleet"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)
        self._tracker: ProcessedTracker | None = None
        self._acks: AckCounter | None = None
        self._last: tuple[float, int] | None = None
        self._started = time.monotonic()
        runner.events.step_start.subscribe(self.on_step)
        runner.events.phase.subscribe(self.on_phase)

    def on_step(self, event: StepEvent) -> None:
        self.step = f"step {event.index + 1}/{event.total}: {event.step.kind}"

    def on_phase(self, event: PhaseStarted) -> None:
        self.step = event.description

    def _line(self) -> Text:
        ctx = self.runner.context
        group, rate, records = "-", "-", "acked - | processed -"
        if ctx is not None and not self.runner.finished:
            try:
                view = ctx.fleet.describe()
                group = f"{view.state.lower()} ({len(view.members)} members)"
            except Exception:  # noqa: BLE001 - the group may not exist yet
                group = "not formed"
            if self._tracker is None:
                self._tracker = ProcessedTracker(ctx.run_dir)
                self._acks = AckCounter(ctx.run_dir.acks)
            self._tracker.refresh()
            self._acks.refresh()
            now = time.monotonic()
            if self._last is not None and now > self._last[0]:
                rate = f"{(self._tracker.records - self._last[1]) / (now - self._last[0]):.0f}/s"
            self._last = (now, self._tracker.records)
            records = f"acked {self._acks.records:,} | processed {self._tracker.records:,} ({rate})"
        elapsed = time.monotonic() - self._started
        return Text(f"[{elapsed:5.0f}s] {self.step} | group: {group} | {records}")

    def _loop(self) -> None:
        with Live(self._line(), console=self.console, refresh_per_second=2, transient=True) as live:
            while not self._stop.wait(1.0):
                live.update(self._line())

    def __enter__(self) -> "ProgressDisplay":
        if self.console.is_terminal:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
