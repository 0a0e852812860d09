"""The Kafka Streams stage: what the instances' own events say about their state stores and their states, the
``streams_restorations`` table and the ``streams_*`` figures. Unknown in a run without Streams instances; their
ownership, pauses and records are measured by the consumer group's stages, as any member's (a Streams
application is a consumer group: ``streams_application``).

- A restoration is one store partition restored on one instance, from its ``streams_restore`` start to its end
  (or its suspension, when the task moved on before it finished): its records and its time. One that never
  finished (no end anywhere after it, its task never processed again) is a finding of its own
  (``streams_restorations_unfinished``): the store partition, since when, how far it got against the changelog's
  end offset.
- Which instance held each task, and each move of a task with its pause split into the wait for its
  assignment, its restoration and its first record: ``streams_tasks`` (the ``streams_task_spans`` and
  ``streams_task_moves`` tables, ``streams_task_*``, ``streams_standby_promotions``, ``streams_warmups``).
- ``streams_rebalancing_ms`` is the time no live instance was RUNNING after the application first was: the whole
  application stopped by rebalances (an instance is live from its ``started`` to its life's end: stop, kill, exit).
- The output checks judge the output topic as a ``read_committed`` consumer read it after the run
  (``history/streams-output.jsonl``) against the acknowledged input records: a result that appears more than once is
  a duplicate, an acknowledged record without its result is missing, a result no acknowledged record owes is
  extra. ``stateless``: a result is the input record's value, named by its key and per-key sequence number;
  ``stateful``: the results of a key are its counts, so its n acknowledged records owe the counts 1..n, each once,
  and a count above n is extra: a record counted twice (at-least-once restores a store from a changelog that
  already holds what the crashed instance processed after its last commit, and processes those records again).
  With ``exactly_once_v2`` all three must be 0.
"""

from __future__ import annotations

import json
from typing import Any
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ...run.layout import RunDir
from ..spark.location import is_remote
from ..spark.sources import read_ack_keys
from ..intervals import OwnershipInterval
from ..stage import Catalogue, Measured, Metric, Unknown
from ..view.lives import MemberLife
from ..view.run_view import RunView
from ..group.episodes import Episode
from ..view.started import streams_block
from . import tasks as streams_tasks
from .tasks import Copies, EpisodeSpan, TasksEvent

ABSENT = "no Kafka Streams instance in this run"
SCHEMA = pa.schema(
    [("member", pa.string()), ("store", pa.string()), ("changelog", pa.string()), ("partition", pa.int64()),
     ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("duration_ms", pa.int64()), ("from_offset", pa.int64()),
     ("to_offset", pa.int64()), ("restored_to_offset", pa.int64()), ("last_stable_offset", pa.int64()),
     ("records", pa.int64()), ("ended", pa.string()), ("unfinished", pa.bool_())])
SCHEMAS = {"streams_restorations": SCHEMA, "streams_task_spans": streams_tasks.SPAN_SCHEMA,
           "streams_task_moves": streams_tasks.MOVE_SCHEMA}


@dataclass(frozen=True)
class OutputCheck:
    records: int  # read from the output topic
    duplicates: int  # output records repeating a result already in the output
    missing: int  # results owed by acknowledged input records and absent
    extra: int  # output records whose result no acknowledged input record owes


@dataclass
class StreamsFound:
    instances: int  # members that are Streams instances (their started event has a streams block)
    restorations: pd.DataFrame  # SCHEMA
    rebalancing_ms: int | None  # None: the application never was RUNNING
    output: OutputCheck | Unknown = Unknown(ABSENT)
    spans: pd.DataFrame = field(default_factory=lambda: _empty(streams_tasks.SPAN_SCHEMA))
    moves: pd.DataFrame = field(default_factory=lambda: _empty(streams_tasks.MOVE_SCHEMA))
    warmups: int | None = None  # None: the protocol places no warm-ups


def _empty(schema: pa.Schema) -> pd.DataFrame:
    return pd.DataFrame(columns=schema.names)


def _absent_or(f: StreamsFound, value: int | float | None) -> int | float | None | Unknown:
    return Unknown(ABSENT) if not f.instances else value


def _restored(f: StreamsFound) -> pd.DataFrame:
    """The restorations that ended (or were suspended) and restored something."""
    r = f.restorations
    return r[(r["records"] > 0) & r["ended"].isin(["end", "suspended"])]


def _unfinished(f: StreamsFound) -> pd.DataFrame:
    r = f.restorations
    return r[r["unfinished"].astype(bool)] if len(r) else r


CATALOGUE: Catalogue[StreamsFound] = Catalogue(
    Metric("streams_restorations", "count", "Kafka Streams store partitions restored with at least one record from "
           "their changelogs",
           lambda f: _absent_or(f, len(_restored(f)))),
    Metric("streams_restored_records", "records", "records the Streams instances restored into their stores, in all",
           lambda f: _absent_or(f, int(_restored(f)["records"].sum())), better="lower"),
    Metric("streams_restore_max_ms", "ms", "the longest restoration of one store partition, start to end",
           lambda f: _absent_or(f, int(_restored(f)["duration_ms"].max()) if len(_restored(f)) else None),
           none="no restoration restored a record"),
    Metric("streams_restorations_unfinished", "count", "restorations that never finished: their store partition "
           "stayed unrestored and its task processed nothing to the end of the run",
           lambda f: _absent_or(f, len(_unfinished(f))), better="lower"),
    Metric("streams_unfinished_restore_max_ms", "ms", "the longest of those, from its start to the instance's close "
           "or end",
           lambda f: _absent_or(f, int(_unfinished(f)["duration_ms"].max()) if len(_unfinished(f)) else None),
           none="every restoration finished"),
    Metric("streams_rebalancing_ms", "ms", "time with live Streams instances and none RUNNING: the whole application "
           "stood still",
           lambda f: _absent_or(f, f.rebalancing_ms),
           none="the application never was RUNNING", better="lower"),
    Metric("streams_task_moves", "count", "active tasks that moved to another instance while the application ran "
           "(formation and teardown left out)",
           lambda f: _absent_or(f, len(_running(f))), better="lower"),
    Metric("streams_task_pause_max_ms", "ms", "the longest pause of a moved task: its old owner's last processing to "
           "its new owner's first",
           lambda f: _longest(f, "pause_ms"),
           none="no moved task was processed by both its old and its new owner", better="lower"),
    Metric("streams_task_assignment_wait_max_ms", "ms", "the longest wait of a moved task for its new owner's "
           "assignment, from its old owner's last processing",
           lambda f: _longest(f, "assignment_wait_ms"),
           none="no moved task was processed by its old owner", better="lower"),
    Metric("streams_task_restoration_max_ms", "ms", "the longest time a moved task's new owner took from its "
           "assignment to a restored store",
           lambda f: _longest(f, "restoration_ms"), none="no task moved", better="lower"),
    Metric("streams_standby_promotions", "count", "moved tasks whose new owner held them as a standby (or a warm-up) "
           "replica",
           lambda f: _absent_or(f, int((_running(f)["held_as"] != "none").sum())), better="higher"),
    Metric("streams_warmups", "count", "standby copies placed beyond the configured num_standby_replicas: KIP-441 "
           "warm-ups (classic protocol)",
           lambda f: _absent_or(f, f.warmups),
           none="the streams protocol places no warm-up replicas (Kafka 4.3): every standby is a configured one"),
    Metric("streams_output_records", "records", "records of the Streams application's output topic, read committed "
           "after the run",
           lambda f: _output(f, "records")),
    Metric("streams_output_duplicates", "records", "output records repeating a result already in the output",
           lambda f: _output(f, "duplicates"), better="lower"),
    Metric("streams_output_missing", "records", "results owed by acknowledged input records and absent from the output",
           lambda f: _output(f, "missing"), better="lower"),
    Metric("streams_output_extra", "records", "output records whose result no acknowledged input owes (a stateful "
           "count above its key's records)",
           lambda f: _output(f, "extra")),
)


def _running(f: StreamsFound) -> pd.DataFrame:
    """The moves of a running application: neither its formation's nor its teardown's."""
    return f.moves[~f.moves["phase"].isin(["formation", "teardown"])] if len(f.moves) else f.moves


def _longest(f: StreamsFound, column: str) -> int | float | None | Unknown:
    values = _running(f)[column].dropna() if len(f.moves) else []
    return _absent_or(f, int(max(values)) if len(values) else None)


def _output(f: StreamsFound, field: str) -> int | Unknown:
    if not f.instances:
        return Unknown(ABSENT)
    return f.output if isinstance(f.output, Unknown) else getattr(f.output, field)


def streams(events: DataFrame, started: dict[str, dict], lives: dict[str, MemberLife],
            intervals: list[OwnershipInterval], episodes: Sequence[Episode] = (),
            output: Callable[[str], OutputCheck | Unknown] = lambda topology: Unknown("no output read")) -> StreamsFound:
    """``intervals``, ``episodes``: the run's ownership intervals and rebalance episodes; ``output``: the output
    check of the application's topology (``output_check`` on the run's files)."""
    instances = sorted(m for m, s in started.items() if s.get("streams"))
    if not instances:
        return StreamsFound(0, pd.DataFrame(columns=SCHEMA.names), None)
    blocks = [streams_block(started[m]["streams"]) for m in instances]
    mine = events.filter(F.col("member").isin(*instances))
    rows = mine.filter(F.col("name").isin("streams_restore", "streams_state", "started")).select(
        "member", "ts_ms", "name", "phase", "store", "topic", "partition", "start_offset", "end_offset", "records",
        "to_state").collect()
    rows = sorted((r.asDict() for r in rows), key=lambda r: r["ts_ms"])
    tasks = [_tasks_event(r) for r in mine.filter(F.col("name") == "streams_tasks").select(
        "member", "ts_ms", "active", "standby").collect()]
    processed: dict[tuple[str, tuple[str, int]], list[int]] = {}
    for r in mine.filter(F.col("name") == "processed").select("member", "topic", "partition", "ts_ms").collect():
        processed.setdefault((r["member"], (r["topic"], int(r["partition"]))), []).append(int(r["ts_ms"]))
    for times in processed.values():
        times.sort()
    ends = {m: lives[m].end_ms for m in instances if m in lives}
    by_partition, teardown_after = _processed_by_partition(processed), teardown_after_ms(episodes)
    restore_rows = [r for r in rows if r["name"] == "streams_restore"]
    restored = restorations(restore_rows, ends, by_partition, teardown_after)
    if blocks[0].get("topology") == "stateful":
        restored = with_restorations_never_begun(restored, restore_rows, [iv for iv in intervals if iv.member in
                                                                          set(instances)], by_partition, teardown_after)
    spans = streams_tasks.task_spans(tasks, lives)
    copies = Copies(int(blocks[0].get("num_standby_replicas") or 0),
                    warmups=started[instances[0]].get("group_protocol") != "streams")
    phases = [EpisodeSpan(e.episode_id, e.start_ms, e.end_ms,
                          "formation" if e.formation else "teardown" if e.teardown else "running") for e in episodes]
    moves = streams_tasks.task_moves([iv for iv in intervals if iv.member in set(instances)], processed, spans,
                                     restored, copies, streams_tasks.task_of_partitions(tasks), phases)
    return StreamsFound(len(instances), restored, rebalancing_ms(rows, lives), output(str(blocks[0].get("topology"))),
                        spans, moves, streams_tasks.warmups(spans, copies))


def _tasks_event(r: Any) -> TasksEvent:
    def tasks(items: list | None) -> dict[str, frozenset[tuple[str, int]]]:
        return {t["task"]: frozenset((str(p[0]), int(p[1])) for p in t["partitions"] or ()) for t in items or ()}

    return TasksEvent(r["member"], int(r["ts_ms"]), tasks(r["active"]), tasks(r["standby"]))


# The topology the Java agent names in a program's `started` (testbed.agent.StreamsRecorder.startedBlock).
PROGRAM_TOPOLOGY = "program"


def output_check(output: list[dict], acked: pd.DataFrame, topology: str) -> OutputCheck:
    """The output's results against the acknowledged input records (``acked``: columns key, seq; one row per
    record). See the module's docstring."""
    per_key = acked.drop_duplicates().groupby("key")["seq"].count().to_dict()
    if topology == "stateless":
        seen: dict[tuple[str, int], int] = {}
        for r in output:
            try:
                value = json.loads(r["value"] or "")
                result = (str(value["key"]), int(value["seq"]))
            except (ValueError, KeyError, TypeError):
                continue  # not one of the load's records: no input owes it
            seen[result] = seen.get(result, 0) + 1
        owed = set(map(tuple, acked[["key", "seq"]].drop_duplicates().itertuples(index=False, name=None)))
    else:
        seen = {}
        for r in output:
            try:
                result = (str(r["key"]), int(r["value"]))
            except (ValueError, TypeError):
                continue
            seen[result] = seen.get(result, 0) + 1
        owed = {(key, n) for key, count in per_key.items() for n in range(1, count + 1)}
    duplicates = sum(n - 1 for n in seen.values() if n > 1)
    extra = sum(n for result, n in seen.items() if result not in owed)
    return OutputCheck(len(output), duplicates, len(owed - set(seen)), extra)


def acked_keys(run: RunView) -> pd.DataFrame:
    """Every acknowledged input record's key and sequence number (the run has an ack log)."""
    assert run.files.acks is not None
    rows = read_ack_keys(run.spark, run.files.acks).collect()
    return pd.DataFrame([(r["key"], int(r["seq"])) for r in rows], columns=["key", "seq"])


def read_output_check(run: RunView, topology: str) -> OutputCheck | Unknown:
    """The output check of a run directory: unknown when the output was not read whole, or not read at all, and for
    a program's own topology (``program``: a team's Streams service under the Java agent), whose results only its
    team can judge: the scenario's ``effects``."""
    if topology == PROGRAM_TOPOLOGY:
        return Unknown("a program's own topology: testbed knows no results it owes; judge its output with the "
                       "scenario's effects command")
    if is_remote(run.root):
        return Unknown("the run directory is remote; the output check reads it on the driver")
    if run.files.acks is None:
        return Unknown("no producer ack log: which input records were acknowledged is unknown")
    layout = RunDir(Path(run.root.removeprefix("file://")))
    failed, saved = layout.streams_output_failed, layout.streams_output
    if failed.exists():
        return Unknown(f"the output topic was not read whole: {failed.read_text().strip()}")
    if not saved.exists():
        return Unknown("the run did not read its output topic (saved before the output check existed, or it "
                       "ended before its instances stopped)")
    output = [json.loads(line) for line in saved.read_text().splitlines() if line.endswith("}")]
    return output_check(output, acked_keys(run), topology)


def teardown_after_ms(episodes: Sequence[Episode]) -> int | None:
    """When the run's teardown began (its first teardown episode), None when no episode was one."""
    return min((e.start_ms for e in episodes if e.teardown), default=None)


def _processed_by_partition(processed: dict[tuple[str, tuple[str, int]], list[int]]) -> dict[int, list[int]]:
    """The times any instance processed a record of each input partition number (a task's store partition is
    its task's input partition: one sub-topology)."""
    out: dict[int, list[int]] = {}
    for (_, (_, partition)), times in processed.items():
        out.setdefault(partition, []).extend(times)
    return {p: sorted(times) for p, times in out.items()}


def restorations(rows: list[dict], ends: dict[str, int] | None = None,
                 processed: dict[int, list[int]] | None = None, teardown_after: int | None = None) -> pd.DataFrame:
    """Each restoration in time order, from its start to its end, its suspension (its task closed before it
    finished: moved on, or the instance closed), or, with none, the instance's life's end (``ends``; ended
    ``never``). ``restored_to_offset`` is the last batch's end offset; ``last_stable_offset`` the last ``stable``
    answer for the changelog partition after the start (exactly-once instances ask at a start and a
    suspension: the restore consumer reads committed, so it cannot pass the last stable offset, while the end
    offset it restores to is read uncommitted). A restoration is *unfinished* when it did not end, no later
    restoration of its store partition began or ended (on any instance: only the last attempt counts), its
    task's partition was not processed again after it began (``processed``: times per partition number) and it
    began before the teardown: the store partition stayed unrestored and its task stood still to the end of the
    run."""
    open_: dict[tuple, dict] = {}
    out = []

    def close(start: dict, end_ms: int, records: int, ended: str) -> None:
        out.append({"member": start["member"], "store": start["store"], "changelog": start["topic"],
                    "partition": int(start["partition"]), "start_ms": int(start["ts_ms"]), "end_ms": end_ms,
                    "duration_ms": end_ms - int(start["ts_ms"]), "from_offset": start["start_offset"],
                    "to_offset": start["end_offset"], "restored_to_offset": start.get("restored_to"),
                    "last_stable_offset": _last_stable(rows, start), "records": records, "ended": ended})

    for r in rows:
        key = (r["member"], r["store"], r["topic"], r["partition"])
        if r["phase"] == "start":
            open_[key] = {**r, "batches": 0}
        elif r["phase"] == "batch" and key in open_:
            open_[key]["restored_to"] = r["end_offset"]
            open_[key]["batches"] += int(r["records"] or 0)
        elif r["phase"] in ("end", "suspended") and key in open_:
            close(open_.pop(key), int(r["ts_ms"]), int(r["records"] or 0), r["phase"])
    for (member, *_), start in open_.items():
        end = (ends or {}).get(member, max([int(r["ts_ms"]) for r in rows] or [int(start["ts_ms"])]))
        close(start, max(end, int(start["ts_ms"])), start["batches"], "never")
    for row in out:
        row["unfinished"] = _unfinished_row(row, out, processed or {}, teardown_after)
    frame = pd.DataFrame(sorted(out, key=lambda r: r["end_ms"]), columns=SCHEMA.names)
    return frame.astype({"partition": "int64", "start_ms": "int64", "end_ms": "int64", "duration_ms": "int64",
                         "records": "int64", "from_offset": "Int64", "to_offset": "Int64",
                         "restored_to_offset": "Int64", "last_stable_offset": "Int64", "unfinished": "bool"})


# How long after its assignment a stateful task may go without a restoration start: Streams starts restoring (an
# empty changelog included) within a poll or two of the assignment, well under a second on a healthy cluster.
RESTORE_START_GRACE_MS = 5_000


def with_restorations_never_begun(frame: pd.DataFrame, rows: list[dict], intervals: list[OwnershipInterval],
                                  processed: dict[int, list[int]], teardown_after: int | None) -> pd.DataFrame:
    """``frame`` with a row (ended ``not_started``, unfinished) for each input partition of a stateful task whose
    last owner before the teardown held it for at least RESTORE_START_GRACE_MS without a restoration start of its
    store partition and nobody processed it after that assignment: Streams looks up its changelogs' end offsets
    before it calls any restore listener, so a changelog whose leader is down keeps the task from ever beginning
    to restore and from processing."""
    added = []
    for partition in sorted({iv.partition for iv in intervals}):
        owned = [iv for iv in intervals if iv.partition == partition
                 and (teardown_after is None or iv.start_ms < teardown_after)]
        if not owned:
            continue
        last = max(owned, key=lambda iv: iv.start_ms)
        began = any(r["phase"] == "start" and r["member"] == last.member and int(r["partition"]) == partition
                    and last.start_ms <= int(r["ts_ms"]) <= last.end_ms for r in rows)
        judged = bool(((frame["partition"] == partition) & frame["unfinished"].astype(bool)).any()) if len(frame) else False
        if (began or judged or last.end_ms - last.start_ms < RESTORE_START_GRACE_MS
                or _processed_since(processed, partition, last.start_ms)):
            continue
        store = next((r for r in rows if int(r["partition"]) == partition), rows[0] if rows else None)
        added.append({"member": last.member, "store": store["store"] if store else None,
                      "changelog": store["topic"] if store else None, "partition": partition,
                      "start_ms": last.start_ms, "end_ms": last.end_ms, "duration_ms": last.end_ms - last.start_ms,
                      "from_offset": None, "to_offset": None, "restored_to_offset": None, "last_stable_offset": None,
                      "records": 0, "ended": "not_started", "unfinished": True})
    if not added:
        return frame
    rows_out = sorted(frame.astype(object).where(frame.notna(), None).to_dict("records") + added,
                      key=lambda r: r["end_ms"])
    return pd.DataFrame(rows_out, columns=SCHEMA.names).astype(frame.dtypes.to_dict())


def _last_stable(rows: list[dict], start: dict) -> int | None:
    """The last ``stable`` answer for the restoration's changelog partition on its instance, from its start to
    the instance's next start of it (an answer arrives after the question: a suspension's comes after it)."""
    key = (start["member"], start["store"], start["topic"], start["partition"])
    since = int(start["ts_ms"])
    later = [r for r in rows if (r["member"], r["store"], r["topic"], r["partition"]) == key and int(r["ts_ms"]) >= since]
    next_start = min((int(r["ts_ms"]) for r in later if r["phase"] == "start" and int(r["ts_ms"]) > since), default=None)
    stable = [r for r in later if r["phase"] == "stable" and r["end_offset"] is not None
              and (next_start is None or int(r["ts_ms"]) < next_start)]
    return int(stable[-1]["end_offset"]) if stable else None


def _unfinished_row(row: dict, rows: list[dict], processed: dict[int, list[int]], teardown_after: int | None) -> bool:
    if row["ended"] == "end" or (teardown_after is not None and row["start_ms"] >= teardown_after):
        return False
    same = (row["store"], row["changelog"], row["partition"])
    if any((r["store"], r["changelog"], r["partition"]) == same and r is not row
           and (r["start_ms"] > row["start_ms"] or (r["ended"] == "end" and r["end_ms"] > row["start_ms"]))
           for r in rows):
        return False  # a later attempt (it is the one judged) or a restoration finished since
    return not _processed_since(processed, row["partition"], row["start_ms"])


def _processed_since(processed: dict[int, list[int]], partition: int, ts_ms: int) -> bool:
    """Whether any instance processed a record of the partition after ``ts_ms``."""
    return any(t > ts_ms for t in processed.get(partition, ()))


def rebalancing_ms(rows: list[dict], lives: dict[str, MemberLife]) -> int | None:
    """Time with live instances and none of them RUNNING, from the first RUNNING of any instance to the last
    instance's end."""
    changes: list[tuple[int, int, str, str | None]] = []  # (ts, order, member, state or None for the end)
    for r in rows:
        if r["name"] == "started":
            changes.append((int(r["ts_ms"]), 0, r["member"], "CREATED"))
        elif r["name"] == "streams_state":
            changes.append((int(r["ts_ms"]), 1, r["member"], r["to_state"]))
    for member in {r["member"] for r in rows}:
        if member in lives:
            changes.append((lives[member].end_ms, 2, member, None))
    changes.sort()
    state: dict[str, str] = {}
    total, since, ever_running = 0, None, False
    for ts, _, member, to in changes:
        if to is None:
            state.pop(member, None)
        else:
            state[member] = to
        running = any(s == "RUNNING" for s in state.values())
        ever_running = ever_running or running
        stopped_all = ever_running and bool(state) and not running
        if stopped_all and since is None:
            since = ts
        elif not stopped_all and since is not None:
            total += ts - since
            since = None
    return total if ever_running else None


def measured(found: StreamsFound) -> Measured:
    return Measured(CATALOGUE.measure(found), {"streams_restorations": found.restorations,
                                               "streams_task_spans": found.spans, "streams_task_moves": found.moves})
