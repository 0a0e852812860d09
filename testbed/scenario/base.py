"""What every part of a scenario file shares: frozen models that refuse unknown fields and numbers that are
not finite, the pattern of names, and how many members of a spec start together (a fleet entry, a scale-out)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..clients import names
from ..placement.model import Placement

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


class ScenarioPart(BaseModel):
    # An infinite timeout or duration waits forever, and nan passes no bound check without a word: every
    # number of a scenario file is finite.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


MAX_MEMBER_PROCESSES = 200  # member processes one fleet entry may start (~44 MB and an interpreter each)
HostedCount = Annotated[int, Field(ge=1, le=10_000)]
PerProcess = Annotated[int, Field(ge=1, le=1_000, description=(
    "members run in one process, each with its own client, identity and history "
    f"({', '.join(names(lambda f: f.hosted))}); stop and stall act on one member, kill, pause and network cuts on "
    "the whole process"))]


class MemberCount(ScenarioPart):
    """How many members of which spec, how many share a process, and on which nodes of a Ray cluster they run."""

    spec: str = Field(description="name of a member spec")
    count: HostedCount
    members_per_process: PerProcess = 1
    placement: Placement = Field("spread", description=(
        "where the members run when the run has a Ray cluster (TESTBED_RAY_ADDRESS, `testbed run --ray`): spread "
        "over its nodes (each to the node with the fewest live members), {node: ...} or {labels: {...}}; "
        "without a cluster, members run on this machine and only spread is accepted"))

    @model_validator(mode="after")
    def _process_count(self) -> "MemberCount":
        processes = -(-self.count // self.members_per_process)
        if processes > MAX_MEMBER_PROCESSES:
            raise ValueError(f"count: {self.count} members at members_per_process {self.members_per_process} are "
                             f"{processes} processes; at most {MAX_MEMBER_PROCESSES}: raise members_per_process "
                             f"to at least {-(-self.count // MAX_MEMBER_PROCESSES)}")
        return self
