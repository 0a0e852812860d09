"""Pure translation of Kafka's VerifiableConsumer stdout into history events.

VerifiableConsumer (kafka-tools) prints one JSON object a line, each with ``name`` and
``timestamp`` (ms). Its lost partitions arrive as ``partitions_revoked`` (its listener does not
override onPartitionsLost), it exposes neither generation nor member epoch, and it carries no
produce timestamps: those fields stay None.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from testbed.history.events import (
    Assigned,
    Committed,
    CommittedOffset,
    Event,
    Processed,
    Revoked,
    Stopped,
    UnknownEvent,
)

StopReason = Literal["clean", "signal", "error", "max_records"]
STARTUP_COMPLETE = "startup_complete"
# Lines that carry nothing the history needs: the wrapper writes 'started' itself (at startup_complete,
# see ``startup_complete_ts``), and per-record data (--verbose) is summarised by records_consumed.
IGNORED = frozenset({STARTUP_COMPLETE, "record_data"})


@dataclass
class TranslationContext:
    source: str
    commit_trigger: Literal["auto", "batch"]
    stop_reason: StopReason = "clean"


def _partitions(obj: dict[str, Any]) -> list[tuple[str, int]]:
    return sorted((p["topic"], int(p["partition"])) for p in obj.get("partitions") or [])


def parse_line(line: str) -> dict[str, Any] | None:
    """One stdout line as VerifiableConsumer's JSON object, or None for anything else (JVM noise)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and "name" in obj else None


def startup_complete_ts(line: str) -> tuple[bool, int | None]:
    """(is this the ``startup_complete`` line, its timestamp in ms if it has one).

    VerifiableConsumer prints it once its KafkaConsumer is built, before subscribing: the moment the
    member has really started.
    """
    obj = parse_line(line)
    if obj is None or obj["name"] != STARTUP_COMPLETE:
        return False, None
    ts = obj.get("timestamp")
    return True, ts if isinstance(ts, int) else None


def translate_line(line: str, ctx: TranslationContext) -> list[Event]:
    """Events for one stdout line; a line that is not a JSON object gives none (JVM noise)."""
    obj = parse_line(line)
    if obj is None:
        return []
    name = obj["name"]
    ts = obj.get("timestamp")
    common: dict[str, Any] = {"source": ctx.source}
    if isinstance(ts, int):
        common["ts_ms"] = ts
    if name in IGNORED:
        return []
    if name == "partitions_assigned":
        return [Assigned(partitions=_partitions(obj), **common)]
    if name == "partitions_revoked":
        parts = _partitions(obj)
        return [Revoked(partitions=parts, **common)] if parts else []
    if name == "records_consumed":
        return [
            Processed(
                topic=p["topic"],
                partition=int(p["partition"]),
                first_offset=int(p["minOffset"]),
                last_offset=int(p["maxOffset"]),
                count=int(p["count"]),
                **common,
            )
            for p in obj.get("partitions") or []
        ]
    if name == "offsets_committed":
        offsets = [
            CommittedOffset(topic=o["topic"], partition=int(o["partition"]), offset=int(o["offset"]))
            for o in obj.get("offsets") or []
        ]
        error = None if obj.get("success", True) else str(obj.get("error") or "COMMIT_FAILED")
        return [Committed(offsets=offsets, trigger=ctx.commit_trigger, error=error, **common)]
    if name == "shutdown_complete":
        return [Stopped(reason=ctx.stop_reason, **common)]
    # Kept, not fatal: a newer VerifiableConsumer may print events this reader does not know.
    extra = {k: v for k, v in obj.items() if k not in ("name", "timestamp")}
    return [UnknownEvent(name=f"verifiable_{name}", **common, **extra)]
