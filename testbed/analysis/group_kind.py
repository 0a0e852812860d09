"""What a group kind is to the analysis (consumer group, share group; Kafka Streams next): the members it claims,
its stages, what it adds to the run's configuration, and what it writes. Each kind's module builds one
(``group.consumer_group.KIND``, ``share.share_group.KIND``); ``kinds.KINDS`` lists them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from ..run.metrics import MetricValue, RunConfig
from .settings import AnalysisSettings
from .stage import Catalogue, Measured, empty_tables
from .view.run_view import GroupView, RunView

# (the configuration so far, the kind's view, what its stages found or None without its members, the kinds
# present) -> the configuration with the kind's part
Configure = Callable[[RunConfig | None, GroupView, Measured | None, list[str]], RunConfig]


@dataclass(frozen=True)
class GroupKind:
    name: str  # as config.group_kinds writes it
    claims: Callable[[RunView], frozenset[str]] | None  # None: the default kind, every member no other kind claims
    catalogues: tuple[Catalogue, ...]  # every metric its stages write
    tables: Mapping[str, pa.Schema]
    examples: tuple[str, ...]  # the example lists it writes (empty in a run without its members)
    absent: str  # why its metrics are unknown in a run without its members
    measure: Callable[[GroupView, AnalysisSettings], Measured]
    configure: Configure  # called for every kind in turn, present or not: the default kind's makes the base

    def view(self, run: RunView) -> GroupView:
        return run.group(self.name if self.claims is not None else None)

    def without_members(self) -> Measured:
        """What the kind writes in a run without its members."""
        metrics: dict[str, MetricValue] = {}
        for catalogue in self.catalogues:
            metrics.update(catalogue.unknown(self.absent))
        return Measured(metrics, empty_tables(self.tables), {name: [] for name in self.examples})
