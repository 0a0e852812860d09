"""A Python process's faulthandler dump read back into a line per thread (testbed.members.python_stacks)."""

from __future__ import annotations

import subprocess
import sys

from testbed.members.python_stacks import PythonDumpReader, python_threads

# A process that dumps its threads as a runner does on the stacks signal, between two lines of its own log.
DUMPING = """
import faulthandler, sys, threading
def waits_on_io(event):
    event.wait()
event = threading.Event()
threading.Thread(target=waits_on_io, args=(event,), daemon=True).start()
def main_loop():
    print("INFO before the dump", file=sys.stderr, flush=True)
    faulthandler.dump_traceback(all_threads=True)
    print("INFO after the dump", file=sys.stderr, flush=True)
main_loop()
event.set()
"""


def _dump_log() -> list[str]:
    run = subprocess.run([sys.executable, "-c", DUMPING], capture_output=True, text=True, timeout=30, check=True)
    return run.stderr.splitlines()


def test_every_thread_of_a_real_dump_is_a_line_with_its_innermost_frame_first() -> None:
    lines = _dump_log()
    threads = python_threads(lines)
    assert len(threads) == 2, lines
    by_top = {line.split(" at ", 1)[1].split(" < ")[0].split(" (")[0]: line for line in threads}
    assert set(by_top) == {"main_loop", "wait"}, threads  # the helper thread waits in Event.wait
    assert " < waits_on_io (" in by_top["wait"] and "threading.py:" in by_top["wait"], threads
    assert by_top["main_loop"].endswith(" < <module> (<string>:11)"), threads
    assert all(line.startswith("thread 0x") for line in threads)


def test_a_log_without_a_dump_has_no_threads_and_frames_are_capped() -> None:
    assert python_threads(["INFO joined the group", "INFO assigned 4 partitions"]) == []
    deep = ["Thread 0x00007f00 (most recent call first):"] + [f'  File "/x/m{i}.py", line {i} in f{i}'
                                                              for i in range(20)]
    (line,) = python_threads(deep, frames=3)
    assert line == "thread 0x00007f00 at f0 (x/m0.py:0) < f1 (x/m1.py:1) < f2 (x/m2.py:2)"


def test_a_thread_caught_without_python_frames_says_what_faulthandler_said() -> None:
    # a kafka-python runner's main thread caught in the garbage collector (seen in a refused member's log)
    lines = ["ERROR kafka.coordinator: Attempt to join group g failed due to fatal error",
             "Current thread 0x00007f03ade80b80 (most recent call first):", "  Garbage-collecting",
             "  <no Python frame>", "", "Thread 0x00007f03a0000000 (most recent call first):",
             '  File "/v/kafka/net/selector.py", line 602 in _poll_once', "INFO after"]
    assert python_threads(lines) == ["thread 0x00007f03ade80b80: Garbage-collecting, <no Python frame>",
                                     "thread 0x00007f03a0000000 at _poll_once (net/selector.py:602)"]


def test_the_reader_answers_once_the_log_holds_a_dump_and_stopped_growing() -> None:
    lines = _dump_log()
    header = next(i for i, line in enumerate(lines) if "most recent call first" in line)
    reader = PythonDumpReader()
    assert reader(lines[:header]) is None  # no dump yet
    assert reader(lines[:header + 2]) is None  # a dump begun: the log grew since the last read
    assert reader(lines) is None  # grown again
    assert reader(lines) == python_threads(lines)  # settled
