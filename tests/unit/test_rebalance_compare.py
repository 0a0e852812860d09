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


def _point(members: int, protocol: str, time_s: float, event: str = "scale_out") -> dict:
    return {"members": members, "partitions": members * 10, "protocol": protocol, "client": "java",
            "event": event, "time_to_stable_s": time_s, "time_to_stable_s_interval": [time_s - 1, time_s + 2],
            "pause_p99_ms": None, "pause_p99_ms_interval": [None, None]}


def test_combine_keeps_one_point_per_configuration_the_later_file_winning(tmp_path: Path) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"points": [_point(10, "eager", 3.0), _point(100, "eager", 5.0)]}))
    second.write_text(json.dumps({"points": [_point(10, "eager", 4.0), _point(10, "consumer", 6.0, "startup")]}))
    points = compare.combine([first, second])
    assert [(p["event"], p["members"], p["protocol"], p["time_to_stable_s"]) for p in points] == [
        ("startup", 10, "consumer", 6.0), ("scale_out", 10, "eager", 4.0), ("scale_out", 100, "eager", 5.0)]


def test_curves_draw_a_line_per_protocol_with_the_trials_interval(tmp_path: Path) -> None:
    page = tmp_path / "curves.html"
    compare.curves([_point(10, "eager", 3.0), _point(100, "eager", 5.0), _point(10, "consumer", 6.0)], page)
    html = page.read_text()
    assert html.count('"name":"eager (java)"') == 1 and html.count('"name":"consumer (java)"') == 1
    assert '"arrayminus":[1.0,1.0]' in html and '"array":[2.0,2.0]' in html  # the eager line's interval
    assert "pause p99, s" in html  # the second row's axis, empty here: no pause was known


def test_markdown_table_gives_medians_their_interval_and_says_unknown() -> None:
    known = {**_point(100, "cooperative", 6.6), "trials": 3, "moved": 90, "moved_interval": [90, 90],
             "moved_min": 90, "moved_min_interval": [90, 90], "pause_p99_ms": 3789.0,
             "pause_p99_ms_interval": [3000.0, 4000.0], "stop_the_world_ms": None, "rss_mb_per_member": None}
    refused = {**_point(10, "consumer", 1.0), "refused": "no consumer protocol in kafka-python"}
    rows = compare.markdown_table([known, refused]).splitlines()
    assert rows[2] == ("| 100 | scale-out by 10 % | cooperative-sticky | java | 3 | 6.6 (5.6-8.6) | 3.8 (3.0-4.0) "
                       "| unknown | 90 / 90 | unknown | not measured |")
    assert "refused: no consumer protocol in kafka-python" in rows[3]
