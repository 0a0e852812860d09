"""Where a fleet entry's members run on a Ray cluster: the ``placement`` field of a scenario's fleet entries and
scale-outs (pydantic models, nothing of Ray)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodePlacement(_Part):
    """Every member on one node."""

    node: str = Field(min_length=1, description="the node: its address, host name, name as runs write it "
                                                "(host/id) or id (at least its first 6 characters)")


class LabelPlacement(_Part):
    """Spread over the nodes that carry these labels."""

    labels: dict[str, str] = Field(min_length=1, description="labels a node must carry (`ray start --labels`)")


Placement = Literal["spread"] | NodePlacement | LabelPlacement


def describe(placement: Placement) -> str:
    if isinstance(placement, NodePlacement):
        return f"node {placement.node!r}"
    if isinstance(placement, LabelPlacement):
        return f"labels {placement.labels}"
    return "spread"
