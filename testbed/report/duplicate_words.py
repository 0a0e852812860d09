"""What the report says of the causes of duplicate processing (docs/metrics.md, "Causes of duplicate
processing"): each cause in plain words with what to change in the program, the main cause for the headline,
and the rows of the report's table of causes. Counts come from metrics.json (``duplicates_<cause>``), examples
from the ``duplicate_processings`` table; nothing is recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from ..analysis.records.duplicate_causes import CAUSES, metric_name
from .inputs import Missing, RunOutputs
from .page import format_number


@dataclass(frozen=True)
class CauseWords:
    label: str  # what happened, in a reader's words
    change: str  # what to change so that it does not


WORDS: dict[str, CauseWords] = {
    "concurrent": CauseWords(
        "two members processing one partition at once (a zombie)",
        "keep a member's pauses and network cuts shorter than its session timeout, and make the program's writes "
        "idempotent or fenced: a member that lost its partition processes on until it learns of it"),
    "commit_failed": CauseWords(
        "commits that failed before the hand-over",
        "retry a failed commit, or commit synchronously in the revoke callback: a commit sent once the group "
        "began rebalancing fails"),
    "commit_below_record": CauseWords(
        "commits pointing below the processed records",
        "commit the next offset to read (the last processed offset + 1), after processing"),
    "aborted_transaction": CauseWords(
        "aborted transactions (exactly-once: their output discarded, the records processed again)",
        "nothing, if the output holds each result once (streams_output_duplicates 0): exactly-once re-processes "
        "what an aborted transaction held; fewer aborts come from brokers that stay reachable and transactions "
        "shorter than transaction.timeout.ms"),
    "died_before_commit": CauseWords(
        "members that died between processing and commit",
        "commit sooner after processing, or make processing idempotent: a crash or kill re-delivers all that was "
        "processed since the last commit"),
    "partition_lost_before_commit": CauseWords(
        "partitions lost without a revoke before a commit",
        "commit after each batch, and keep each poll loop within max.poll.interval.ms and the session timeout: a "
        "lost partition gives no chance to commit"),
    "auto_commit_window": CauseWords(
        "the auto-commit window (records processed after the last auto-commit)",
        "commit in the revoke callback, or synchronously after processing, instead of relying on auto-commit alone"),
    "no_commit_after_processing": CauseWords(
        "no commit after processing",
        "commit the processed offsets, at the latest in the revoke callback"),
    "unexplained": CauseWords(
        "re-deliveries the history does not explain",
        "look at the duplicate_processings table: the previous processor had committed past these records"),
}
# One record per hand-over below the commit: the program commits the record's own offset.
OFF_BY_ONE = CauseWords(
    "commits pointing at the last processed record, not the next (one record per hand-over)",
    "commit the offset after the last processed record (offset + 1), not the record's own")


def words(cause: str, gap_max: float | None) -> CauseWords:
    """A cause's words; ``commit_below_record`` with a largest gap of 1 is the off-by-one commit."""
    return OFF_BY_ONE if cause == "commit_below_record" and gap_max == 1 else WORDS[cause]


@dataclass(frozen=True)
class CauseCounts:
    """Duplicate processings per cause as metrics.json holds them (every cause known), or why they are not."""

    counts: dict[str, float]
    gap_max: float | None
    unknown: str | None = None

    def main(self) -> str | None:
        """The cause with the most duplicate processings (a tie goes to the earlier cause); None without one."""
        present = [c for c in CAUSES if self.counts.get(c)]
        return max(present, key=lambda c: (self.counts[c], -CAUSES.index(c))) if present else None


def cause_counts(out: RunOutputs) -> CauseCounts:
    if isinstance(out.metrics, Missing):
        return CauseCounts({}, None, out.metrics.reason)
    values = out.metric_values()
    redelivered = values.get("duplicates_redelivered") or {}
    counts: dict[str, float] = {}
    for cause in CAUSES:
        m = values.get(metric_name(cause))
        if isinstance(m, dict) and m.get("value") is not None:
            counts[cause] = m["value"]
        elif cause != "concurrent" and redelivered.get("value") == 0:
            counts[cause] = 0  # no re-delivery at all: none of any re-delivery cause
        else:
            why = m.get("unknown") if isinstance(m, dict) else f"{metric_name(cause)} is not in metrics.json (an older analysis)"
            return CauseCounts({}, None, why or "no value recorded")
    gap = values.get("duplicates_commit_gap_max") or {}
    return CauseCounts(counts, gap.get("value"))


def main_cause_sentence(out: RunOutputs) -> str:
    """The headline's last sentence: the main cause of the run's duplicate processings and what to change."""
    found = cause_counts(out)
    if found.unknown is not None:
        return f"Their causes are unknown ({found.unknown})."
    main = found.main()
    if main is None:
        return ""
    total = sum(found.counts.values())
    said = words(main, found.gap_max)
    others = [f"{format_number(found.counts[c])} {words(c, found.gap_max).label}" for c in CAUSES
              if c != main and found.counts.get(c)]
    rest = f" Besides: {'; '.join(others)}." if others else ""
    return (f"Main cause: {said.label} ({format_number(found.counts[main])} of {format_number(total)}): "
            f"{said.change}.{rest}")


def cause_rows(out: RunOutputs) -> dict[str, Any]:
    """The report's table: one row per cause with duplicate processings (precedence order), its count, its first
    example from ``duplicate_processings`` and what to change; or why it cannot be shown."""
    found = cause_counts(out)
    if found.unknown is not None:
        return {"missing": f"the causes of duplicate processing are unknown: {found.unknown}"}
    table = out.table("duplicate_processings")
    origin = out.time_origin_ms()
    rows = []
    for cause in CAUSES:
        if not found.counts.get(cause):
            continue
        said = words(cause, found.gap_max)
        first = None
        if table is not None and len(table):
            mine = table[table["cause"] == cause].sort_values("ts_ms")
            first = example(mine.iloc[0], origin) if len(mine) else None
        rows.append({"cause": cause, "label": said.label, "records": found.counts[cause],
                     "example": first or "not in the duplicate_processings table", "change": said.change})
    return {"rows": rows}


def example(row: pd.Series, origin_ms: int | None) -> str:
    """One duplicate processing in words: which records, who processed them before and again, and the previous
    processor's last commit before the hand-over."""
    def at(ms: Any) -> str:
        return f"{(int(ms) - origin_ms) / 1000:,.1f} s" if origin_ms is not None and _known(ms) else f"{ms} ms"

    first, last = int(row["first_offset"]), int(row["last_offset"])
    offsets = f"offset {first}" if first == last else f"offsets {first}–{last}"
    partition = int(row["partition"]) if _known(row["partition"]) else "?"  # a batch that named no partition
    said = (f"{row['topic']}-{partition} {offsets}: processed by {row['previous_member']} at "
            f"{at(row['previous_ts_ms'])}, again by {row['member']} at {at(row['ts_ms'])}")
    if _known(row.get("commit_error")):
        return f"{said}; {row['previous_member']}'s last commit, at {at(row['commit_ms'])}, failed ({row['commit_error']})"
    if _known(row.get("committed_offset")):
        return (f"{said}; {row['previous_member']}'s last commit before the hand-over was offset "
                f"{int(row['committed_offset'])}: reading resumed there")
    if row["cause"] != "concurrent":
        ended = f" (its ownership ended {row['previous_end']})" if _known(row.get("previous_end")) else ""
        return f"{said}; no commit by {row['previous_member']} after processing them{ended}"
    return said


def _known(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value)) and value is not pd.NA
