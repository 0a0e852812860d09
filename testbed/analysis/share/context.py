"""What the harness and the members' own stops say about a share group (KIP-932): its settings, and when
each member stopped holding records (it left, died, or was cut off).

Pure Python over the (small) harness list and ``stopped`` times; the record-level part is
``share.deliveries``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...history.events import Action

# A member that is cut off holds its acquired records without acknowledging them: a SIGSTOP, a poll loop
# stalled, a network partition from the brokers. Each opens a span its own action closes; a member's exit or
# kill closes it too.
CUT_OFFS: dict[Action, Action] = {Action.MEMBER_PAUSE: Action.MEMBER_RESUME, Action.MEMBER_STALL: Action.MEMBER_UNSTALL,
                                  Action.MEMBER_PARTITION: Action.MEMBER_HEAL}
# How a member stopped holding records: ``left`` = it closed (the broker releases what it held at once, with
# the delivery count given back: SharePartition.releaseAcquiredRecords); ``killed`` = it died (SIGKILL, a
# crash, a stop that timed out): its locks run out, or its session does.
LEFT, KILLED = "left", "killed"


@dataclass(frozen=True)
class ShareGroupConfig:
    """The share group's settings in force (harness ``share_group_config``); None where the detail lacks one."""

    group_id: str
    record_lock_duration_ms: int | None
    delivery_count_limit: int | None
    auto_offset_reset: str | None


@dataclass(frozen=True)
class MemberEnd:
    """The first moment a member stopped holding records, and how (``LEFT`` or ``KILLED``)."""

    ms: int
    kind: str


@dataclass(frozen=True)
class CutOff:
    member: str
    start_ms: int
    end_ms: int  # the run's end (or a far future) for a span never closed
    kind: str  # the harness action that opened it


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


def share_group_configs(harness: list[dict[str, Any]]) -> dict[str, ShareGroupConfig]:
    """The first ``share_group_config`` of each group (written once per group at the run's start)."""
    out: dict[str, ShareGroupConfig] = {}
    for h in harness:
        detail = h.get("detail") or {}
        group = detail.get("group_id")
        if h["kind"] == Action.SHARE_GROUP_CONFIG and group and group not in out:
            out[group] = ShareGroupConfig(group, _int(detail.get("record_lock_duration_ms")),
                                          _int(detail.get("delivery_count_limit")), detail.get("auto_offset_reset"))
    return out


def member_ends(harness: list[dict[str, Any]], stopped_ms: dict[str, int]) -> dict[str, MemberEnd]:
    """The earliest of: the harness's ``member_stop`` (SIGTERM: the close starts, and a closing member may
    give its records back before it writes ``stopped``), ``member_kill``, ``member_exit`` (cause ``stopped``
    is a close, any other a death), and the member's own ``stopped`` event. Member ids are per process, so
    one end per member."""
    ends: dict[str, MemberEnd] = {}

    def see(member: str | None, ms: int, kind: str) -> None:
        if member and (member not in ends or ms < ends[member].ms):
            ends[member] = MemberEnd(int(ms), kind)

    for h in harness:
        if h["kind"] == Action.MEMBER_STOP:
            see(h["target"], h["ts_ms"], LEFT)
        elif h["kind"] == Action.MEMBER_KILL:
            see(h["target"], h["ts_ms"], KILLED)
        elif h["kind"] == Action.MEMBER_EXIT:
            cause = (h.get("detail") or {}).get("cause")
            see(h["target"], h["ts_ms"], LEFT if cause == "stopped" else KILLED)
    for member, ms in stopped_ms.items():
        see(member, ms, LEFT)
    return ends


def cut_offs(harness: list[dict[str, Any]], end_ms: int | None) -> list[CutOff]:
    """Spans during which a member was cut off: from the opening action to its closing action (or the
    member's exit or kill), else to ``end_ms`` (the run's end; a far future without one)."""
    open_: dict[tuple[str, Action], list[int]] = {}
    spans: list[CutOff] = []
    closers = {end: start for start, end in CUT_OFFS.items()}
    for h in sorted(harness, key=lambda h: h["ts_ms"]):
        kind, target = h["kind"], h["target"]
        if not target:
            continue
        if kind in CUT_OFFS:
            open_.setdefault((target, Action(kind)), []).append(int(h["ts_ms"]))
        elif kind in closers and open_.get((target, closers[kind])):
            spans.append(CutOff(target, open_[(target, closers[kind])].pop(0), int(h["ts_ms"]), str(closers[kind])))
        elif kind in (Action.MEMBER_EXIT, Action.MEMBER_KILL):
            for (member, opener), starts in open_.items():
                if member == target:
                    spans.extend(CutOff(member, s, int(h["ts_ms"]), str(opener)) for s in starts)
                    starts.clear()
    far = end_ms if end_ms is not None else 1 << 62
    spans.extend(CutOff(m, s, far, str(k)) for (m, k), starts in open_.items() for s in starts)
    return sorted(spans, key=lambda c: (c.member, c.start_ms))
