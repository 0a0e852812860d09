"""A run whose members wrote nothing: how each of them ended, and its last log lines.

A member writes its own history (history/members/<member>.jsonl) from its first event on. One that dies at
start, or that the run stops before it is up (a scenario without a ``wait_stable`` step can end before its
members have joined), leaves none, and the analysis has nothing to read. This says why, from the saved files
only (the harness's ``member_start``/``member_stop``/``member_exit`` actions and the members' own output under
logs/), for the runner's error and the analysis's refusal alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..run.layout import RunDir
from ..waits import file_tail
from .events import Action
from .harness import read_actions

NOTHING_WRITTEN = "no member wrote to its history"
OUTPUTS_SHOWN = 3  # distinct member outputs quoted; members whose output ends alike share one quote
LOG_LINES = 12


@dataclass(frozen=True)
class SilentMembers:
    """Why no member wrote to its history: a one-line ``headline`` and, per member, how it ended and its output."""

    headline: str
    details: str = ""

    @property
    def message(self) -> str:
        return f"{self.headline}\n{self.details}".rstrip()


def wrote_history(path: Path) -> bool:
    """Whether the history file holds at least one whole line (a member killed mid-write leaves a torn one)."""
    try:
        with path.open("rb") as f:
            return f.readline().endswith(b"\n")
    except OSError:
        return False


def silent_members(run: RunDir) -> SilentMembers | None:
    """None when a member wrote to its history, or when ``run`` has no harness log (not a run directory: the
    caller says so); else why no member wrote."""
    if not run.harness_log.is_file() or any(wrote_history(p) for p in run.members.glob("*.jsonl")):
        return None
    actions = read_actions(run.harness_log)
    started = {a.target: a.detail for a in actions if a.kind == Action.MEMBER_START and a.target}
    if not started:
        return SilentMembers(f"{NOTHING_WRITTEN}: the run started none (history/harness.jsonl has no "
                             "member_start action; the run's error says what ended it first)")
    exits = {a.target: a.detail for a in actions if a.kind == Action.MEMBER_EXIT and a.target}
    at_close = {a.target for a in actions if a.kind == Action.MEMBER_STOP and a.detail.get("reason") == "fleet_close"}
    headline = f"{NOTHING_WRITTEN}: the run's {_count(len(started))} ended before their first event"
    if exits and all(d.get("cause") == "exited" for d in exits.values()):
        headline += ", each by itself (they died at start: their output is below)"
    elif set(started) <= at_close:
        headline += (": the run stopped them at its end before they were up (its steps do not wait for the group; a "
                     "wait_stable step does)")
    quotes: dict[str, tuple[list[str], list[str]]] = {}  # output tail -> (the members, the logs) that show it
    for member, detail in started.items():
        log = run.member_output(detail.get("host") or member)
        members, logs = quotes.setdefault(file_tail(log, LOG_LINES), ([], []))
        members.append(f"{member} ({_ended(exits.get(member), member in at_close)})")
        logs.append(log.relative_to(run.root).as_posix())
    details = [f"{', '.join(members)}; last lines of {', '.join(dict.fromkeys(logs))}:\n    "
               + (tail.replace("\n", "\n    ") or "(no output)")
               for tail, (members, logs) in list(quotes.items())[:OUTPUTS_SHOWN]]
    if len(quotes) > OUTPUTS_SHOWN:
        details.append(f"(and {len(quotes) - OUTPUTS_SHOWN} more members with other output under logs/)")
    return SilentMembers(headline, "\n".join(details))


def _count(n: int) -> str:
    return "1 member" if n == 1 else f"{n} members"


def _ended(detail: dict[str, Any] | None, at_close: bool) -> str:
    if detail is None:
        return "its end was not recorded"
    how = f"killed by {detail['signal']}" if detail.get("signal") else f"exit code {detail.get('exit_code')}"
    why = {"exited": "by itself", "stopped": "asked to stop", "stop_timeout": "asked to stop, then killed",
           "killed": "killed by the run"}.get(str(detail.get("cause")), str(detail.get("cause")))
    return f"{how}, {why}" + (" at the run's end" if at_close and detail.get("cause") != "exited" else "")

