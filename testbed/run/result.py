"""The verdict of one run, saved as result.json beside its history, read by reports and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Status = Literal["pass", "fail", "partial", "error"]
CheckVerdict = Literal["valid", "invalid", "unknown"]


class ExpectationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = Field(description="the expectation as written, e.g. 'lost_records == 0'")
    metric: str
    op: str
    bound: float
    value: float | None = Field(description="None when the metric is unknown")
    unknown: str | None = Field(default=None, description="why the metric could not be measured")
    passed: bool = Field(description="False also when unknown: an unmeasured bound is not met")


class CheckResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    verdict: CheckVerdict
    count: int = 0
    examples: list[dict[str, Any]] = Field(default_factory=list)
    reason: str | None = None


class RunResult(BaseModel):
    """result.json. ``status`` is pass only if every expectation passed and the run completed."""

    model_config = ConfigDict(frozen=False)

    scenario: str
    run_dir: str
    status: Status = Field(description="the verdict: outcome, analysis, expectations and checks together")
    outcome: Literal["pass", "partial", "error"] = Field(
        default="pass", description="how the run itself ended, before judging: completed, interrupted or failed")
    partial: bool = Field(default=False, description="interrupted or failed midway: measurements cover what ran")
    reason: str | None = Field(default=None, description="why the run is partial or errored")
    analysis_error: str | None = Field(default=None, description="why the last analysis of the history failed")
    started_ms: int
    ended_ms: int | None = None
    parameters: dict[str, Any] = Field(default_factory=dict, description="matrix values and --set overrides")
    expectations: list[ExpectationResult] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)

    @property
    def problems(self) -> str | None:
        """The run's and the analysis's reasons together, for banners and summaries."""
        return "; ".join(r for r in (self.reason, self.analysis_error) if r) or None

    def save(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, path: Path) -> "RunResult":
        return cls.model_validate_json(path.read_text())
