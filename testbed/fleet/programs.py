"""The user's own consumer program as a member: its start is watched until it subscribes as the run expects.

A program that exits at start, never subscribes, or joins another group or topics than the run's would
otherwise leave the run waiting out a stable-group timeout with nothing to say why. Its instrumentation
writes ``started`` at the consumer's first subscribe (testbed.instrument), with the group and topics the
program chose; the fleet checks them against the run's and ends the run at once with the program's last
output lines when anything is off.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import TestbedError, WaitAborted, WaitTimeout
from ..history.events import ClientError, Started
from ..history.writer import read_events
from ..waits import wait_until
from .crashes import is_crash
from .member import Member

LOG_LINES = 20  # of the program's output, in the error


class ProgramStartError(TestbedError):
    """A command member's program did not start as a member of the run; the message says why, with its output."""


class ProgramCrashedAtStart(ProgramStartError):
    """The program crashed (a non-zero exit, a signal) before its consumer subscribed. At the fleet's first start
    that is most likely a program that cannot run at all; in a rollout it is the new version crash-looping, a
    finding (its ``member_crash`` is recorded and its restart policy applies)."""


def first_subscribe(proc: Member) -> Started | ClientError | None:
    """The program's ``started`` event, or the fatal error its instrumentation wrote first; None while neither."""
    path = proc.config.history_path
    if not path.exists():
        return None
    for event in read_events(path):
        if isinstance(event, Started) or (isinstance(event, ClientError) and event.fatal):
            return event
    return None


def _output(proc: Member) -> str:
    lines = proc.log_tail(LOG_LINES)
    where = proc.config.log_path
    return (f"its last output ({where}):\n  " + "\n  ".join(lines)) if lines else f"it wrote no output ({where})"


def _runs_topic(subscribed: str, topics: Sequence[str]) -> bool:
    """A topic of the run, or a pattern subscription ('^...', as both clients take it) matching one of them."""
    if subscribed.startswith("^"):
        try:
            return any(re.match(subscribed, t) for t in topics)
        except re.error:
            return False
    return subscribed in topics


def wait_program_subscribed(proc: Member, group_id: str, topics: Sequence[str],
                            written_only: Sequence[str] = ()) -> Started:
    """Until the program's consumer subscribed to the run's group and topics (the consumed ones; ``written_only``:
    the run's topics the group does not read); ProgramStartError otherwise."""
    spec = proc.config.spec
    who = f"member {proc.member_id} (spec {spec.name!r}, command {' '.join(spec.command or ())!r})"

    def exited() -> str | None:
        return None if proc.alive() else f"the program ended ({proc.ended_how})" if proc.ended_how else "the program ended"

    try:
        event = wait_until(lambda: first_subscribe(proc), timeout_s=spec.start_timeout_s, interval_s=0.05,
                           what=f"{who} to subscribe (its consumer's first subscribe)", abort=exited)
    except WaitAborted as exc:
        # It may have subscribed and then ended: what it wrote says more than the exit alone.
        event = first_subscribe(proc)
        if event is None:
            proc.wait_exit_recorded()
            error = ProgramCrashedAtStart if is_crash(True, proc.exit_info or {}) else ProgramStartError
            raise error(f"{who} ended before its consumer subscribed: {exc}; {_output(proc)}") from None
    except WaitTimeout:
        raise ProgramStartError(
            f"{who} did not subscribe within start_timeout_s={spec.start_timeout_s:g}: it runs but never called "
            f"subscribe() on a {spec.client} consumer; {_output(proc)}") from None
    if isinstance(event, ClientError):
        raise ProgramStartError(f"{who}: testbed's instrumentation failed in it: {event.code}: {event.message}; "
                                f"{_output(proc)}")
    problems = []
    if event.client != spec.client:
        problems.append(f"its consumer is {event.client}, the spec says client {spec.client}")
    if event.group_id != group_id:
        problems.append(f"it joined group {event.group_id!r}, not the run's {group_id!r} (pass {{group_id}} in env)")
    if unknown := sorted(t for t in event.topics if not _runs_topic(t, topics)):
        written = [t for t in unknown if t in written_only]
        problems.append(f"it subscribed to {', '.join(map(repr, unknown))}, which "
                        + (f"the scenario marks consumed: false ({', '.join(written)}: drop it there to have the "
                           "group read it)" if written else "the scenario does not have")
                        + f" (the topics the group reads: {', '.join(topics)}; pass {{topic:<name>}} in env)")
    if problems:
        raise ProgramStartError(f"{who}: {'; '.join(problems)}; {_output(proc)}")
    return event
