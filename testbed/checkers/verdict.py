"""The outcome of one checker: valid, invalid or unknown, with a count and a few examples."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_EXAMPLES = 10
Status = Literal["valid", "invalid", "unknown"]


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)
    checker: str
    status: Status
    message: str
    count: int | None = Field(default=None, description="how many anomalies were found (None if unknown)")
    examples: list[dict[str, Any]] = Field(default_factory=list, description=f"at most {MAX_EXAMPLES}")

    @classmethod
    def of(cls, checker: str, status: Status, message: str, count: int | None = None, examples=()) -> "Verdict":
        return cls(checker=checker, status=status, message=message, count=count, examples=list(examples)[:MAX_EXAMPLES])


def combine(verdicts: list[Verdict]) -> Status:
    """Invalid beats unknown beats valid: an unmeasured property is never a pass."""
    statuses = {v.status for v in verdicts}
    if "invalid" in statuses:
        return "invalid"
    if "unknown" in statuses or not verdicts:
        return "unknown"
    return "valid"
