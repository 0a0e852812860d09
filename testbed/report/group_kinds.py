"""The run's group kinds as the report reads them: metrics.json's ``config.group_kinds``, as the analysis decided
them (``testbed.analysis.kinds``); the report never decides them again from the members or the figures' reasons.

Older files are read for what their analysis wrote: one from before the kinds were written has an empty list (its
members formed consumer groups), and one from before Kafka Streams was a kind of its own measured the instances'
figures among the consumer group's, so a Streams figure with a value says the run had them."""

from __future__ import annotations

from .inputs import RunOutputs

CONSUMER, SHARE, STREAMS = "consumer", "share", "streams"


def group_kinds(out: RunOutputs) -> list[str]:
    kinds = list(out.config().get("group_kinds") or [CONSUMER])
    if STREAMS not in kinds and _streams_measured(out):
        kinds.append(STREAMS)
    return kinds


def _streams_measured(out: RunOutputs) -> bool:
    restorations = out.metric_values().get("streams_restorations")
    return isinstance(restorations, dict) and restorations.get("value") is not None


def has_streams(out: RunOutputs) -> bool:
    return STREAMS in group_kinds(out)
