"""The group kinds the analysis knows, in the order they are measured: the one place a kind is added.

A kind claims its members (the first, the consumer group, is the default: every member no other kind claims),
measures them with its stages, completes the run's configuration, and declares what it writes: its metrics
(unknown, with ``absent`` as the reason, in a run without its members), its tables (empty then) and its example
lists. Which kinds a run holds is decided once (``RunView.claim``) and written into metrics.json
(``config.group_kinds``), where the checkers and the report read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType

import pyarrow as pa

from ..run.metrics import MetricValue, RunConfig
from .group import consumer_group
from .settings import AnalysisSettings
from .share import share_group
from .stage import Catalogue, Measured, empty_tables
from .view.run_view import GroupView, RunView

Configure = Callable[[RunConfig | None, GroupView, Measured | None, list[str]], RunConfig]


@dataclass(frozen=True)
class GroupKind:
    name: str  # as config.group_kinds writes it
    claims: Callable[[RunView], frozenset[str]] | None  # None: the default kind, every member no other kind claims
    catalogues: tuple[Catalogue, ...]
    tables: Mapping[str, pa.Schema]
    examples: tuple[str, ...]  # example lists it writes (empty when absent)
    absent: str  # why its metrics are unknown in a run without its members
    measure: Callable[[GroupView, AnalysisSettings], Measured]
    configure: Configure  # every kind in turn, present or not: the default kind's makes the base

    @classmethod
    def of(cls, module: ModuleType) -> GroupKind:
        """A kind from its module's names (``group.consumer_group``, ``share.share_group``)."""
        return cls(module.NAME, getattr(module, "claims", None), module.CATALOGUES, module.SCHEMAS, module.EXAMPLES,
                   module.ABSENT, module.measure, module.configure)

    def view(self, run: RunView) -> GroupView:
        return run.group(self.name if self.claims is not None else None)

    def metric_units(self) -> dict[str, str]:
        return {name: unit for catalogue in self.catalogues for name, unit in catalogue.units.items()}

    def without_members(self) -> Measured:
        """What the kind writes in a run without its members."""
        metrics: dict[str, MetricValue] = {}
        for catalogue in self.catalogues:
            metrics.update(catalogue.unknown(self.absent))
        return Measured(metrics, empty_tables(self.tables), {name: [] for name in self.examples})


KINDS: tuple[GroupKind, ...] = (GroupKind.of(consumer_group), GroupKind.of(share_group))
