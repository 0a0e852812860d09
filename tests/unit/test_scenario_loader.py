"""Scenario files: validation errors name the file, the field path and the allowed values; matrices expand."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed.errors import ConfigError
from testbed.scenario.loader import expand, load
from testbed.scenario.model import Expectation

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"

BASE = {
    "name": "t",
    "topics": [{"name": "events", "partitions": 6}],
    "load": {"topic": "events", "rate": 100},
    "members": {"a": {"client": "confluent-kafka", "assignors": ["range"]},
                "b": {"client": "confluent-kafka", "assignors": ["cooperative-sticky"]}},
    "fleet": [{"spec": "a", "count": 2}],
    "steps": [{"wait_stable": {}}, {"rolling_bounce": {"to": "b"}}, "drain"],
    "expect": ["lost_records == 0"],
}


def write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def error_of(tmp_path: Path, **changes) -> str:
    data = {**BASE, **changes}
    with pytest.raises(ConfigError) as exc:
        expand(write(tmp_path, data))
    return str(exc.value)


def test_every_shipped_scenario_is_valid() -> None:
    files = sorted(SHIPPED.glob("*.yaml"))
    assert files, "scenarios/ ships scenarios"
    for f in files:
        assert expand(f), f


def test_every_scenario_out_of_ci_says_why_in_its_description_and_that_is_time() -> None:
    out = {f.stem: expand(f)[0].scenario for f in sorted(SHIPPED.glob("*.yaml"))}
    out = {name: s for name, s in out.items() if {"long", "slow"} & set(s.tags)}
    assert len(out) >= 10, "scenarios/ tags its long scenarios"
    for name, scenario in out.items():
        said = " ".join(scenario.description.split())
        assert "Out of CI for time" in said and "in CI" in said.split("Out of CI for time", 1)[1], (
            f"{name}: a scenario tagged long or slow says in its description that it is out of CI for time, and "
            "what covers its mechanism in CI")


def test_steps_read_as_single_key_mappings(tmp_path: Path) -> None:
    run = load(write(tmp_path, BASE))
    assert [s.kind for s in run.scenario.steps] == ["wait_stable", "rolling_bounce", "drain"]
    assert run.scenario.members["a"].name == "a"


def test_unknown_step_lists_the_step_kinds(tmp_path: Path) -> None:
    msg = error_of(tmp_path, steps=[{"explode": {}}])
    assert str(tmp_path / "s.yaml") in msg and "steps.0" in msg and "'rolling_bounce'" in msg


def test_bad_field_names_its_path_and_allowed_values(tmp_path: Path) -> None:
    msg = error_of(tmp_path, load={"topic": "events", "rate": 100, "key_distribution": "gauss"})
    assert "load.key_distribution" in msg and "'uniform'" in msg and "'zipf'" in msg


def test_spec_a_client_cannot_run_is_refused_naming_what_is_supported(tmp_path: Path) -> None:
    msg = error_of(tmp_path, members={"a": {"client": "confluent-kafka", "assignors": ["sticky"]}})
    assert "members.a.assignors" in msg and "cooperative-sticky" in msg


def test_reference_to_an_undefined_spec_lists_the_defined_ones(tmp_path: Path) -> None:
    msg = error_of(tmp_path, fleet=[{"spec": "zzz", "count": 1}])
    assert "fleet.0.spec" in msg and "'zzz'" in msg and "defined specs: a, b" in msg


def test_unknown_metric_in_an_expectation_lists_the_metrics(tmp_path: Path) -> None:
    msg = error_of(tmp_path, expect=["lost_recordz == 0"])
    assert "expect.0" in msg and "lost_records" in msg


def test_malformed_expectation_says_the_form(tmp_path: Path) -> None:
    assert "<metric> <op> <number>" in error_of(tmp_path, expect=["lost_records is zero"])


def test_broker_steps_are_refused_on_an_existing_cluster(tmp_path: Path) -> None:
    msg = error_of(tmp_path, cluster={"bootstrap_servers": "127.0.0.1:9092"}, steps=[{"broker_kill": {"broker": 1}}])
    assert "steps.0.broker_kill" in msg and "bootstrap_servers" in msg


def test_non_loopback_cluster_is_refused(tmp_path: Path) -> None:
    assert "127.x" in error_of(tmp_path, cluster={"bootstrap_servers": "10.1.2.3:9092"})


def test_broker_count_other_than_1_or_3_is_refused(tmp_path: Path) -> None:
    msg = error_of(tmp_path, cluster={"brokers": 2})
    assert "cluster.brokers" in msg and "1" in msg and "3" in msg


def test_product_matrix_expands_and_labels_runs(tmp_path: Path) -> None:
    runs = expand(write(tmp_path, {**BASE, "matrix": {"members.a.assignors": [["range"], ["roundrobin"]],
                                                      "load.rate": [100, 200]}}))
    assert len(runs) == 4
    assert {tuple(r.scenario.members["a"].assignors) for r in runs} == {("range",), ("roundrobin",)}
    assert {r.scenario.load.rate for r in runs} == {100, 200}
    assert runs[0].label in ("t[assignors=range,rate=100]", "t[rate=100,assignors=range]")


def test_list_matrix_changes_values_together(tmp_path: Path) -> None:
    runs = expand(write(tmp_path, {**BASE, "matrix": [
        {"members.a.assignors": ["range"]},
        {"members.a.assignors": ["cooperative-sticky"], "expect": ["needless_revocations == 0"]}]}))
    assert [r.scenario.expect[0].metric for r in runs] == ["lost_records", "needless_revocations"]


def test_a_file_with_a_matrix_needs_the_matrix_command(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="testbed matrix"):
        load(write(tmp_path, {**BASE, "matrix": {"load.rate": [1, 2]}}))


def test_set_overrides_a_field_and_is_validated(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    assert load(path, ["load.rate=250"]).scenario.load.rate == 250
    with pytest.raises(ConfigError, match="load.rate"):
        load(path, ["load.rate=-1"])
    with pytest.raises(ConfigError, match="key=value"):
        load(path, ["load.rate"])


def test_set_of_a_matrix_key_wins_over_the_matrix(tmp_path: Path) -> None:
    path = write(tmp_path, {**BASE, "matrix": {"load.rate": [100, 200], "members.a.assignors": [["range"], ["roundrobin"]]}})
    assert load(path, ["load.rate=200", "members.a.assignors=[range]"]).scenario.load.rate == 200
    runs = expand(path, ["load.rate=150"])  # a value the matrix does not list; the other key still varies
    assert [(r.scenario.load.rate, r.scenario.members["a"].assignors) for r in runs] == [
        (150, ["range"]), (150, ["roundrobin"])]


@pytest.mark.parametrize("text,value,holds", [
    ("lost_records == 0", 0, True), ("lost_records == 0", 1, False),
    ("max_partition_pause_ms < 20000", 19999, True), ("max_partition_pause_ms < 20000", 20000, False),
    ("needless_revocations > 0", 3, True), ("duplicate_ownership_episodes >= 1", 0, False),
])
def test_expectations_hold_or_not(text: str, value: float, holds: bool) -> None:
    assert Expectation.parse(text).holds(value) is holds


def test_coordinator_is_a_broker_target_and_bringing_it_back_needs_a_step_that_took_it_down(tmp_path: Path) -> None:
    three = {"brokers": 3}
    expand(write(tmp_path, {**BASE, "cluster": three, "steps": [
        {"broker_kill": {"broker": "coordinator"}}, {"broker_start": {"broker": "coordinator"}}, "drain"]}))
    msg = error_of(tmp_path, cluster=three, steps=[{"broker_start": {"broker": "coordinator"}}])
    assert "steps.0.broker_start.broker" in msg and "took down as coordinator" in msg
    msg = error_of(tmp_path, cluster=three, steps=[{"broker_kill": {"broker": "leader"}}])
    assert "steps.0.broker_kill.broker" in msg and "coordinator" in msg
