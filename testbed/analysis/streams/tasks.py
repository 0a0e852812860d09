"""Kafka Streams tasks: which instance held each task, as active or as standby, over time (``streams_task_spans``),
and each move of an active task to another instance with its pause split in three (``streams_task_moves``).

A task is named by its id, ``<sub-topology>_<partition>``; its input partitions are those its instances listed for
it. The spans come from the instances' ``streams_tasks`` events (the thread metadata, which lists an active task
once it has restored and runs), a span ending at the next event without the task or at the instance's life's end.

A move is an input partition of a task whose owner (its ownership intervals, from the main consumer's
assignment) changes from one instance to another. For each:

- ``last_old_ms``: the old owner's last processing of the partition before the new owner's first;
- ``assigned_ms``: the new owner's assignment of the partition;
- ``restored_ms``: the end of the new owner's last restoration of the task's store partition (a store's changelog
  partition is its task's partition) that ended between the assignment and its first processing; the
  assignment when it restored nothing;
- ``first_new_ms``: the new owner's first processing of the partition after its assignment.

Its pause (``first_new - last_old``) splits into the assignment wait (``assigned - last_old``: the rebalance),
the restoration (``restored - assigned``) and the resumption (``first_new - restored``: from the store's readiness
to the first record). A part whose ends are not both in the history is left empty (the new owner never
processed the partition, the old one never had). ``held_as`` says what the new owner held of the task in the
second before its assignment: ``standby`` (a standby replica promoted), ``warm-up`` (classic protocol only: a
standby beyond the configured ``num_standby_replicas``, KIP-441's warm-up replica, which the classic assignor
places to move a task once it caught up) or ``none``. ``streams_warmups`` counts the standby copies an instance
took up while their task already had its configured number (copies handed over within a second, in one rebalance,
are one); unknown under the streams protocol, whose assignor places none. A move's ``phase`` is its rebalance
episode's: ``formation`` (the group forming: in the table, not in the figures), ``running`` or ``teardown``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from ..intervals import OwnershipInterval
from ..view.lives import MemberLife

SPAN_SCHEMA = pa.schema([("member", pa.string()), ("task", pa.string()), ("role", pa.string()),
                         ("start_ms", pa.int64()), ("end_ms", pa.int64())])
MOVE_SCHEMA = pa.schema(
    [("episode_id", pa.int64()), ("phase", pa.string()), ("task", pa.string()), ("topic", pa.string()),
     ("partition", pa.int64()), ("from_member", pa.string()), ("to_member", pa.string()), ("held_as", pa.string()),
     ("last_old_ms", pa.int64()), ("assigned_ms", pa.int64()),
     ("restored_ms", pa.int64()), ("first_new_ms", pa.int64()), ("assignment_wait_ms", pa.int64()),
     ("restoration_ms", pa.int64()), ("resumption_ms", pa.int64()), ("pause_ms", pa.int64()),
     ("restored_records", pa.int64())])

TP = tuple[str, int]


@dataclass(frozen=True)
class TasksEvent:
    """One ``streams_tasks`` event: the instance's tasks after a change, each with its input partitions."""

    member: str
    ts_ms: int
    active: Mapping[str, frozenset[TP]]
    standby: Mapping[str, frozenset[TP]]


def task_partition(task: str) -> int | None:
    """The partition number of a task id ``<sub-topology>_<partition>``."""
    _, _, partition = task.rpartition("_")
    return int(partition) if partition.isdigit() else None


def task_spans(events: Sequence[TasksEvent], lives: Mapping[str, MemberLife]) -> pd.DataFrame:
    """Each (instance, task, role) held from one ``streams_tasks`` event to the first without it."""
    open_: dict[tuple[str, str, str], int] = {}
    rows: list[dict] = []
    for e in sorted(events, key=lambda e: e.ts_ms):
        now = {(e.member, t, "active") for t in e.active} | {(e.member, t, "standby") for t in e.standby}
        for key in [k for k in open_ if k[0] == e.member and k not in now]:
            rows.append(_span(key, open_.pop(key), e.ts_ms))
        for key in now:
            open_.setdefault(key, e.ts_ms)
    for key, start in open_.items():
        life = lives.get(key[0])
        end = life.end_ms if life is not None else max([e.ts_ms for e in events], default=start)
        rows.append(_span(key, start, max(start, end)))
    frame = pd.DataFrame(rows, columns=SPAN_SCHEMA.names)
    return frame.sort_values(["task", "start_ms", "member"], ignore_index=True).astype(
        {"start_ms": "int64", "end_ms": "int64"})


def _span(key: tuple[str, str, str], start: int, end: int) -> dict:
    return {"member": key[0], "task": key[1], "role": key[2], "start_ms": start, "end_ms": end}


def warmups(spans: pd.DataFrame, copies: Copies) -> int | None:
    """Standby copies taken up while their task already had its configured copies (KIP-441 warm-ups); None where
    the protocol places none."""
    if not copies.warmups:
        return None
    standby = spans[spans["role"] == "standby"]
    return sum(_is_warmup(spans, span, copies.replicas) for _, span in standby.iterrows())


@dataclass(frozen=True)
class EpisodeSpan:
    """A rebalance episode's id, time and phase: ``formation``, ``teardown`` or ``running``."""

    episode_id: int
    start_ms: int
    end_ms: int
    phase: str


def task_of_partitions(events: Iterable[TasksEvent]) -> dict[TP, str]:
    """The task each input partition feeds, as the instances listed it."""
    return {tp: task for e in events for tasks in (e.active, e.standby) for task, tps in tasks.items() for tp in tps}


@dataclass(frozen=True)
class Copies:
    """How to read a standby copy: ``replicas`` configured per task; ``warmups``: whether the protocol's
    assignor places warm-ups (the classic one, KIP-441; the streams protocol's in Kafka 4.3 does not, and its
    standbys overlap for a few seconds while one moves, since a new holder is given it before the old one's next
    heartbeat drops it)."""

    replicas: int
    warmups: bool


def task_moves(intervals: Iterable[OwnershipInterval], processed: Mapping[tuple[str, TP], Sequence[int]],
               spans: pd.DataFrame, restorations: pd.DataFrame, copies: Copies, task_of: Mapping[TP, str],
               episodes: Sequence[EpisodeSpan] = ()) -> pd.DataFrame:
    """Each move of a task's input partition to another instance (see the module's docstring). ``processed``:
    the processing times of each (member, partition), sorted; ``task_of``: the task of each input partition (a
    partition no instance listed is named as itself); ``episodes``: the rebalance episodes, to name each move's."""
    by_partition: dict[TP, list[OwnershipInterval]] = {}
    for iv in intervals:
        by_partition.setdefault((iv.topic, iv.partition), []).append(iv)
    rows = []
    for tp, ivs in sorted(by_partition.items()):
        ivs.sort(key=lambda iv: (iv.start_ms, iv.end_ms))
        for before, after in zip(ivs, ivs[1:]):
            if before.member == after.member:
                continue
            row = _move(tp, task_of.get(tp, f"{tp[0]}-{tp[1]}"), before.member, after, processed, spans,
                        restorations, copies)
            episode = next((e for e in episodes if e.start_ms <= after.start_ms <= e.end_ms), None)
            row.update(episode_id=episode.episode_id if episode else None,
                       phase=episode.phase if episode else "outside an episode")
            rows.append(row)
    frame = pd.DataFrame(rows, columns=MOVE_SCHEMA.names)
    return frame.astype({name: "Int64" for name in MOVE_SCHEMA.names if name.endswith("_ms") or
                         name in ("partition", "restored_records")})


def _move(tp: TP, task: str, old: str, new: OwnershipInterval, processed: Mapping[tuple[str, TP], Sequence[int]],
          spans: pd.DataFrame, restorations: pd.DataFrame, copies: Copies) -> dict:
    assigned = new.start_ms
    mine = processed.get((new.member, tp), ())
    first_new = _first_at_or_after(mine, assigned)
    last_old = _last_before(processed.get((old, tp), ()), first_new if first_new is not None else new.end_ms)
    partition = task_partition(task)
    restored = restorations[(restorations["member"] == new.member) & (restorations["partition"] == partition)
                            & restorations["ended"].isin(["end", "suspended"]) & (restorations["end_ms"] >= assigned)
                            & (restorations["end_ms"] <= (first_new if first_new is not None else new.end_ms))]
    restored_ms = int(restored["end_ms"].max()) if len(restored) else assigned
    return {"task": task, "topic": tp[0], "partition": tp[1], "from_member": old, "to_member": new.member,
            "held_as": _held_as(spans, task, new.member, assigned, copies), "last_old_ms": last_old,
            "assigned_ms": assigned, "restored_ms": restored_ms, "first_new_ms": first_new,
            "assignment_wait_ms": None if last_old is None else max(0, assigned - last_old),
            "restoration_ms": restored_ms - assigned,
            "resumption_ms": None if first_new is None else max(0, first_new - restored_ms),
            "pause_ms": None if first_new is None or last_old is None else first_new - last_old,
            "restored_records": int(restored["records"].sum())}


def _first_at_or_after(times: Sequence[int], ts: int) -> int | None:
    i = bisect.bisect_left(times, ts)
    return times[i] if i < len(times) else None


def _last_before(times: Sequence[int], ts: int) -> int | None:
    i = bisect.bisect_left(times, ts)
    return times[i - 1] if i else None


# The thread metadata is read every 10 ms on another thread than the one writing the assignment: the standby may
# leave the metadata a little before the assignment that promotes it is written.
PROMOTION_SLACK_MS = 1000


def _held_as(spans: pd.DataFrame, task: str, member: str, ts: int, copies: Copies) -> str:
    """What ``member`` held of ``task`` at ``ts``: a standby span up to a second before counts (the promotion)."""
    standby = spans[(spans["task"] == task) & (spans["role"] == "standby") & (spans["start_ms"] <= ts)
                    & (spans["end_ms"] >= ts - PROMOTION_SLACK_MS)]
    mine = standby[standby["member"] == member]
    if mine.empty:
        return "none"
    return "warm-up" if copies.warmups and _is_warmup(spans, mine.iloc[0], copies.replicas) else "standby"


def _is_warmup(spans: pd.DataFrame, span: pd.Series, replicas: int) -> bool:
    """A standby span that began while ``replicas`` other copies of its task were held, not counting copies
    that ended within a second of its start (handed over in the same rebalance)."""
    others = spans[(spans["task"] == span["task"]) & (spans["role"] == "standby") & (spans["member"] != span["member"])
                   & (spans["start_ms"] <= span["start_ms"])
                   & (spans["end_ms"] > span["start_ms"] + PROMOTION_SLACK_MS)]
    return len(others) >= replicas
