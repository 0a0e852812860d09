"""Every shipped scenario, every point of its matrix, run end to end on real brokers.

Select all with `-m scenario`, the few-minute subset with `-m smoke`. A failed expectation names the
metric, its value, the bound and the report's path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.cluster import KafkaCluster
from testbed.scenario.evaluate import failure_summary
from testbed.scenario.loader import ScenarioRun, expand
from testbed.scenario.model import BROKER_STEPS, ClusterModel
from testbed.scenario.runner import ScenarioRunner

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _runs() -> list[pytest.param]:
    params = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        for run in expand(path):
            marks = [pytest.mark.integration, pytest.mark.scenario]
            if "smoke" in run.scenario.tags:
                marks.append(pytest.mark.smoke)
            params.append(pytest.param(run, id=run.label, marks=marks))
    return params


def _can_share(run: ScenarioRun, cluster: KafkaCluster) -> bool:
    """The session cluster serves any scenario that wants a plain single broker of its version."""
    wanted = run.scenario.cluster
    default = ClusterModel()
    return (wanted.brokers == len(cluster.nodes) == 1 and wanted.kafka_version == cluster.kafka_version
            and wanted.broker_settings == default.broker_settings and not wanted.external
            and not any(s.kind in BROKER_STEPS for s in run.scenario.steps))


@pytest.mark.parametrize("run", _runs())
def test_scenario(run: ScenarioRun, request: pytest.FixtureRequest, tmp_path_factory) -> None:
    reports = Path(request.config.rootpath) / "reports" / "pytest"
    cluster = request.getfixturevalue("kafka_cluster")
    runner = ScenarioRunner(run, reports, cluster=cluster if _can_share(run, cluster) else None)
    result = runner.execute()
    assert result.status == "pass", f"{run.label}: {result.status}\n{failure_summary(result)}"
