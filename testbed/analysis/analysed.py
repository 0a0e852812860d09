"""What one analysis hands back, apart from the files it wrote: light to import (no Spark), so that a process
that has a run analysed elsewhere (the analysis service) can receive it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..run.metrics import Metrics


@dataclass(frozen=True)
class Analysis:
    """What one analysis found and wrote: metrics.json's model and every table as its Parquet file holds it, for
    whoever judges the run right after (the checkers) without reading the files back."""

    metrics: Metrics
    tables: dict[str, pd.DataFrame]
