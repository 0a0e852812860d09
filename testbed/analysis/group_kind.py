"""What a group kind is to the analysis (consumer group, share group, Kafka Streams application): the members it
claims, its stages, what it adds to the run's configuration, and what it writes. Each kind's module builds one
(``group.consumer_group.KIND``, ``share.share_group.KIND``, ``streams.streams_application.KIND``); ``kinds.KINDS``
lists them.

A kind *within* another (a Streams application within the consumer group it is) covers some of that kind's members
without taking them away: the outer kind's stages still measure them, and the inner kind's stages read the outer
kind's view (and what its stages computed on it, ``GroupView.once``) for the figures of its own."""

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
    within: GroupKind | None = None  # the kind whose members it covers and leaves to it (claims reads its view)

    @property
    def claims_apart(self) -> bool:
        """Whether its members are its own, kept from every other kind's view (not the default, not within one)."""
        return self.claims is not None and self.within is None

    def view(self, run: RunView) -> GroupView:
        if self.within is not None:
            return self.within.view(run)
        return run.group(self.name if self.claims is not None else None)

    def present(self, run: RunView) -> bool:
        """Whether the run has members of this kind (a kind within another: among that kind's, when it is present)."""
        if self.within is not None:
            return self.within.present(run) and bool(self.claims and self.claims(run))
        return self.view(run).present

    def without_members(self, present: list[str]) -> Measured:
        """What the kind writes in a run without its members; a kind within another absent too says why that
        one is (its reason covers every member the inner kind could have had)."""
        outer = self.within
        reason = outer.absent if outer is not None and outer.name not in present else self.absent
        metrics: dict[str, MetricValue] = {}
        for catalogue in self.catalogues:
            metrics.update(catalogue.unknown(reason))
        return Measured(metrics, empty_tables(self.tables), {name: [] for name in self.examples})
