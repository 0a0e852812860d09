"""The verdict of one run, saved as result.json beside its history, read by reports and the CLI.

A checker's :class:`Verdict` is saved here as it was made: one type from the checker to result.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .layout import RunDir

RunStatus = Literal["pass", "fail", "partial", "error"]
VerdictStatus = Literal["valid", "invalid", "unknown"]
MAX_EXAMPLES = 10
# Checkers renamed since: their verdicts in earlier result.json files load under the current name.
EARLIER_CHECKER_NAMES = {"redelivery": "duplicates_redelivered"}


class ExpectationResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str = Field(description="the expectation as written, e.g. 'lost_records == 0'")
    metric: str
    op: str
    bound: float
    value: float | None = Field(description="None when the metric is unknown")
    unknown: str | None = Field(default=None, description="why the metric could not be measured")
    passed: bool = Field(description="False also when unknown: an unmeasured bound is not met")


class Verdict(BaseModel):
    """The outcome of one checker: valid, invalid or unknown, with a count and a few examples."""

    model_config = ConfigDict(frozen=True)
    checker: str
    status: VerdictStatus
    message: str
    count: int | None = Field(default=None, description="how many anomalies were found (None if unknown, never 0)")
    examples: list[dict[str, Any]] = Field(default_factory=list, description=f"at most {MAX_EXAMPLES}")

    @classmethod
    def of(cls, checker: str, status: VerdictStatus, message: str, count: int | None = None,
           examples=()) -> "Verdict":
        return cls(checker=checker, status=status, message=message, count=count, examples=list(examples)[:MAX_EXAMPLES])

    @model_validator(mode="before")
    @classmethod
    def _earlier_field_names(cls, data: Any) -> Any:
        """result.json written before the checker's verdict was saved as is named its fields
        name / verdict / reason (and wrote an unknown count as 0); some checkers had other names."""
        if isinstance(data, dict) and "name" in data and "checker" not in data:
            data = {"checker": data["name"], "status": data.get("verdict"), "message": data.get("reason") or "",
                    "count": data.get("count"), "examples": data.get("examples", [])}
        if isinstance(data, dict) and data.get("checker") in EARLIER_CHECKER_NAMES:
            data = {**data, "checker": EARLIER_CHECKER_NAMES[data["checker"]]}
        return data


class RunResult(BaseModel):
    """result.json. ``status`` is pass only if every expectation passed and the run completed."""

    model_config = ConfigDict(frozen=False)

    scenario: str
    run_dir: str
    status: RunStatus = Field(description="the verdict: outcome, analysis, expectations and checks together")
    outcome: Literal["pass", "partial", "fail", "error"] = Field(
        default="pass", description="how the run itself ended, before judging: completed, interrupted, stopped early "
                                    "on a finding (fail: a wait timed out after the program crashed) or failed (error)")
    partial: bool = Field(default=False, description="interrupted or failed midway: measurements cover what ran")
    reason: str | None = Field(default=None, description="why the run is partial or errored")
    analysis_error: str | None = Field(default=None, description="why the last analysis of the history failed")
    started_ms: int
    ended_ms: int | None = None
    parameters: dict[str, Any] = Field(default_factory=dict, description="matrix values and --set overrides")
    testbed_revision: str | None = Field(default=None, description="git revision of the testbed checkout that ran "
                                                                   "it, or the installed package's version "
                                                                   "(testbed.run.revision); None in older runs")
    expectations: list[ExpectationResult] = Field(default_factory=list)
    checks: list[Verdict] = Field(default_factory=list)

    @property
    def files(self) -> RunDir:
        """Where the run's files are."""
        return RunDir(Path(self.run_dir))

    @property
    def problems(self) -> str | None:
        """The run's and the analysis's reasons together, for banners and summaries."""
        return "; ".join(r for r in (self.reason, self.analysis_error) if r) or None

    def save(self, path: Path) -> None:
        path.write_text(self.model_dump_json(indent=2))

    @classmethod
    def load(cls, path: Path) -> "RunResult":
        return cls.model_validate_json(path.read_text())
