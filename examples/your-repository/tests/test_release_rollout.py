"""The rollout of payments-service's next release, on real brokers (``pytest -m integration``)."""

from pathlib import Path

import pytest

from testbed.scenario.loader import load

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "release-rollout.yaml"


@pytest.mark.integration
def test_the_release_rollout_loses_no_payment(run_scenario, kafka_cluster) -> None:
    result = run_scenario(load(SCENARIO), Path("reports"), cluster=kafka_cluster)
    assert result.status == "pass", result.expectations
