"""Ownership intervals, who owned a partition at once with whom, and percentiles: pure math on half-open
millisecond spans ``[start, end)``.

Kept free of Spark and pandas so property tests can hammer it quickly; the control-plane part of
the analysis (ownership, duplicate ownership, pauses) is built from these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


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


def disjoint_per_owner(intervals: Iterable[OwnershipInterval]) -> list[tuple[OwnershipInterval, int]]:
    """Each interval with its effective end: one member's intervals of one partition made disjoint, so that a
    time belongs to at most one of them. Where one ends at the millisecond the next starts (a revoke and the
    next assignment in one callback's millisecond), that millisecond belongs to the later one. In order of
    member, topic, partition and start."""
    by_owner: dict[tuple[str, str, int], list[OwnershipInterval]] = {}
    for iv in intervals:
        by_owner.setdefault((iv.member, iv.topic, int(iv.partition)), []).append(iv)
    out: list[tuple[OwnershipInterval, int]] = []
    for _, ivs in sorted(by_owner.items()):
        ivs = sorted(ivs, key=lambda i: (i.start_ms, i.end_ms))
        for i, iv in enumerate(ivs):
            eff_end = iv.end_ms
            if i + 1 < len(ivs) and ivs[i + 1].start_ms <= eff_end:
                eff_end = ivs[i + 1].start_ms - 1
            out.append((iv, int(eff_end)))
    return out


@dataclass(frozen=True)
class Window:
    """A target's fault span, from the harness's actions: a member frozen or cut off, a broker down."""

    target: str
    start_ms: int
    end_ms: int
    kind: str = ""  # the action that opened it (broker_latency, broker_stop, ...)

    def overlaps(self, start: int, end: int) -> bool:
        return self.start_ms < end and start < self.end_ms


def paired_windows(harness: Sequence[Mapping[str, Any]], starts: Mapping[str, str], end_of_run: int,
                   grace_ms: int = 0) -> list[Window]:
    """Each start action of the harness's (in time order) paired with the next matching end action of the same
    target, ``grace_ms`` added to its end (open: the run's end)."""
    out: list[Window] = []
    for i, h in enumerate(harness):
        end_kind = starts.get(h["kind"])
        if end_kind is None or not h.get("target"):
            continue
        end = next((x["ts_ms"] for x in harness[i + 1:] if x["kind"] == end_kind and x.get("target") == h["target"]),
                   None)
        out.append(Window(h["target"], h["ts_ms"], end + grace_ms if end is not None else end_of_run, str(h["kind"])))
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Percentile with linear interpolation (numpy's default, Spark's ``percentile``); None if empty."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))
