"""``analyse(run_dir)``: a saved run directory in, analysis/metrics.json and analysis/tables/ out.

The run is read once into a view (``view.run_view``), its members' group kinds decided once (``kinds``), each
kind present measured by its stages and each absent one written as unknown; then the run-wide figures, the
host's (its saturation), the run's configuration (every kind in turn) and the outputs.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from ..errors import NoMemberHistory
from ..history.silence import silent_members
from ..run.layout import LAYOUT, RunDir
from ..run.metrics import Metrics, RunConfig
from . import host, run_wide
from .analysed import Analysis
from .catalog import CATALOG, TABLES
from .kinds import KINDS
from .outputs import write_outputs
from .settings import AnalysisSettings
from .spark.session import get_spark, has_session, sized_for
from .spark.location import is_remote
from .stage import Measured
from .view.run_view import RunView, locate_inputs, read_view


def analyse(run_dir: str | Path, *, settings: AnalysisSettings | None = None,
            spark: SparkSession | None = None) -> Metrics:
    """Compute every measurement of docs/metrics.md for one run, write the outputs, return the metrics."""
    return analyse_run(run_dir, settings=settings, spark=spark).metrics


def analyse_run(run_dir: str | Path, *, settings: AnalysisSettings | None = None,
                spark: SparkSession | None = None) -> Analysis:
    """Compute every measurement of docs/metrics.md for one run, write the outputs, return them with the tables."""
    settings = settings or AnalysisSettings()
    local = None if is_remote(str(run_dir)) else RunDir(Path(str(run_dir).removeprefix("file://")))
    if local is not None and (silent := silent_members(local)):
        raise NoMemberHistory(silent.message)  # says how the members ended, before Spark finds no file
    if spark is None and local is not None and not has_session():
        spark = get_spark(local.history_bytes())  # a session started for this run: sized by its histories
    spark = spark or get_spark()
    root, files, sizes = locate_inputs(spark, run_dir)
    with sized_for(spark, sizes.histories):
        view = read_view(spark, root, files, sizes)
        try:
            return _analyse(view, settings)
        finally:
            view.release()


def _analyse(view: RunView, settings: AnalysisSettings) -> Analysis:
    view.claim({kind.name: kind.claims for kind in KINDS if kind.claims is not None and kind.claims_apart})
    view.last_event_ms  # refuses, first, a run whose members wrote no event
    present = [kind.name for kind in KINDS if kind.present(view)]
    found = {kind.name: kind.measure(kind.view(view), settings) for kind in KINDS if kind.name in present}
    config: RunConfig | None = None
    for kind in KINDS:
        config = kind.configure(config, kind.view(view), found.get(kind.name), present)
    assert config is not None
    every = Measured.of(run_wide.measured(view),
                        *(found[kind.name] if kind.name in found else kind.without_members(present) for kind in KINDS),
                        host.measured(view))
    result = Metrics(
        run_dir=view.root,
        metrics={name: every.metrics[name] for name in CATALOG},
        config=config.model_copy(update={"group_kinds": present}),
        windows=view.windows,
        latency_source=every.latency_source or "none",
        notes=every.notes,
        tables={name: LAYOUT.table(name).as_posix() for name in TABLES},
        examples=every.examples,
        settings={**settings.model_dump(), "cutoff_ms": view.cutoff_ms, "group_ids": [], **every.settings},
    )
    written = write_outputs(view.spark, view.root, result, every.tables)
    return Analysis(result, {name: table.to_pandas() for name, table in written.items()})
