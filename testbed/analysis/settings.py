"""The analysis's settings: the parameters its figures depend on, given by a scenario's ``analysis:`` part and
recorded in metrics.json ``settings``. Defined once here; the scenario file reuses this model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AnalysisSettings(BaseModel):
    """Parameters of the analysis that the figures depend on (docs/metrics.md)."""

    # As strict as every part of a scenario file: unknown fields refused, numbers finite.
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    # The Java client and librdkafka wait up to 500 ms for a fetch to fill; in steady state on this project's
    # machine almost every gap of 500 ms or more was one fetch wait (500-520 ms): the default is two.
    min_pause_ms: int = Field(default=1000, ge=1, description="shorter availability gaps are ordinary polling")
    episode_gap_ms: int = Field(default=1500, ge=0, description="quiet time that closes a settled rebalance episode")
    hang_ms: int = Field(default=10_000, ge=1, description="an unexplained pause this long is a hang of its member")
