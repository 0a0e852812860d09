"""The answer a run report opens with: the few figures users come for, each in a plain sentence.

Longest partition pause (with its causes: the primary, then each contributing one), stop-the-world,
duplicates (concurrent, re-delivered, the main cause with what to change), lost records and revocations of live members. Every figure is read from the run's metrics.json; the cause of
the longest pause is the ``partition_pauses`` row of exactly that length (docs/metrics.md), never a
recomputation. A figure the analysis could not measure is said to be unknown, with its reason, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..analysis.view.started import streams_instances
from .cause_words import causes_phrase
from .duplicate_words import main_cause_sentence
from .group_kinds import has_streams
from .inputs import Got, Missing, RunOutputs
from .page import format_number


@dataclass(frozen=True)
class Known:
    value: float


@dataclass(frozen=True)
class Unknown:
    reason: str


Measured = Known | Unknown


@dataclass(frozen=True)
class Headline:
    """One figure of the answer: a short label, the figure itself, a sentence and where the page shows it."""

    key: str  # element id of its card
    label: str
    figure: str
    sentence: str
    link: str  # in-page anchor of the chart or table that shows it
    tone: str  # good|bad|unknown|neutral


def measured(out: RunOutputs, name: str) -> Measured:
    """A metric's value from metrics.json, or why it is unknown (absent is unknown too, never 0)."""
    if isinstance(out.metrics, Missing):
        return Unknown(out.metrics.reason)
    m = out.metric_values().get(name)
    if not isinstance(m, dict):
        return Unknown(f"{name} is not in metrics.json (an older analysis)")
    if m.get("value") is None:
        return Unknown(m.get("unknown") or "no value recorded")
    return Known(m["value"])


def duration(ms: float) -> str:
    """A length for a sentence: milliseconds below a second, else seconds to a tenth."""
    return f"{format_number(ms)} ms" if abs(ms) < 1000 else f"{ms / 1000:,.1f} s"


def phrase(m: Measured, as_duration: bool = False) -> str:
    if isinstance(m, Unknown):
        return f"unknown ({m.reason})"
    return duration(m.value) if as_duration else format_number(m.value)


def headlines(out: RunOutputs) -> list[Headline]:
    """A consumer-group run's cards: the group's, then its Streams application's when its members were one."""
    return consumer_headlines(out) + (streams_headlines(out) if has_streams(out) else [])


def consumer_headlines(out: RunOutputs) -> list[Headline]:
    return [longest_pause(out), stop_the_world(out), duplicates(out), lost(out), live_revocations(out)]


def streams_headlines(out: RunOutputs) -> list[Headline]:
    return [streams_task_pause(out), streams_restoration(out)]


def streams_restoration(out: RunOutputs) -> Headline:
    """What the Streams instances restored, how long the whole application stood still, and first of all a
    restoration that never finished, named."""
    count, records = measured(out, "streams_restorations"), measured(out, "streams_restored_records")
    longest, stopped = measured(out, "streams_restore_max_ms"), measured(out, "streams_rebalancing_ms")
    unfinished = measured(out, "streams_restorations_unfinished")
    card = dict(key="headline-streams", label="Streams restoration", link="#metric-streams_restored_records",
                tone="unknown" if isinstance(records, Unknown) else "neutral")
    halt = f"The whole application stood still (no instance RUNNING) for {phrase(stopped, as_duration=True)}."
    if isinstance(unfinished, Known) and unfinished.value:
        card.update(tone="bad", link="#streams-tasks")
        return Headline(figure="unfinished", sentence=f"{_unfinished_restorations(out, int(unfinished.value))} "
                        f"{halt}", **card)
    if isinstance(count, Known) and count.value == 0:
        return Headline(figure="none", sentence=f"No state store had to be restored. {halt}", **card)
    return Headline(figure=phrase(records), sentence=f"{phrase(count)} store partition(s) restored {phrase(records)} "
                    f"record(s) from their changelogs, the longest in {phrase(longest, as_duration=True)}. {halt}",
                    **card)


def _unfinished_restorations(out: RunOutputs, count: int) -> str:
    """The longest restoration that never finished, as the ``streams_restorations`` table holds it."""
    table = out.table("streams_restorations")
    if table is None or "unfinished" not in table or not table["unfinished"].astype(bool).any():
        return f"{count} restoration(s) never finished (the streams_restorations table does not show them)."
    row = table[table["unfinished"].astype(bool)].sort_values("duration_ms").iloc[-1]
    if row["ended"] == "not_started":
        store = (f"store {row['store']} from {row['changelog']}-{int(row['partition'])}" if isinstance(row["store"], str)
                 else f"the store of task partition {int(row['partition'])}")
        return (f"{count} store partition(s) never finished restoring: the longest, {store} on {row['member']}, "
                f"never began (assigned {_at(out, row['start_ms'])}and held {duration(float(row['duration_ms']))} "
                "without a restoration start: Streams reads its changelogs' end offsets before it restores, and "
                "could not, for example with the partition's only replica down); its task processed nothing "
                "meanwhile.")
    ended = ("its task was closed before it finished (suspended)" if row["ended"] == "suspended"
             else "it was still open when the instance ended")
    return (f"{count} store partition(s) never finished restoring: the longest, store {row['store']} from "
            f"{row['changelog']}-{int(row['partition'])} on {row['member']}, began {_at(out, row['start_ms'])}and "
            f"{_how_far(row)}; {ended} {duration(float(row['duration_ms']))} later, and its task processed nothing "
            "meanwhile.")


def _at(out: RunOutputs, ts_ms: int) -> str:
    origin = out.time_origin_ms()
    return "" if origin is None else f"at {(int(ts_ms) - origin) / 1000:,.1f} s "


def _offset(row: Any, column: str) -> int | None:
    value = row.get(column)
    return None if value is None or pd.isna(value) else int(value)


def _how_far(row: Any) -> str:
    """How far the restoration got against the end offset it restored to (read uncommitted: the high watermark)
    and, where the instance asked (exactly-once), the last stable offset the restore consumer cannot pass."""
    end, reached, stable = _offset(row, "to_offset"), _offset(row, "restored_to_offset"), _offset(row, "last_stable_offset")
    if end is None:
        return "restored up to an offset the history does not show"
    target = f"the end offset {format_number(end)} its changelog had when it began"
    if stable is not None:
        target += (f", against a last stable offset of {format_number(stable)} (a restoration reads committed "
                   f"records only{': an open transaction held it back' if stable < end else ''})")
    if reached is None:
        return f"restored no batch toward {target}"
    return f"restored up to offset {format_number(reached)} of {target}"


def streams_task_pause(out: RunOutputs) -> Headline:
    """The longest pause of a task: of a moved task, split as its row of ``streams_task_moves`` splits it, or of a
    task that stayed on its instance (its partition's pause, with its cause), whichever is longer, so the figure
    is never below the partition pause it explains."""
    moved, longest = measured(out, "streams_task_moves"), measured(out, "streams_task_pause_max_ms")
    promoted = measured(out, "streams_standby_promotions")
    card = dict(key="headline-streams-tasks", label="longest task pause", link="#streams-tasks",
                tone="unknown" if isinstance(longest, Unknown) else "neutral")
    stayed = _longest_stayed_pause(out)
    moves_said = f"{phrase(moved)} task(s) moved, {phrase(promoted)} to an instance that held a standby."
    if stayed is not None and (not isinstance(longest, Known) or stayed["pause_ms"] > longest.value):
        length = duration(float(stayed["pause_ms"]))
        moved_part = ("No task moved to another instance while the application ran. "
                      if isinstance(moved, Known) and moved.value == 0 else
                      f"{moves_said[:-1]}; the longest pause of a moved task was {phrase(longest, as_duration=True)}. ")
        which = ("one that stayed on its instance" if isinstance(stayed["resumed_member"], str)
                 else "one no instance processed again before the end")
        return Headline(figure=length, sentence=f"The longest pause of a task was {length}, of {which}"
                        f"{_pause_detail(out, float(stayed['pause_ms']))}. {moved_part}".rstrip(), **card)
    if isinstance(moved, Known) and moved.value == 0:
        return Headline(figure="none", sentence="No task moved to another instance while the application ran, and "
                        "no task paused on its instance.", **card)
    split = ""
    moves = out.table("streams_task_moves")
    if isinstance(longest, Known) and moves is not None and len(moves):
        running = moves[~moves["phase"].isin(["formation", "teardown"])]  # the moves the figure counts
        row = running[running["pause_ms"] == longest.value].iloc[0]
        split = (f" (task {row['task']}, {row['from_member']} to {row['to_member']}): "
                 f"{duration(float(row['assignment_wait_ms']))} waiting for its assignment, "
                 f"{duration(float(row['restoration_ms']))} restoring its store, "
                 f"{duration(float(row['resumption_ms']))} to its first record")
    return Headline(figure=phrase(longest, as_duration=True),
                    sentence=f"The longest pause of a moved task was {phrase(longest, as_duration=True)}{split}. "
                             f"{moves_said}", **card)


def _longest_stayed_pause(out: RunOutputs) -> Any:
    """The longest ``partition_pauses`` pause of a Streams instance's partition that did not move: its instance
    processed it on both sides of the gap, or nobody processed it after; None without one."""
    pauses = out.table("partition_pauses")
    instances = list(streams_instances(out.config().get("members") or {}))
    if pauses is None or not len(pauses) or not instances:
        return None
    kept = pauses[(pauses["kind"] == "pause") & pauses["last_member"].isin(instances)
                  & (pauses["resumed_member"].isna() | (pauses["resumed_member"] == pauses["last_member"]))]
    return None if kept.empty else kept.sort_values("pause_ms").iloc[-1]


def longest_pause(out: RunOutputs) -> Headline:
    m = measured(out, "max_partition_pause_ms")
    card = dict(key="headline-longest-pause", label="longest partition pause", link="#pauses",
                tone=_tone(out, ["max_partition_pause_ms"], m))
    if isinstance(m, Unknown):
        return Headline(figure="unknown", sentence=f"The longest partition pause is unknown: {m.reason}.", **card)
    if m.value == 0:
        return Headline(figure="none", sentence="No partition paused: no availability gap reached the pause "
                        "threshold (min_pause_ms) while records waited.", **card)
    return Headline(figure=duration(m.value), sentence=f"The longest partition pause was {duration(m.value)}"
                    f"{_pause_detail(out, m.value)}.", **card)


def _pause_detail(out: RunOutputs, length_ms: float) -> str:
    """Where and why the longest pause happened, from the pause table's row(s) of exactly that length."""
    pauses = out.tables.get("partition_pauses")
    if not isinstance(pauses, Got):
        return f"; its cause is unknown ({pauses.reason if pauses else 'no partition_pauses table'})"
    frame = pauses.value
    rows = frame[(frame["kind"] == "pause") & (frame["pause_ms"] == length_ms)].sort_values("start_ms")
    if rows.empty:
        return "; its cause is unknown (no pause of that length in the partition_pauses table)"
    row = rows.iloc[0]
    origin = out.time_origin_ms()
    when = "" if origin is None else f" from {(row['start_ms'] - origin) / 1000:,.1f} s"
    marks = out.harness.value if isinstance(out.harness, Got) else []
    cause = causes_phrase(row, marks)
    more = f" ({len(rows) - 1} more pause(s) of the same length)" if len(rows) > 1 else ""
    still = f", still open when {out.cutoff_words()} (its length so far)" if bool(row.get("open")) else ""
    return f", on {row['topic']}-{int(row['partition'])}{when}{still}, caused by {cause}{more}"


def stop_the_world(out: RunOutputs) -> Headline:
    total, longest = measured(out, "stop_the_world_ms"), measured(out, "max_stop_the_world_ms")
    card = dict(key="headline-stop-the-world", label="stop-the-world", link="#over-time",
                tone=_tone(out, ["stop_the_world_ms", "max_stop_the_world_ms"], total))
    if isinstance(total, Unknown):
        return Headline(figure="unknown", sentence=f"Stop-the-world is unknown: {total.reason}.", **card)
    if total.value == 0:
        return Headline(figure="none", sentence="The group never stopped as a whole: while records waited, "
                        "some partition was always being processed.", **card)
    longest_text = "" if isinstance(longest, Unknown) else f", the longest span {duration(longest.value)}"
    return Headline(figure=duration(total.value), sentence="The whole group stopped (no partition processed "
                    f"while records waited) for {duration(total.value)} in total{longest_text}.", **card)


def duplicates(out: RunOutputs) -> Headline:
    total = measured(out, "duplicates_total")
    concurrent, redelivered = measured(out, "duplicates_concurrent"), measured(out, "duplicates_redelivered")
    owned_ms, episodes = measured(out, "duplicate_ownership_ms"), measured(out, "duplicate_ownership_episodes")
    card = dict(key="headline-duplicates", label="duplicate processings", link="#duplicate-causes",
                tone=_tone(out, ["duplicates_total", "duplicates_concurrent", "duplicate_ownership_ms"], total))
    if isinstance(total, Unknown):
        head = f"Duplicate processing is unknown: {total.reason}"
    elif total.value == 0:
        head = "No record was processed twice"
    else:
        head = (f"{format_number(total.value)} processing(s) repeated a record: {phrase(concurrent)} concurrent "
                f"(while two members owned its partition, or by a zombie) and {phrase(redelivered)} re-delivered")
    if isinstance(owned_ms, Known) and owned_ms.value == 0:
        owned = "no partition ever had two owners at once"
    elif isinstance(owned_ms, Unknown):
        owned = f"duplicate ownership is {phrase(owned_ms)}"
    else:
        owned = (f"two or more members owned one partition at once for {duration(owned_ms.value)} in total, "
                 f"in {phrase(episodes)} episode(s)")
    figure = "unknown" if isinstance(total, Unknown) else format_number(total.value)
    cause = f" {main_cause_sentence(out)}" if isinstance(total, Known) and total.value else ""
    return Headline(figure=figure, sentence=f"{head}; {owned}.{cause}", **card)


def lost(out: RunOutputs) -> Headline:
    m, acked = measured(out, "lost_records"), measured(out, "records_acked")
    card = dict(key="headline-lost", label="lost records", link="#metric-lost_records",
                tone=_tone(out, ["lost_records"], m))
    of_acked = "" if isinstance(acked, Unknown) else f" of the {format_number(acked.value)} acknowledged"
    if isinstance(m, Unknown):
        return Headline(figure="unknown", sentence=f"Lost records are unknown: {m.reason}.", **card)
    if m.value == 0:
        return Headline(figure="0", sentence=f"No record was lost: every one{of_acked} was processed by the end "
                        "of the final drain.", **card)
    return Headline(figure=format_number(m.value), sentence=f"{format_number(m.value)} record(s){of_acked} were "
                    "never processed by the end of the final drain: lost.", **card)


def live_revocations(out: RunOutputs) -> Headline:
    m, needless = measured(out, "revocations_live"), measured(out, "needless_revocations")
    episodes = measured(out, "rebalance_episodes")
    card = dict(key="headline-revocations", label="revocations of live members", link="#revocations",
                tone=_tone(out, ["revocations_live", "needless_revocations"], m))
    if isinstance(m, Unknown):
        return Headline(figure="unknown", sentence=f"Revocations of live members are unknown: {m.reason}.", **card)
    if m.value == 0:
        sentence = (f"No partition was taken from a member that stayed alive ({phrase(episodes)} rebalance "
                    "episode(s)).")
    else:
        sentence = (f"{format_number(m.value)} partition(s) were taken from members that stayed alive, over "
                    f"{phrase(episodes)} rebalance episode(s){_while_forming(out)}; {phrase(needless)} of them "
                    "needless (revoked and given back to the same member in one episode)"
                    f"{_needless_doubt(out, needless)}.")
    lost_ = measured(out, "partitions_lost")
    if isinstance(lost_, Known) and lost_.value:
        sentence += (f" {format_number(lost_.value)} partition(s) were lost (taken without a revoke: their member was "
                     "fenced or its session expired), their uncommitted work re-done by the next owner.")
    return Headline(figure=format_number(m.value), sentence=sentence, **card)


def _while_forming(out: RunOutputs) -> str:
    """The revocations of the group's formation, counted in the figure but not among its episodes (members joining
    one after another take partitions from those already in)."""
    episodes = out.table("rebalance_episodes")
    if episodes is None or not len(episodes) or "formation" not in episodes:
        return ""
    forming = episodes[episodes["formation"].astype(bool)]
    live, needless = int(forming["revocations_live"].sum()), int(forming["needless_revocations"].sum())
    if not live:
        return ""
    return (f" and the group's formation ({format_number(live)} of them, {format_number(needless)} needless, as its "
            "members joined one after another)")


def _needless_doubt(out: RunOutputs, needless: Measured) -> str:
    """Why the needless ones may be no such thing, when the checker could not tell (a fencing fault and members
    that record a loss as a revocation)."""
    if not isinstance(needless, Known) or not needless.value or not isinstance(out.result, Got):
        return ""
    verdict = next((c for c in out.result.value.checks if c.checker == "needless_revocations"), None)
    if verdict is None or verdict.status != "unknown":
        return ""
    return (", or a fenced member's partitions handed back at its rejoin: the history cannot tell which (a fault "
            "that can fence a member, and members that record a loss as a revocation)")


def _tone(out: RunOutputs, metrics: list[str], main: Measured) -> str:
    """bad when an expectation on these metrics failed, unknown when the figure is, good when it is 0."""
    if isinstance(out.result, Got):
        on = [e for e in out.result.value.expectations if e.metric in metrics]
        if any(not e.passed for e in on):
            return "bad"
    if isinstance(main, Unknown):
        return "unknown"
    return "good" if main.value == 0 else "neutral"

