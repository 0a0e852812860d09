"""Ownership intervals, and pure interval math on half-open millisecond spans ``[start, end)``.

Kept free of Spark and pandas so property tests can hammer it quickly; the control-plane part of
the analysis (ownership, duplicate ownership, pauses) is built from these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, order=True)
class Span:
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"span end {self.end} is before its start {self.start}")

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class OwnershipInterval:
    """A member owned a partition from ``start_ms`` to ``end_ms`` (group.ownership builds them from callbacks)."""

    topic: str
    partition: int
    member: str
    start_ms: int
    end_ms: int
    end_reason: str

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True)
class OwnerSpan:
    """One member's ownership of one partition."""

    member: str
    start: int
    end: int


@dataclass(frozen=True)
class SharedSpan:
    """A maximal span during which two or more distinct members own the same partition."""

    start: int
    end: int
    members: frozenset[str]

    @property
    def length(self) -> int:
        return self.end - self.start


def overlap_ms(a: Span, b: Span) -> int:
    """Length of the common part of two spans (0 if they only touch or are apart)."""
    return max(0, min(a.end, b.end) - max(a.start, b.start))


def merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, disjoint spans covering the same time; touching spans are joined."""
    out: list[Span] = []
    for s in sorted(spans):
        if s.length == 0:
            continue
        if out and s.start <= out[-1].end:
            if s.end > out[-1].end:
                out[-1] = Span(out[-1].start, s.end)
        else:
            out.append(s)
    return out


def union_length(spans: Iterable[Span]) -> int:
    return sum(s.length for s in merge(spans))


def intersection(spans: Sequence[Span]) -> Span | None:
    """The span common to all, or None if they share no time (or none are given)."""
    if not spans:
        return None
    start = max(s.start for s in spans)
    end = min(s.end for s in spans)
    return Span(start, end) if end > start else None


def shared_ownership(owners: Iterable[OwnerSpan]) -> list[SharedSpan]:
    """Maximal spans where >= 2 distinct members own the partition, with every member involved.

    A sweep over start/end points; at equal times ends are applied before starts so that a hand-over
    at the same millisecond (revoke at t, assign at t) is not counted as shared.
    """
    points: list[tuple[int, int, str]] = []
    for o in owners:
        if o.end > o.start:
            points.append((o.start, 1, o.member))
            points.append((o.end, 0, o.member))
    points.sort()
    holding: dict[str, int] = {}
    episodes: list[SharedSpan] = []
    open_start: int | None = None
    involved: set[str] = set()
    for ts, is_start, member in points:
        if is_start:
            holding[member] = holding.get(member, 0) + 1
        else:
            holding[member] -= 1
            if holding[member] == 0:
                del holding[member]
        if len(holding) >= 2:
            if open_start is None:
                open_start = ts
                involved = set()
            involved.update(holding)
        elif open_start is not None:
            if ts > open_start:
                episodes.append(SharedSpan(open_start, ts, frozenset(involved)))
            open_start = None
    return episodes


def percentile(values: Sequence[float], q: float) -> float | None:
    """Percentile with linear interpolation (numpy's default, Spark's ``percentile``); None if empty."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))
