"""A JVM's thread dump, its answer to the stacks signal (SIGQUIT) written to the member's log, read back: where
a thread of interest stands, in a line a wait's diagnostics can print (a Streams instance that never gets to
RUNNING says what its stream thread waits on)."""

from __future__ import annotations

import re
from collections.abc import Callable

DUMP_START = "Full thread dump"
DUMP_END = "JNI global refs"  # the line after the last thread of a HotSpot dump
_HEADER = re.compile(r'^"(?P<name>[^"]+)"')
_STATE = "java.lang.Thread.State:"
_MODULE = re.compile(r"\([^/()]+/")  # "(java.base@17.0.15/Native Method)": the module says nothing here


def last_dump(lines: list[str]) -> list[str] | None:
    """The lines of the last complete thread dump among ``lines`` (a log's tail), or None."""
    starts = [i for i, line in enumerate(lines) if line.startswith(DUMP_START)]
    if not starts:
        return None
    dump = lines[starts[-1]:]
    end = next((i for i, line in enumerate(dump) if line.strip().startswith(DUMP_END)), None)
    return dump[:end] if end is not None else None


def thread_lines(dump: list[str], name: re.Pattern[str], frames: int = 10) -> list[str]:
    """One line per thread whose name ``name`` finds: its name, state and top ``frames`` frames, innermost first
    (``a < b`` reads: a, called from b)."""
    found: list[str] = []
    thread: str | None = None
    state, stack = "", []

    def close() -> None:
        if thread is not None and name.search(thread):
            found.append(f"{thread}: {state or 'state unknown'}" + (f" at {' < '.join(stack)}" if stack else ""))

    for raw in dump:
        line = raw.strip()
        if header := _HEADER.match(line):
            close()
            thread, state, stack = header.group("name"), "", []
        elif thread is not None and line.startswith(_STATE):
            state = line.removeprefix(_STATE).strip()
        elif thread is not None and line.startswith("at ") and len(stack) < frames:
            stack.append(_MODULE.sub("(", line.removeprefix("at ")))
    close()
    return found


def dump_reader(name: re.Pattern[str], what: str) -> Callable[[list[str]], list[str] | None]:
    """A reader for ``fleet.stacks.stacks_now``: the threads ``name`` finds in the last complete dump among a log's
    lines (None: no complete dump yet), or a line saying the dump shows no ``what``."""
    def read(lines: list[str]) -> list[str] | None:
        if (dump := last_dump(lines)) is None:
            return None
        return thread_lines(dump, name) or [f"its thread dump shows no {what}"]

    return read
