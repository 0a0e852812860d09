"""Each group kind's part of a run's report: its headline cards and its section (a template and the figures it
draws), for the kinds the analysis decided (``group_kinds``). A kind within another (a Kafka Streams application
within its consumer group) has its section drawn inside the other's. A new group kind adds one ``KindReport``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import charts, share_charts, streams_charts
from .crash_headline import crash_headline
from .duplicate_words import cause_rows
from .group_kinds import CONSUMER, SHARE, STREAMS, group_kinds
from .headline import Headline, consumer_headlines, streams_headlines
from .inputs import Missing, NoneFound, RunOutputs
from .page import figure_html
from .share_headline import share_headlines
from .tables import crash_row, duplicate_row, episode_row, table_rows


@dataclass(frozen=True)
class KindReport:
    kind: str
    headlines: Callable[[RunOutputs], list[Headline]]
    template: str  # under templates/; it reads its figures by name
    figures: Callable[[RunOutputs], dict[str, Any]]
    within: str | None = None  # the kind whose section this one's is drawn in


def _share_figures(out: RunOutputs) -> dict[str, Any]:
    return {"share_timeline": figure_html(share_charts.redelivery_timeline(out)),
            "share_counts": figure_html(share_charts.delivery_counts(out))}


def _consumer_figures(out: RunOutputs) -> dict[str, Any]:
    pauses = charts.partition_pause_figures(out)
    per_partition, per_episode = (pauses, pauses) if isinstance(pauses, Missing | NoneFound) else pauses
    return {
        "timeline": figure_html(charts.ownership_timeline(out)),
        "duplicates": table_rows(out, "duplicate_ownership", duplicate_row, ["start_ms", "topic", "partition"]),
        "duplicate_causes": cause_rows(out),
        "handler_errors": table_rows(out, "handler_errors", dict, ["ts_ms", "member"]),
        "crashes": table_rows(out, "member_crashes", crash_row, ["ts_ms", "member"]),
        "pause_per_partition": figure_html(per_partition),
        "pause_per_episode": figure_html(per_episode),
        "revocations": figure_html(charts.revocation_heatmap(out)),
        "over_time": figure_html(charts.over_time(out)),
        "broker": figure_html(charts.broker_vs_clients(out)),
        "episodes": table_rows(out, "rebalance_episodes", lambda r: episode_row(r, out.time_origin_ms()),
                               ["start_ms", "episode_id"]),
    }


def _streams_figures(out: RunOutputs) -> dict[str, Any]:
    return {"task_timeline": figure_html(streams_charts.task_timeline(out))}


# In the order their sections read: a share group's first (what a share-group run is about), then the consumer
# group's with its Streams application inside.
KIND_REPORTS = (
    KindReport(SHARE, share_headlines, "sections/share.html.j2", _share_figures),
    KindReport(CONSUMER, consumer_headlines, "sections/consumer.html.j2", _consumer_figures),
    KindReport(STREAMS, streams_headlines, "sections/streams.html.j2", _streams_figures, within=CONSUMER),
)
BY_KIND = {k.kind: k for k in KIND_REPORTS}


def answer_headlines(out: RunOutputs) -> list[Headline]:
    """The run report's headline cards: each group kind of the run speaks of its own figures (a share-group
    run of share figures instead of ownership ones; a run with both kinds of group, of both; a Streams
    application of its tasks and restorations after its consumer group's)."""
    crashed = crash_headline(out)  # a crash of the user's program is the first thing to say
    return ([crashed] if crashed else []) + [card for kind in group_kinds(out) for card in BY_KIND[kind].headlines(out)]


def kind_sections(out: RunOutputs) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The sections the run's kinds draw, in order (each with the sections within it), and the figures they read."""
    present = [k for k in KIND_REPORTS if k.kind in group_kinds(out)]
    figures: dict[str, Any] = {}
    for k in present:
        figures.update(k.figures(out))
    sections = [{"kind": k.kind, "template": k.template,
                 "within": [{"kind": w.kind, "template": w.template} for w in present if w.within == k.kind]}
                for k in present if k.within is None]
    return sections, figures
