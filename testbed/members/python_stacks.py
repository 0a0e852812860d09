"""A Python process's stacks, faulthandler's answer to the stacks signal (``runtime.STACKS_SIGNAL``) written to the
member's log, read back into a line per thread that a wait's diagnostics can print: where a member that hangs in
its client waits.

faulthandler writes one block per thread, ``Thread 0x... (most recent call first):`` or ``Current thread 0x...``
(the thread that ran the handler) followed by its frames innermost first, blocks apart by a blank line, and no line
after the last: a dump is complete once the log stops growing (``PythonDumpReader``)."""

from __future__ import annotations

import re

_HEADER = re.compile(r"^(?:Current thread|Thread) (?P<id>0x[0-9a-f]+) \(most recent call first\):$")
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')


def _short(path: str) -> str:
    """The last two parts of a frame's file: enough to tell kafka/net/selector.py from threading.py."""
    return "/".join(path.split("/")[-2:])


def python_threads(lines: list[str], frames: int = 8) -> list[str]:
    """One line per thread of the first dump among ``lines`` (a log since the ask): its id and its top ``frames``
    frames, innermost first (``a < b`` reads: a, called from b); [] when ``lines`` hold no dump."""
    first = next((i for i, line in enumerate(lines) if _HEADER.match(line.strip())), None)
    if first is None:
        return []
    found: list[str] = []
    thread: str | None = None
    stack: list[str] = []
    notes: list[str] = []  # what faulthandler says in place of frames: "Garbage-collecting", "<no Python frame>"

    def close() -> None:
        if thread is not None:
            where = f" at {' < '.join(stack)}" if stack else f": {', '.join(notes) or 'no frame'}"
            found.append(f"thread {thread}{where}")

    for raw in lines[first:]:
        line = raw.strip()
        if header := _HEADER.match(line):
            close()
            thread, stack, notes = header.group("id"), [], []
        elif thread is not None and (frame := _FRAME.match(raw)):
            if len(stack) < frames:
                stack.append(f"{frame.group('func')} ({_short(frame.group('file'))}:{frame.group('line')})")
        elif thread is not None and raw.startswith("  ") and line:
            notes.append(line)
        elif line:
            break  # the process wrote on after its dump
    close()
    return found


class PythonDumpReader:
    """``stacks_now``'s reader of a faulthandler dump: its threads once the log holds a dump and has not grown since
    the previous read (the handler writes the whole dump at once; a read mid-write sees the log grow)."""

    def __init__(self) -> None:
        self._seen = -1

    def __call__(self, lines: list[str]) -> list[str] | None:
        threads = python_threads(lines)
        settled, self._seen = len(lines) == self._seen, len(lines)
        return threads if threads and settled else None
