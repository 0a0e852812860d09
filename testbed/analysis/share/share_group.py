"""The share group (KIP-932) as a group kind (``KIND``): which members it claims, its stage, what it adds to the
run's configuration, and the metrics, tables and examples it writes."""

from __future__ import annotations

from ...history.events import FAULTS
from ...run.metrics import RunConfig
from ..group_kind import GroupKind
from ..settings import AnalysisSettings
from ..spark.session import sized_for
from ..stage import Measured
from ..view.run_view import GroupView
from .measures import CATALOGUE, NO_SHARE, SCHEMAS, measure_share_group
from .split import share_members

NAME = "share"


def measure(view: GroupView, settings: AnalysisSettings) -> Measured:
    run = view.run
    with sized_for(run.spark, run.sizes.histories + run.sizes.acks):  # it reads the acks too
        return measure_share_group(view, run.cutoff_ms)


def configure(config: RunConfig | None, view: GroupView, measured: Measured | None, present: list[str]) -> RunConfig:
    """The share members beside the others: in the members and clients, their faults among the run's; the
    protocol ``share`` when they are the run's only group."""
    assert config is not None, "the default kind configures first"
    if measured is None:
        return config
    started = view.started
    members = {**config.members, **started}
    faults = {str(h["kind"]) for h in view.actions if h["kind"] in FAULTS}
    return config.model_copy(update={
        "members": dict(sorted(members.items())),
        "clients": sorted(set(config.clients) | {s["client"] for s in started.values() if s.get("client")}),
        "protocol": "share" if present == [NAME] else config.protocol,
        "faults": sorted(set(config.faults) | faults)})


KIND = GroupKind(NAME, share_members, (CATALOGUE,), SCHEMAS, (), NO_SHARE, measure, configure)
