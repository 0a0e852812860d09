"""The first thing a report says when the user's program crashed: who died, how often, on which partition and of
what exception, whether it was restarted, and what the partition lost meanwhile.

Read from metrics.json (``member_crashes``, ``member_restarts``, ``crash_loops``) and the ``crash_loops`` and
``member_crashes`` tables (docs/metrics.md); nothing is recomputed. A run without a crash gets no card: the
other cards speak for it.
"""

from __future__ import annotations

import pandas as pd

from .headline import Headline, Known, _tone, duration, measured
from .inputs import Got, RunOutputs
from .page import format_number

CARD = dict(key="headline-crashes", label="crashes of your program", link="#crashes")
SHOWN_CRASHES = 3  # crashes named one by one when there is no loop
# Loops of the very same crashes (programs that died holding these partitions together each time) share these.
SAME_CRASHES = ["crashes", "members", "first_ms", "last_ms"]


def crash_headline(out: RunOutputs) -> Headline | None:
    """The crash card, or None when the program never crashed (or the figure is unknown: the other cards say so)."""
    crashes = measured(out, "member_crashes")
    if not isinstance(crashes, Known) or crashes.value == 0:
        return None
    restarts = measured(out, "member_restarts")
    tone = "bad" if _judged_invalid(out) else _tone(out, ["member_crashes", "crash_loops"], crashes)
    loops = out.table("crash_loops")
    if loops is not None and len(loops):
        return Headline(figure=format_number(crashes.value), sentence=loop_sentence(loops, out.cutoff_words()),
                        tone=tone, **CARD)
    restarted = (f"; {format_number(restarts.value)} restart(s)" if isinstance(restarts, Known) else "")
    return Headline(figure=format_number(crashes.value),
                    sentence=f"Your program crashed {_times(int(crashes.value))}: "
                             f"{_each(out.table('member_crashes'))}{restarted}.", tone=tone, **CARD)


def _judged_invalid(out: RunOutputs) -> bool:
    """The member_crashes checker found the crashes invalid (the scenario does not allow them)."""
    if not isinstance(out.result, Got):
        return False
    return any(c.checker == "member_crashes" and c.status == "invalid" for c in out.result.value.checks)


def loop_sentence(loops: pd.DataFrame, cutoff: str = "the drain ended") -> str:
    """The first loop of the ``crash_loops`` table: 'm0, m0.1 crashed 4 times in a row at events-0 (PoisonPill:
    cannot parse ...), restarted 3 times; events-0 made no progress for 21.0 s, still none when the drain ended
    (stuck at offset 41, 120 records behind).' Loops made of the very same crashes are named together: which of
    their partitions' records kill the program cannot be told, so none of them is named as the one."""
    row = loops.iloc[0]
    same = loops[(loops[SAME_CRASHES] == row[SAME_CRASHES]).all(axis=1) | (loops.index == loops.index[0])]
    where = ", ".join(f"{topic}-{int(partition)}" for topic, partition in zip(same["topic"], same["partition"]))
    members = str(row["members"]).replace(",", ", ")
    restarts = int(row["restarts"])
    restarted = ("restarted each time" if restarts == int(row["crashes"]) else
                 f"restarted {_times(restarts)}" if restarts else "never restarted")
    if len(same) > 1:
        sentence = (f"{members} crashed {_times(int(row['crashes']))} in a row holding {where} together "
                    f"({_exception(row)}), {restarted}; the same crashes for each, so which partition's records kill "
                    "it cannot be told (the program may crash whatever it reads)")
        pauses = [float(p) for p in same["pause_ms"] if _known(p)]
        if len(pauses) == len(same):
            sentence += f"; none of them made progress for {duration(min(pauses))}"
            if all(_known(o) and bool(o) for o in same["pause_open"]):
                sentence += f", still none when {cutoff}"
    else:
        sentence = (f"{members} crashed {_times(int(row['crashes']))} in a row at {where} ({_exception(row)}), "
                    f"{restarted}")
        if _known(row.get("pause_ms")):
            sentence += f"; {where} made no progress for {duration(float(row['pause_ms']))}"
            if _known(row.get("pause_open")) and bool(row["pause_open"]):
                sentence += f", still none when {cutoff}"
        stuck = [f"stuck at offset {int(row['stuck_at_offset'])}"] if _known(row.get("stuck_at_offset")) else []
        stuck += [f"{format_number(row['records_behind'])} records behind"] if _known(row.get("records_behind")) else []
        if stuck:
            sentence += f" ({', '.join(stuck)})"
    if more := len(loops) - len(same):
        sentence += f"; {more} more partition(s) in a crash loop"
    return sentence + "."


def _each(crashes: pd.DataFrame | None) -> str:
    if crashes is None or not len(crashes):
        return "(the member_crashes table is missing)"
    named = [f"{r['member']} ({_exception(r)})" for _, r in crashes.head(SHOWN_CRASHES).iterrows()]
    more = f" and {len(crashes) - SHOWN_CRASHES} more" if len(crashes) > SHOWN_CRASHES else ""
    return ", ".join(named) + more


def _exception(row: pd.Series) -> str:
    """'PoisonPill: cannot parse ...', or how it exited (the tables' ``exit``) when its output showed no
    exception."""
    kind = row.get("exception_type")
    if not _known(kind):
        return f"{row['exit']}, no exception in its output"
    message = row.get("message")
    return f"{kind}: {message}" if _known(message) and message else str(kind)


def _known(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and pd.isna(value)) and value is not pd.NA


def _times(n: int) -> str:
    return "once" if n == 1 else "twice" if n == 2 else f"{n} times"


__all__ = ["crash_headline", "loop_sentence"]
