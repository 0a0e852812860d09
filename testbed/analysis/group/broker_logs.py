"""Group-coordinator lines of Kafka broker logs, parsed into rows, and classic rebalances paired.

Lines look like ``[2026-11-22 10:00:00,123] INFO [GroupCoordinator id=1] Stabilized group g
generation 4 with 3 members. (org.apache.kafka.coordinator.group.GroupMetadataManager)``; the
prefix inside the message varies between Kafka versions, so the patterns search, not match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from ...history.broker_log import FENCED_SILENT, SLOW_CONTROLLER
from ...history.events import BROKER_OUTAGES, Action
from ...run.layout import broker_log_name
from ...settings import settings
from ..intervals import Window, paired_windows

# KIP-848 lines open with "[GroupId g] ", KIP-1071 (streams group) lines with "[GroupId g][MemberId m] ".
_GROUP = r"(?:\[GroupId (?P<group>[^\]]+)\](?:\[MemberId [^\]]+\])? )?"
_PREFIX = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
_PATTERNS = {
    "prepare": re.compile(
        r"Preparing to rebalance group (?P<group>\S+) in state (?P<state>\S+) with old generation (?P<gen>-?\d+)"
        r".*?\(reason: (?P<reason>.*?)\)\.?\s*(\((?:org\.apache|kafka\.)|$)"
    ),
    "stabilized": re.compile(r"Stabilized group (?P<group>\S+) generation (?P<gen>-?\d+)(?: \([^)]*\))? with (?P<members>\d+) members"),
    "epoch_bump": re.compile(_GROUP + r"Bumped (?:streams )?group epoch to (?P<gen>-?\d+)"),
    "target_assignment": re.compile(
        r"(?:\[GroupId (?P<group>[^\]]+)\] )?Computed a new target assignment for epoch (?P<gen>-?\d+) with "
        r"'(?P<assignor>[^']*)' assignor in (?P<compute>\d+)ms"
    ),
    "fenced": re.compile(_GROUP + r"(?:Streams )?[Mm]ember (?P<member>\S+) fenced from the group because "
                         r"(?P<reason>.*?)\.?\s*(\((?:org\.apache|kafka\.)|$)"),
    # The controller's, naming no group: the broker's partitions and its groups' coordination are gone with it.
    "broker_fenced": re.compile(r"Fencing broker (?P<fenced>\d+) at epoch -?\d+ " + re.escape(FENCED_SILENT)),
    # The controller's work stalled (``broker`` is the controller's node): its thread ran one event that long.
    "controller_slow": re.compile(re.escape(SLOW_CONTROLLER) + r" \S+ took (?P<took>\d+) ms"),
}
# The stall lines parsed (``broker_fenced``, ``controller_slow``): what the runner reads of a run's copied logs.
_STALLS = (FENCED_SILENT, SLOW_CONTROLLER)
# What a line must hold to be parsed at all (the rest never leaves Spark): one alternative per pattern above.
KEEP = ("Preparing to rebalance group|Stabilized group|Bumped group epoch|Bumped streams group epoch|"
        "Computed a new target assignment|fenced from the group|" + "|".join(_STALLS))


@dataclass(frozen=True)
class BrokerLine:
    broker: str
    ts_ms: int
    event: str
    group_id: str | None = None
    generation: int | None = None
    members: int | None = None
    state: str | None = None
    reason: str | None = None
    assignor: str | None = None
    compute_ms: int | None = None
    member: str | None = None
    fenced: int | None = None  # broker_fenced: the broker the controller fenced (``broker`` is the controller's log)
    took_ms: int | None = None  # controller_slow: how long the event ran


@dataclass(frozen=True)
class BrokerRebalance:
    """A classic group's Preparing-to-rebalance line paired with the next Stabilized line."""

    broker: str
    group_id: str
    prepare_ms: int
    stabilized_ms: int
    generation: int


def log_zone() -> ZoneInfo:
    return ZoneInfo(settings().broker_log_tz)


def parse_line(broker: str, line: str, zone: ZoneInfo | None = None) -> BrokerLine | None:
    head = _PREFIX.match(line)
    if not head:
        return None
    ts = datetime.strptime(head["ts"], "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=zone or log_zone())
    ts_ms = int(ts.timestamp() * 1000)
    for event, pattern in _PATTERNS.items():
        m = pattern.search(line)
        if not m:
            continue
        g = m.groupdict()
        return BrokerLine(
            broker=broker,
            ts_ms=ts_ms,
            event=event,
            group_id=g.get("group"),
            generation=int(g["gen"]) if g.get("gen") else None,
            members=int(g["members"]) if g.get("members") else None,
            state=g.get("state"),
            reason=g.get("reason"),
            assignor=g.get("assignor"),
            compute_ms=int(g["compute"]) if g.get("compute") else None,
            member=g.get("member"),
            fenced=int(g["fenced"]) if g.get("fenced") else None,
            took_ms=int(g["took"]) if g.get("took") else None,
        )
    return None


def parse_lines(lines: Iterable[tuple[str, str]]) -> list[BrokerLine]:
    zone = log_zone()
    parsed = (parse_line(broker, line, zone) for broker, line in lines)
    return sorted((p for p in parsed if p is not None), key=lambda p: (p.ts_ms, p.broker))


# A broker a step took down or froze is fenced when its session times out (9 s by default), also just after the
# step's end: a frozen single node's controller, frozen with it, fences it as they resume, and logs the events that
# waited out the freeze as slow.
FENCE_AFTER_FAULT_MS = 15_000


def _stalled_broker(ln: BrokerLine) -> str:
    """The broker a stall line is about: the one fenced, or the node whose controller stalled."""
    return f"broker-{ln.fenced if ln.event == 'broker_fenced' else ln.broker}"


def broker_stalls(lines: Iterable[BrokerLine], start_ms: int | None, end_ms: int | None,
                  actions: Iterable[Mapping[str, Any]] = ()) -> list[BrokerLine]:
    """The controllers' fences of a broker whose session timed out and their events that ran for seconds, inside
    the run's window, once each (with several controllers' logs a line may be in one only; a node's log never
    repeats one), but those of a broker the run's own steps had taken down or frozen (``actions``, the harness's):
    those are the steps' doing."""
    ordered = sorted(actions, key=lambda a: a["ts_ms"])
    # An outage the run never ended covers every later line of that broker.
    own = paired_windows(ordered, BROKER_OUTAGES, end_of_run=2**62, grace_ms=FENCE_AFTER_FAULT_MS)
    own += [Window(a["target"], a["ts_ms"], a["ts_ms"] + FENCE_AFTER_FAULT_MS)  # a restart is an instant
            for a in ordered if a["kind"] == Action.BROKER_RESTART]

    def the_runs_doing(ln: BrokerLine) -> bool:
        return any(w.target == _stalled_broker(ln) and w.start_ms <= ln.ts_ms <= w.end_ms for w in own)

    seen = {(ln.event, _stalled_broker(ln), ln.ts_ms, ln.took_ms): ln for ln in lines
            if ln.event in ("broker_fenced", "controller_slow")
            and (start_ms is None or ln.ts_ms >= start_ms) and (end_ms is None or ln.ts_ms <= end_ms)
            and not the_runs_doing(ln)}
    return sorted(seen.values(), key=lambda ln: (ln.ts_ms, ln.event, _stalled_broker(ln)))


def _utc(ts_ms: int) -> str:
    return f"{datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc):%H:%M:%S.%f}"[:-3] + " UTC"


def controller_stalls(slow: Iterable[BrokerLine]) -> list[Window]:
    """Slow controller events as stalls of their node: the events one stall held up end together, each having run
    for part of it, so overlapping events are one stall (from the earliest start to the latest end)."""
    merged: list[Window] = []
    for ln in sorted(slow, key=lambda ln: (ln.broker, ln.ts_ms - (ln.took_ms or 0))):
        start, end = ln.ts_ms - (ln.took_ms or 0), ln.ts_ms
        if merged and merged[-1].target == ln.broker and start <= merged[-1].end_ms:
            merged[-1] = Window(ln.broker, merged[-1].start_ms, max(end, merged[-1].end_ms))
        else:
            merged.append(Window(ln.broker, start, end))
    return merged


def stall_note(stalls: list[BrokerLine]) -> str | None:
    """The stalls in a sentence or two, or None. A broker is fenced only when it or its host stalled for its session
    timeout, and every group on it lost its coordinator and leaders until it was back; a controller's event runs for
    seconds when its node could not run it (a starved or frozen broker: its host's CPU, a pause from outside), and
    every client of that broker waited as long."""
    fences = [ln for ln in stalls if ln.event == "broker_fenced"]
    held = controller_stalls(ln for ln in stalls if ln.event == "controller_slow")
    said = []
    if fences:
        at = ", ".join(f"broker {f.fenced} at {_utc(f.ts_ms)}" for f in fences)
        said.append(f"the controller fenced a broker whose heartbeats had stopped for its session timeout "
                    f"(broker.session.timeout.ms: the broker or its host stalled) {len(fences)} time(s): {at}; its "
                    f"partitions and groups had no leader or coordinator until it was unfenced, which the figures "
                    f"around then carry")
    if held:
        longest = max(held, key=lambda w: w.end_ms - w.start_ms)
        said.append(f"a controller's work stalled for 2 s or more {len(held)} time(s), the longest "
                    f"{(longest.end_ms - longest.start_ms) / 1000:.1f} s (broker {longest.target}, until "
                    f"{_utc(longest.end_ms)}): the broker could not run (its host's CPU or memory, a pause from "
                    f"outside), and its clients waited as long, which the figures around then carry")
    return "; ".join(said) or None


def run_stalls_note(brokers_dir: Path, start_ms: int, end_ms: int, actions: Iterable[Mapping[str, Any]] = ()
                    ) -> str | None:
    """The stalls logged in a run's copied ``brokers/broker-<id>.log`` between ``start_ms`` and ``end_ms``, but
    those of the run's own broker faults (``actions``), in a sentence, or None, without Spark: what the runner adds
    to the reason of a run that did not complete (a shared cluster's log holds other runs' time too)."""
    zone, lines = log_zone(), []
    for log in sorted(brokers_dir.glob(broker_log_name("*"))):
        broker = log.stem.removeprefix("broker-")
        lines += [parsed for line in log.read_text(errors="replace").splitlines()
                  if any(phrase in line for phrase in _STALLS) and (parsed := parse_line(broker, line, zone))]
    return stall_note(broker_stalls(lines, start_ms, end_ms, actions))


def classic_rebalances(lines: Iterable[BrokerLine]) -> list[BrokerRebalance]:
    """Pair each group's first Preparing line with its next Stabilized line (per broker: the coordinator)."""
    open_: dict[tuple[str, str | None], BrokerLine] = {}
    out: list[BrokerRebalance] = []
    for ln in lines:
        key = (ln.broker, ln.group_id)
        if ln.event == "prepare":
            open_.setdefault(key, ln)
        elif ln.event == "stabilized" and key in open_:
            start = open_.pop(key)
            out.append(BrokerRebalance(ln.broker, ln.group_id or "", start.ts_ms, ln.ts_ms, ln.generation or 0))
    return out


def for_group(lines: Iterable[BrokerLine], group_ids: set[str], start_ms: int | None, end_ms: int | None,
              slack_ms: int = 2_000) -> list[BrokerLine]:
    """The lines of the run's own group(s) inside the run's time window (a shared cluster's log holds
    every group that ever ran on it). Lines that name no group cannot be scoped and are left out."""
    lo = start_ms - slack_ms if start_ms is not None else None
    hi = end_ms + slack_ms if end_ms is not None else None
    return [ln for ln in lines if ln.group_id in group_ids
            and (lo is None or ln.ts_ms >= lo) and (hi is None or ln.ts_ms <= hi)]


@dataclass(frozen=True)
class BrokerReaction:
    """The coordinator's part of one rebalance, whatever the protocol: its first reaction (classic
    Preparing, consumer-protocol epoch bump) and the end of its coordination (Stabilized, or the new
    target assignment)."""

    reaction_ms: int
    coordinated_ms: int | None
    protocol: str  # classic | consumer
    generation: int | None


def broker_reactions(lines: Iterable[BrokerLine]) -> list[BrokerReaction]:
    """Classic Preparing → Stabilized pairs, and consumer-protocol epoch bumps each with the first
    target assignment computed for that epoch or a later one."""
    lines = list(lines)
    out = [BrokerReaction(r.prepare_ms, r.stabilized_ms, "classic", r.generation) for r in classic_rebalances(lines)]
    targets = [ln for ln in lines if ln.event == "target_assignment"]
    for ln in lines:
        if ln.event != "epoch_bump":
            continue
        done = next((t.ts_ms for t in targets if t.ts_ms >= ln.ts_ms and (t.generation or 0) >= (ln.generation or 0)), None)
        out.append(BrokerReaction(ln.ts_ms, done, "consumer", ln.generation))
    return sorted(out, key=lambda r: r.reaction_ms)
