"""The comparison benchmark's pure parts: the scenarios it builds and how it reads time to stable."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from testbed.history.events import Action
from testbed.scenario.model import Scenario

_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "rebalance_compare.py"
_SPEC = importlib.util.spec_from_file_location("rebalance_compare", _PATH)
compare = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(compare)


@pytest.mark.parametrize("event", compare.EVENTS)
@pytest.mark.parametrize("client", ["confluent-kafka", "java"])
@pytest.mark.parametrize("protocol", list(compare.PROTOCOLS))
def test_every_point_is_a_valid_scenario(protocol: str, client: str, event: str) -> None:
    scenario = Scenario.model_validate(compare.scenario_for(20, protocol, client, event, 200))
    assert scenario.fleet[0].count == 20 and scenario.topics[0].partitions == 200
    bounce = [s for s in scenario.steps if s.kind == "rolling_bounce"]
    assert [s.count for s in bounce] == ([10] if event == "bounce" else [])


def _run_dir(tmp_path: Path, actions: list[tuple[str, int, str | None]]) -> Path:
    (tmp_path / "history").mkdir()
    lines = [json.dumps({"name": "action", "kind": kind, "ts_ms": ts, "target": target, "source": "harness"})
             for kind, ts, target in actions]
    (tmp_path / "history" / "harness.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path


def test_time_to_stable_runs_from_the_change_to_the_next_stable_group(tmp_path: Path) -> None:
    run = _run_dir(tmp_path, [(Action.MEMBER_START, 1_000, "m0"), (Action.MEMBER_START, 1_500, "m1"),
                              (Action.STEP_END, 4_000, "wait_stable"), (Action.SCALE_OUT, 10_000, None),
                              (Action.STEP_END, 16_250, "wait_stable")])
    assert compare.time_to_stable_s(run, "startup") == 3.0
    assert compare.time_to_stable_s(run, "scale_out") == 6.25
    assert compare.time_to_stable_s(run, "bounce") is None  # no bounce in this history: unknown, not 0


@pytest.mark.parametrize("size,client,expected", [(20, "confluent-kafka", 1), (50, "confluent-kafka", 1),
                                                   (1000, "confluent-kafka", 50), (100, "java", 50)])
def test_large_groups_share_processes(size: int, client: str, expected: int) -> None:
    data = compare.scenario_for(size, "eager", client, "scale_out", size * 10)
    assert data["fleet"][0]["members_per_process"] == expected
    scenario = Scenario.model_validate(data)
    # the 10 % added are housed as the group is: alone in a small group, together in a hosted one
    assert scenario.steps[2].members_per_process == min(size // 10, expected)
