"""The crashes stage: each crash of the user's programs, the crash loops they make (``crash_loops``), their
tables ``member_crashes`` and ``crash_loops`` and figures.

The harness's actions give the crashes and restarts; the ownership intervals, the partitions each crash held;
one small Spark query over the processed batches tells, per span between two crashes of a partition, whether
anyone processed it then, and how far each such partition was processed; the pauses stage gives how long the
partition waited, and the drain how many of its records were never processed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...history.events import Action
from ..intervals import OwnershipInterval
from ..records.record_stats import processed_batches
from ..spark.local_rows import local_frame
from ..stage import Catalogue, Measured, Metric
from ..view.harness import HarnessAction
from .crash_loops import TP, Crash, CrashLoop, alike, crash_loops, crashes, progress_windows
from .ownership import Revocation

SCHEMAS: dict[str, pa.Schema] = {
    "member_crashes": pa.schema(
        [("member", pa.string()), ("ts_ms", pa.int64()), ("exit_code", pa.int64()), ("signal", pa.string()),
         ("exit", pa.string()), ("exception_type", pa.string()), ("message", pa.string()), ("partitions", pa.string()),
         ("restart_in_s", pa.float64()), ("restart_refused", pa.string()), ("log_tail", pa.string())]),
    "crash_loops": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("crashes", pa.int64()), ("restarts", pa.int64()),
         ("members", pa.string()), ("first_ms", pa.int64()), ("last_ms", pa.int64()), ("ongoing", pa.bool_()),
         ("exception_type", pa.string()), ("message", pa.string()), ("exit", pa.string()),
         ("stuck_at_offset", pa.int64()), ("records_behind", pa.int64()), ("pause_ms", pa.int64()),
         ("pause_open", pa.bool_())]),
}


@dataclass
class Crashes:
    crashes: list[Crash]
    restarts: int
    loops: list[CrashLoop]
    loop_rows: pd.DataFrame


CATALOGUE: Catalogue[Crashes] = Catalogue(
    Metric("member_crashes", "count", "processes of the user's program that ended by themselves with a failure (exit "
           "code or signal)",
           lambda c: len(c.crashes)),
    Metric("member_restarts", "count", "new incarnations the restart policy started after a crash",
           lambda c: c.restarts),
    Metric("crash_loops", "count", "partitions the program died on at least twice in a row with nothing of them "
           "processed in between",
           lambda c: len(c.loops)),
)


def _progress(spark: SparkSession, batches: DataFrame, windows: list[tuple[TP, int, int | None]]) -> set[tuple[TP, int]]:
    """The (partition, from_ms) of the windows in which some member processed the partition: one join of the
    few windows with the batches."""
    if not windows:
        return set()
    rows = [(tp[0], tp[1], start, end) for tp, start, end in windows]
    frame = local_frame(spark, rows, "w_topic string, w_partition int, w_start long, w_end long")
    hit = batches.join(F.broadcast(frame), (batches["topic"] == frame["w_topic"])
                       & (batches["partition"] == frame["w_partition"]) & (batches["ts"] > frame["w_start"])
                       & (frame["w_end"].isNull() | (batches["ts"] <= frame["w_end"])))
    return {((r["w_topic"], r["w_partition"]), r["w_start"])
            for r in hit.select("w_topic", "w_partition", "w_start").distinct().collect()}


def _highest_processed(batches: DataFrame, partitions: set[TP]) -> dict[TP, int]:
    if not partitions:
        return {}
    topics = sorted({t for t, _ in partitions})
    rows = (batches.filter(F.col("topic").isin(topics)).groupBy("topic", "partition")
            .agg(F.max("last_offset").alias("highest")).collect())
    return {(r["topic"], r["partition"]): int(r["highest"]) for r in rows if (r["topic"], r["partition"]) in partitions}


def _drain_behind(actions: Sequence[HarnessAction]) -> dict[str, int] | None:
    """Records each partition still lacked when the drain ended (``topic-partition`` -> count); None without
    a drain."""
    ends = [h for h in actions if h["kind"] == Action.DRAIN_END]
    return dict((ends[-1]["detail"] or {}).get("behind") or {}) if ends else None


def _pause(pauses: pd.DataFrame, loop: CrashLoop) -> tuple[int | None, bool | None]:
    """The partition's longest pause overlapping the loop, and whether it was still open at the drain's end."""
    if not len(pauses):
        return None, None
    first, last = loop.crashes[0].ts_ms, loop.crashes[-1].ts_ms
    rows = pauses[(pauses["topic"] == loop.topic) & (pauses["partition"] == loop.partition)
                  & (pauses["kind"] == "pause") & (pauses["start_ms"] <= last) & (pauses["end_ms"] >= first)]
    if not len(rows):
        return None, None
    row = rows.sort_values("pause_ms", ascending=False).iloc[0]
    return int(row["pause_ms"]), bool(row["open"])


def _loop_row(loop: CrashLoop, highest: dict[TP, int], behind: dict[str, int] | None,
              pauses: pd.DataFrame) -> dict[str, object]:
    tp = (loop.topic, loop.partition)
    shown = loop.exception
    pause_ms, pause_open = _pause(pauses, loop)
    return {"topic": loop.topic, "partition": loop.partition, "crashes": len(loop.crashes),
            "restarts": loop.restarts, "members": ",".join(loop.members), "first_ms": loop.crashes[0].ts_ms,
            "last_ms": loop.crashes[-1].ts_ms, "ongoing": loop.ongoing,
            "exception_type": shown.exception_type if shown else None, "message": shown.message if shown else None,
            "exit": loop.crashes[-1].how,
            # Where it is stuck only while it is: a loop that ended moved past the record.
            "stuck_at_offset": highest[tp] + 1 if loop.ongoing and tp in highest else None,
            "records_behind": behind.get(f"{loop.topic}-{loop.partition}", 0) if behind is not None else None,
            "pause_ms": pause_ms, "pause_open": pause_open}


def crash_frame(found: Sequence[Crash]) -> pd.DataFrame:
    rows = [{"member": c.member, "ts_ms": c.ts_ms, "exit_code": c.exit_code, "signal": c.signal, "exit": c.how,
             "exception_type": c.exception_type, "message": c.message,
             "partitions": ",".join(f"{t}-{p}" for t, p in c.partitions), "restart_in_s": c.restart_in_s,
             "restart_refused": c.restart_refused, "log_tail": json.dumps(list(c.log_tail))} for c in found]
    return pd.DataFrame(rows, columns=SCHEMAS["member_crashes"].names).astype({"restart_in_s": "float64"})


def member_crashes(spark: SparkSession, events: DataFrame, actions: Sequence[HarnessAction],
                   intervals: Sequence[OwnershipInterval], revocations: Sequence[Revocation],
                   pauses: pd.DataFrame) -> Crashes:
    found = crashes(actions, intervals,
                    [(r.member, r.topic, r.partition) for r in revocations if r.category == "shutdown"])
    restarts = sum(1 for h in actions if h["kind"] == Action.MEMBER_RESTART)
    if not found:
        return Crashes([], restarts, [], pd.DataFrame(columns=SCHEMAS["crash_loops"].names))
    batches = processed_batches(events)
    moved = _progress(spark, batches, progress_windows(found))
    behind = _drain_behind(actions)
    loops = crash_loops(found, lambda tp, start, _end: (tp, start) in moved,
                        lambda tp: behind is not None and not behind.get(f"{tp[0]}-{tp[1]}", 0))
    highest = _highest_processed(batches, {(loop.topic, loop.partition) for loop in loops if loop.ongoing})
    rows = pd.DataFrame([_loop_row(loop, highest, behind, pauses) for loop in loops],
                        columns=SCHEMAS["crash_loops"].names)
    return Crashes(found, restarts, loops, rows)


def measured(found: Crashes) -> Measured:
    notes = [f"{row.topic}-{row.partition}: a crash loop, {row.crashes} crashes in a row with nothing of it processed "
             f"between them" for row in found.loop_rows.itertuples()]
    notes += [f"{', '.join(f'{loop.topic}-{loop.partition}' for loop in group)}: the loops of the same "
              f"{len(group[0].crashes)} crashes (the programs held these partitions together each time they died): "
              "which partition's records kill them cannot be told from the history, and the program may crash "
              "whatever it reads" for group in alike(found.loops)]
    return Measured(CATALOGUE.measure(found), {"member_crashes": crash_frame(found.crashes),
                                               "crash_loops": found.loop_rows}, notes=notes)


__all__ = ["CATALOGUE", "SCHEMAS", "Crashes", "crash_frame", "measured", "member_crashes"]
