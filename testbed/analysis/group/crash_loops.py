"""Crashes of the user's programs and the crash loops they make: pure Python over the harness's ``member_crash``
actions, the ownership intervals and what was processed between the crashes.

A crash is on the partitions its member held when it died: its ownership intervals that end with its crash, and
those its close on the way out revoked (a ``finally: consumer.close()``: a revoke at shutdown, after which the
member crashed, not a hand-over of a live member). A
**crash loop** is a partition on which the program died at least ``LOOP_CRASHES`` times in a row: no member
processed any of its records between one of those crashes and the next (a poison record crashes every instance
that reads it, and the group keeps handing the partition on). A partition whose crashes are all among another
loop's, which has more, was only held beside the poisoned one: no loop of its own (its pause stays in the
pauses). The loop is *ongoing* when nothing was processed
on the partition after its last crash either, and the drain did not find it caught up: the partition is stuck
at its first unprocessed record, the one
the programs were reading when they died (by the history: the partition's highest processed offset plus one; a
program that polls records one at a time dies on exactly that record, one that polls batches somewhere in the
batch that begins there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...history.events import Action
from ..intervals import OwnershipInterval

TP = tuple[str, int]
LOOP_CRASHES = 2  # crashes in a row on one partition that make a loop
# (partition, after_ms, until_ms or None for "to the end"): whether any member processed a record of it then
Progressed = Callable[[TP, int, int | None], bool]


@dataclass(frozen=True)
class Crash:
    """One crash of a program, from its ``member_crash`` action."""

    member: str
    ts_ms: int
    exit_code: int | None
    signal: str | None
    exception_type: str | None
    message: str | None
    restart_in_s: float | None  # None: not restarted (``restart_refused`` says why)
    restart_refused: str | None
    log_tail: tuple[str, ...] = ()
    partitions: tuple[TP, ...] = ()  # held when it died

    @property
    def how(self) -> str:
        """'exit code 1' or 'signal SIGSEGV'."""
        return f"signal {self.signal}" if self.signal else f"exit code {self.exit_code}"


@dataclass
class CrashLoop:
    """Crashes in a row on one partition with no record of it processed between them."""

    topic: str
    partition: int
    crashes: list[Crash] = field(default_factory=list)
    ongoing: bool = False  # nothing processed on the partition after the last crash either

    @property
    def members(self) -> list[str]:
        return list(dict.fromkeys(c.member for c in self.crashes))

    @property
    def restarts(self) -> int:
        return sum(1 for c in self.crashes if c.restart_in_s is not None)

    @property
    def exception(self) -> Crash | None:
        """The last crash whose output showed an exception: the one the reader needs."""
        return next((c for c in reversed(self.crashes) if c.exception_type), None)


def crashes(actions: Iterable[dict[str, Any]], intervals: Sequence[OwnershipInterval],
            shutdown_revokes: Iterable[tuple[str, str, int]] = ()) -> list[Crash]:
    """Every ``member_crash`` in time order, each with the partitions its member held when it died.
    ``shutdown_revokes``: (member, topic, partition) of the revocations at shutdown (``ownership.revocations``'s
    category ``shutdown``); a crashed member's are its close's on the way out."""
    held: dict[str, list[TP]] = {}
    for iv in intervals:
        if iv.end_reason == "crashed":
            held.setdefault(iv.member, []).append((iv.topic, iv.partition))
    for member, topic, partition in shutdown_revokes:
        held.setdefault(member, []).append((topic, partition))
    out = []
    for h in actions:
        if h["kind"] != Action.MEMBER_CRASH or not h.get("target"):
            continue
        detail, member = h.get("detail") or {}, h["target"]
        exception = detail.get("exception") or {}
        out.append(Crash(member, int(h["ts_ms"]), detail.get("exit_code"), detail.get("signal"),
                         exception.get("type"), exception.get("message"), detail.get("restart_in_s"),
                         detail.get("restart_refused"), tuple(detail.get("log_tail") or ()),
                         tuple(sorted(set(held.get(member, ()))))))
    return sorted(out, key=lambda c: c.ts_ms)


def progress_windows(found: Sequence[Crash]) -> list[tuple[TP, int, int | None]]:
    """The spans whose processing decides the loops: per partition, from each crash on it to the next (the last:
    to the end). What ``crash_loops``'s ``progressed`` is asked about, to be answered from the processed records."""
    out: list[tuple[TP, int, int | None]] = []
    for tp, on in _by_partition(found).items():
        for i, crash in enumerate(on):
            out.append((tp, crash.ts_ms, on[i + 1].ts_ms if i + 1 < len(on) else None))
    return out


def crash_loops(found: Sequence[Crash], progressed: Progressed,
                caught_up: Callable[[TP], bool] = lambda tp: False) -> list[CrashLoop]:
    """The crash loops, longest first: runs of at least ``LOOP_CRASHES`` crashes on one partition with no
    processing of it in between. ``caught_up``: whether a partition had nothing left to process when the drain
    ended; nothing processed after its last crash then means nothing to process, not a partition stuck (so the loop
    is not ongoing)."""
    loops: list[CrashLoop] = []
    for tp, on in _by_partition(found).items():
        run: list[Crash] = []
        for i, crash in enumerate(on):
            run.append(crash)
            last = i + 1 == len(on)
            moved = progressed(tp, crash.ts_ms, None if last else on[i + 1].ts_ms)
            if moved or last:
                if len(run) >= LOOP_CRASHES:
                    loops.append(CrashLoop(tp[0], tp[1], run, ongoing=last and not moved and not caught_up(tp)))
                run = []
    loops = [loop for loop in loops if not _bystander(loop, loops)]
    return sorted(loops, key=lambda loop: (-len(loop.crashes), loop.topic, loop.partition))


def _bystander(loop: CrashLoop, loops: Sequence[CrashLoop]) -> bool:
    """A partition that only happened to be held by programs dying in another partition's loop: each of its
    crashes is one of that loop's, which has more (a member holding the poisoned partition and this one dies
    with both; whoever gets the poisoned one alone dies too). Equal sets cannot be told apart: both stay."""
    mine = {(c.member, c.ts_ms) for c in loop.crashes}
    return any(other is not loop and mine < {(c.member, c.ts_ms) for c in other.crashes} for other in loops)


def alike(loops: Sequence[CrashLoop]) -> list[list[CrashLoop]]:
    """The loops made of the very same crashes (two or more each, in the loops' order): programs that died holding
    these partitions together every time, so which partition's records kill them cannot be told from the
    history (a program that crashes whatever it reads makes such loops on every partition it holds)."""
    groups: dict[frozenset[tuple[str, int]], list[CrashLoop]] = {}
    for loop in loops:
        groups.setdefault(frozenset((c.member, c.ts_ms) for c in loop.crashes), []).append(loop)
    return [group for group in groups.values() if len(group) > 1]


def _by_partition(found: Sequence[Crash]) -> dict[TP, list[Crash]]:
    out: dict[TP, list[Crash]] = {}
    for crash in sorted(found, key=lambda c: c.ts_ms):
        for tp in crash.partitions:
            out.setdefault(tp, []).append(crash)
    return out


__all__ = ["Crash", "CrashLoop", "LOOP_CRASHES", "alike", "crash_loops", "crashes", "progress_windows"]
