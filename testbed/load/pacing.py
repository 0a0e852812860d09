"""Schedule-based pacing of one Locust user: how many records are due now, and how long to wait.

Locust's ``constant_throughput`` waits a fixed interval minus the task's time and never catches
up, so a user that is late once stays behind for good, and one record per task costs a task
switch per record. A schedule anchored at the user's start instead says, at any moment, how many
records should have been sent by now: each task sends all that are due (a burst when the loop
fell behind) and then waits for the next one. The achieved rate thus matches the target wherever
the machine can keep up, and falls short visibly (never silently) where it cannot.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError


@dataclass
class Pacer:
    """``rate`` records/s from ``start`` until ``end`` (seconds of a monotonic clock).

    Exactly ``round((end - start) * rate)`` records are scheduled.

    ``min_wait_s`` bounds the task rate, so at high rates tasks send small bursts rather than
    switching greenlets per record; ``max_burst`` bounds the catch-up after a stall (the records
    beyond it are dropped from the schedule, and the shortfall shows in the achieved rate).
    """

    rate: float
    start: float
    end: float = float("inf")
    min_wait_s: float = 0.002
    max_burst: int = 1000

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ConfigError(f"rate must be > 0 records/s, got {self.rate!r}")
        if self.max_burst < 1:
            raise ConfigError(f"max_burst must be >= 1, got {self.max_burst!r}")
        self.sent = 0

    def due(self, now: float) -> int:
        """Records to send now, and counts them as sent."""
        # Record k (from 0) is due at start + k / rate; the one at `start` is due at once.
        target = min(self.scheduled, int((now - self.start) * self.rate) + 1)
        behind = target - self.sent
        if behind > self.max_burst:
            # Give up the part of the schedule that a stall made impossible; no unbounded bursts.
            self.sent = target - self.max_burst
            behind = self.max_burst
        n = max(0, behind)
        self.sent += n
        return n

    @property
    def scheduled(self) -> int:
        """Records in the whole schedule (unbounded schedules: a very large number)."""
        span = self.end - self.start
        return round(span * self.rate) if span != float("inf") else 2**62

    @property
    def finished(self) -> bool:
        return self.sent >= self.scheduled

    def wait_s(self, now: float) -> float:
        """Seconds until the next record is due, at least ``min_wait_s``."""
        if self.finished:
            return max(self.min_wait_s, 1.0)
        next_due = self.start + self.sent / self.rate
        return max(self.min_wait_s, next_due - now)
