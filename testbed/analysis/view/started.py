"""What a member's ``started`` event says of its setup: the fields metrics.json keeps per member
(``config.members``) and the report's member table shows. Read off the event's model, so a field added to
``Started`` is kept without a second list to edit."""

from __future__ import annotations

import json
from typing import Any

from ...history.events import Started

# The event's own fields (name, times, writer) and those that name the process or the run's topics rather
# than how the member was set up.
NOT_SETUP = frozenset({"name", "ts_ms", "mono_ms", "source", "topics", "pid", "handler", "command"})
STARTED_FIELDS: tuple[str, ...] = tuple(f for f in Started.model_fields if f not in NOT_SETUP)


def streams_block(value: object) -> dict[str, Any]:
    """A started event's streams block ({} for a member that is no Streams instance); Spark gives a struct or map
    field back as its JSON text."""
    if not value:
        return {}
    return json.loads(value) if isinstance(value, str) else dict(value)  # type: ignore[call-overload]


def streams_instances(members: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The members (by id, their started fields) that are Kafka Streams instances: a streams block."""
    return {m: s for m, s in members.items() if (s or {}).get("streams")}


def started_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A started row's STARTED_FIELDS; its settings (a free-form object) arrive as their JSON text."""
    kept = {k: row.get(k) for k in STARTED_FIELDS}
    if isinstance(kept["settings"], str):
        kept["settings"] = json.loads(kept["settings"])
    return kept


# Clients whose lost partitions (session expired, fenced, every task lost) arrive as ``revoked``: the Java ones
# (VerifiableConsumer and the hosted consumers override no onPartitionsLost; a Streams instance said so itself
# before it wrote ``lost``), aiokafka (no on_partitions_lost) and kafka-python 2.x (docs/history.md).
_LOST_AS_REVOKED = frozenset({"java", "aiokafka"})


def reports_lost(started: dict[str, Any]) -> bool:
    """Whether the member's history tells a loss (``lost``) from a revocation (``revoked``): its started event's
    ``reports_lost`` where it says, else what its client can tell."""
    said = started.get("reports_lost")
    if said is not None:
        return bool(said)
    client = started.get("client")
    if client in _LOST_AS_REVOKED:
        return False
    return not (client == "kafka-python" and str(started.get("client_version") or "").startswith("2."))
