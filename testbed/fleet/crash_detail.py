"""What a crashed program's last output says: the exception that ended it, read from its log's last lines.

Pure text in, ``{type, message}`` out (or None): a Python traceback's final line (``Traceback (most recent call
last):`` ... ``pkg.PoisonPill: cannot parse``), else a JVM's uncaught exception (``Exception in thread "main"
java.lang.IllegalStateException: ...``, or a stack trace's head line followed by ``\tat`` frames), with its last
``Caused by:`` kept as ``caused_by``. The last exception in the tail wins: it is the one the program died of.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

LOG_TAIL_LINES = 20  # of the program's output, kept in the crash event
MESSAGE_CHARS = 300  # an exception's message, cut to this in the event and the report

_PY_TRACEBACK = "Traceback (most recent call last):"
# ``pkg.mod.Name: message`` or ``Name`` alone: an exception's type as Python prints it (dotted, no spaces).
_PY_FINAL = re.compile(r"^([A-Za-z_][\w.]*)(?::\s?(.*))?$")
# A Java throwable's class: a dotted name whose last part names an exception or error.
_JAVA_CLASS = r"(?:[a-zA-Z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable|Failure)[\w$]*"
_JAVA_UNCAUGHT = re.compile(r'^Exception in thread "[^"]*" (' + _JAVA_CLASS + r")(?::\s?(.*))?$")
_JAVA_HEAD = re.compile(r"^(" + _JAVA_CLASS + r")(?::\s?(.*))?$")
_JAVA_CAUSED_BY = re.compile(r"^Caused by: (" + _JAVA_CLASS + r")(?::\s?(.*))?$")
_JAVA_FRAME = re.compile(r"^\s+at |^\s+\.\.\. \d+ more")


def exception_of(lines: Sequence[str]) -> dict[str, str] | None:
    """The exception a program died of, by its output's last lines; None when they show none."""
    return _python(lines) or _java(lines)


def _short_type(name: str) -> str:
    """``__main__.PoisonPill`` reads ``PoisonPill``: the script's own module says nothing to the reader."""
    return name.removeprefix("__main__.")


def _exception(kind: str, message: str | None) -> dict[str, str]:
    return {"type": _short_type(kind), "message": (message or "").strip()[:MESSAGE_CHARS]}


def _python(lines: Sequence[str]) -> dict[str, str] | None:
    starts = [i for i, line in enumerate(lines) if line.rstrip() == _PY_TRACEBACK]
    if not starts:
        return None
    # The frames are indented; the first line after the last traceback's header that is not is its final line
    # (a chained traceback's 'During handling ...' comes before a later header, so the last header is the end).
    for line in lines[starts[-1] + 1:]:
        if not line.strip() or line[0].isspace():
            continue
        match = _PY_FINAL.match(line.rstrip())
        return _exception(match[1], match[2]) if match else None
    return None


def _java(lines: Sequence[str]) -> dict[str, str] | None:
    found: dict[str, str] | None = None
    for i, line in enumerate(lines):
        text = line.rstrip()
        if match := _JAVA_UNCAUGHT.match(text):
            found = _exception(match[1], match[2])
        elif (match := _JAVA_HEAD.match(text)) and i + 1 < len(lines) and _JAVA_FRAME.match(lines[i + 1]):
            found = _exception(match[1], match[2])  # a printed stack trace: its head line, then its frames
        elif (match := _JAVA_CAUSED_BY.match(text)) and found is not None:
            found["caused_by"] = f"{match[1]}: {(match[2] or '').strip()}"[:MESSAGE_CHARS]
    return found


__all__ = ["LOG_TAIL_LINES", "MESSAGE_CHARS", "exception_of"]
