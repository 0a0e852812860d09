"""How far a node's wall clock is from this machine's: the minimum-round-trip estimate.

One exchange: this machine reads its clock (t0), the node reads its own (t1), this machine reads its clock again
(t2). Were the two legs equally long, the node's clock would read t1 when this one read (t0 + t2) / 2, so the
offset is t1 - (t0 + t2) / 2, wrong by at most half the round trip t2 - t0. Of several exchanges the one with the
shortest round trip bounds the error most tightly."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
import time


@dataclass(frozen=True)
class ClockExchange:
    sent: float  # this machine's clock when it asked, seconds
    node: float  # the node's clock when it answered
    received: float  # this machine's clock when the answer came

    @property
    def round_trip_s(self) -> float:
        return self.received - self.sent


@dataclass(frozen=True)
class ClockOffset:
    """The node's clock minus this machine's, and how wrong that may be (both in ms)."""

    offset_ms: float
    uncertainty_ms: float
    exchanges: int

    def detail(self) -> dict[str, float | int]:
        return {"offset_ms": round(self.offset_ms, 3), "uncertainty_ms": round(self.uncertainty_ms, 3),
                "exchanges": self.exchanges}


def estimate_offset(exchanges: Sequence[ClockExchange]) -> ClockOffset:
    """The offset from the exchange with the shortest round trip; its uncertainty is half that round trip."""
    if not exchanges:
        raise ValueError("at least one clock exchange is needed")
    best = min(exchanges, key=lambda e: e.round_trip_s)
    if best.round_trip_s < 0:
        raise ValueError(f"a round trip cannot be negative: {best}")
    return ClockOffset(offset_ms=(best.node - (best.sent + best.received) / 2) * 1000,
                       uncertainty_ms=best.round_trip_s / 2 * 1000, exchanges=len(exchanges))


def measure_offset(read_node_clock: Callable[[], float], exchanges: int = 8) -> ClockOffset:
    """``exchanges`` exchanges with ``read_node_clock`` (a call that returns the node's time.time())."""
    samples = []
    for _ in range(exchanges):
        sent = time.time()
        node = read_node_clock()
        samples.append(ClockExchange(sent, node, time.time()))
    return estimate_offset(samples)
