"""A Kafka Streams application as a group kind (``KIND``): the instances it covers, its stage, and the metrics and
tables it writes.

A Streams application is a consumer group whose members are its instances' main consumers, so the kind sits
*within* the consumer group (``group_kind``): the consumer group's stages still measure the instances'
ownership, pauses and records, as any member's, and this kind measures what only the instances tell (their
restorations, tasks and output) over the consumer group's control plane, computed once for both.
"""

from __future__ import annotations

from ...run.metrics import RunConfig
from ..group import consumer_group
from ..group_kind import GroupKind
from ..settings import AnalysisSettings
from ..stage import Measured
from ..view.run_view import GroupView, RunView
from ..view.started import streams_instances
from .measures import ABSENT, CATALOGUE, SCHEMAS, measured, read_output_check, streams

NAME = "streams"


def instances(run: RunView) -> frozenset[str]:
    """The consumer group's members that are Streams instances (their started event has a streams block)."""
    return frozenset(streams_instances(consumer_group.KIND.view(run).started))


def measure(view: GroupView, settings: AnalysisSettings) -> Measured:
    plane = consumer_group.control_plane_of(view, settings)
    return measured(streams(view.events, view.started, plane.lives, plane.intervals, plane.episodes,
                            lambda topology: read_output_check(view.run, topology)))


def configure(config: RunConfig | None, view: GroupView, measured: Measured | None, present: list[str]) -> RunConfig:
    """Nothing of its own: the instances are in the consumer group's configuration (``config.members``)."""
    assert config is not None, "the default kind configures first"
    return config


KIND = GroupKind(NAME, instances, (CATALOGUE,), SCHEMAS, (), ABSENT, measure, configure, within=consumer_group.KIND)
