"""What each metric means and which way is better, for the report's metric tables, read off the metrics' one
declaration (``testbed.analysis.catalog.METRICS``: a ``Metric`` where its stage computes it); the report's own choice
here is which metrics it shows first."""

from __future__ import annotations

from ..analysis.catalog import METRICS

METRIC_DEFINITIONS: dict[str, str] = {name: metric.meaning for name, metric in METRICS.items()}


def definition(name: str) -> str:
    """The definition of a metric, or a plain statement that none is recorded (a newer analysis)."""
    return METRIC_DEFINITIONS.get(name, "no definition recorded in testbed.report.definitions")


# Metrics shown side by side in comparisons, the answer first (what a bounce costs: ANSWER_METRICS), each with
# its declared direction: True when a larger value is better.
def _key(*names: str) -> dict[str, bool]:
    if undirected := [name for name in names if METRICS[name].better is None]:
        raise ValueError(f"compared side by side without a declared direction (Metric.better): {undirected}")
    return {name: METRICS[name].better == "higher" for name in names}


KEY_METRICS: dict[str, bool] = _key(
    "max_partition_pause_ms", "stop_the_world_ms", "duplicates_concurrent", "duplicates_redelivered", "lost_records",
    "revocations_live", "duplicates_total", "duplicate_ownership_ms", "needless_revocations", "rebalance_episodes",
    "rebalance_total_ms", "p50_partition_pause_ms", "max_rebalance_pause_ms", "e2e_latency_p99_ms",
    "e2e_latency_bounce_p99_ms", "throughput_mean_rps", "lag_max_records")
ANSWER_METRICS: tuple[str, ...] = tuple(KEY_METRICS)[:6]
# A Kafka Streams application's answers, key rows of a comparison whose runs have Streams instances.
STREAMS_KEY_METRICS: dict[str, bool] = _key(
    "streams_task_pause_max_ms", "streams_task_assignment_wait_max_ms", "streams_task_restoration_max_ms",
    "streams_restored_records", "streams_task_moves", "streams_standby_promotions", "streams_rebalancing_ms",
    "streams_output_duplicates", "streams_output_missing", "streams_restorations_unfinished")
