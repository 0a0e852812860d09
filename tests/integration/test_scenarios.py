"""Every shipped scenario, every point of its matrix, run end to end on real brokers.

Select all with `-m scenario`, the few-minute subset with `-m smoke`. The README's test command (and CI) runs
each file's first matrix point; the other points, and files tagged `long`, are marked `full_matrix` (`-m full_matrix` runs them). A failed expectation names the
metric, its value, the bound and the report's path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from testbed.brokers.cluster import KafkaCluster
from testbed.history.events import Action
from testbed.scenario.evaluate import failure_summary
from testbed.scenario.loader import ScenarioRun, expand
from testbed.scenario.model import BROKER_STEPS, ClusterModel

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _runs() -> list[pytest.param]:
    params = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        for i, run in enumerate(expand(path)):
            later = i or "long" in run.scenario.tags
            marks = [pytest.mark.integration, pytest.mark.scenario] + ([pytest.mark.full_matrix] if later else [])
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
            and wanted.broker_log_levels == default.broker_log_levels
            and not any(s.kind in BROKER_STEPS or getattr(s, "broker", None) is not None for s in run.scenario.steps))


@pytest.mark.parametrize("run", _runs())
def test_scenario(run: ScenarioRun, request: pytest.FixtureRequest, run_scenario) -> None:
    reports = Path(request.config.rootpath) / "reports" / "pytest"
    cluster = request.getfixturevalue("kafka_cluster")
    result = run_scenario(run, reports, cluster=cluster if _can_share(run, cluster) else None)
    assert result.files.report.is_file(), f"{run.label}: no report.html"
    assert result.status == "pass", f"{run.label}: {result.status}\n{failure_summary(result)}"
    _check_broker_lines_are_the_runs_own(Path(result.run_dir))
    if any(s.kind == "pause" for s in run.scenario.steps) and not run.scenario.is_share:  # share: no processed
        _check_freeze_pause_matches_a_recount(Path(result.run_dir))
    if any(spec.streams for spec in run.scenario.members.values()):
        _check_streams_task_moves_match_a_recount(Path(result.run_dir))
    for step in run.scenario.steps:
        if step.kind == "broker_upgrade":
            _check_broker_upgrade_took_effect(Path(result.run_dir), run.scenario.cluster, step)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _check_broker_lines_are_the_runs_own(run_dir: Path) -> None:
    """On the shared session cluster the broker log holds every group that ever ran there."""
    groups = {e["group_id"] for f in (run_dir / "history" / "members").glob("*.jsonl") for e in _jsonl(f)
              if e["name"] == "started"}
    lines = pd.read_parquet(run_dir / "analysis" / "tables" / "broker_rebalances.parquet")
    assert set(lines["group_id"]) <= groups, f"broker lines of other groups counted: {set(lines['group_id']) - groups}"


def _check_broker_upgrade_took_effect(run_dir: Path, cluster: ClusterModel, step) -> None:
    """Every node's own log shows it ran the old version and then the new one (the same node, its data kept:
    the new process finds the cluster's metadata instead of formatting), and the levels were raised."""
    for node in step.brokers or range(1, cluster.brokers + 1):
        log = run_dir / "brokers" / f"broker-{node}.log"
        banners = [line.split("Kafka version: ")[1].split()[0] for line in log.read_text().splitlines()
                   if "Kafka version: " in line and "AppInfoParser" in line]
        assert banners[:1] == [cluster.kafka_version] and banners[-1:] == [step.to], f"broker {node} ran {banners}"
    if step.finalize:
        harness = _jsonl(run_dir / "history" / "harness.jsonl")
        release = ".".join(step.to.split(".")[:2])
        change = [h["detail"] for h in harness if h["name"] == "action" and h["kind"] == Action.FEATURES_UPGRADE
                  and h["detail"]["release_version"] == release][-1]
        assert change["after"]["metadata.version"].startswith(release + "-"), change
        if int(release.split(".")[0]) >= 4:  # the consumer protocol is on
            assert change["after"]["group.version"] != "0", change


def _check_freeze_pause_matches_a_recount(run_dir: Path) -> None:
    """Recount, in plain Python from the raw history, the stall of every partition the frozen member was
    processing: from the later of its last processing before the freeze and the first waiting record's
    produce time, to the next processing by anyone. The analysis must report it within 5 % or 100 ms."""
    harness = _jsonl(run_dir / "history" / "harness.jsonl")
    batches = [e for f in (run_dir / "history" / "members").glob("*.jsonl") for e in _jsonl(f) if e["name"] == "processed"]
    acks = [e for f in (run_dir / "history" / "acks").glob("*.jsonl") for e in _jsonl(f) if e["name"] == "ack"]
    first_done: dict[tuple, int] = {}
    for b in batches:
        for off in range(b["first_offset"], b["last_offset"] + 1):
            key = (b["topic"], b["partition"], off)
            first_done[key] = min(first_done.get(key, b["ts_ms"]), b["ts_ms"])
    stalls = []
    for freeze in (h for h in harness if h["name"] == "action" and h["kind"] == Action.MEMBER_PAUSE):
        t, member = freeze["ts_ms"], freeze["target"]
        mine = {(b["topic"], b["partition"]) for b in batches if b["source"] == member and t - 5_000 <= b["ts_ms"] <= t}
        for tp in mine:
            times = sorted(b["ts_ms"] for b in batches if (b["topic"], b["partition"]) == tp)
            last = max(x for x in times if x <= t)
            nxt = min(x for x in times if x > t)
            waiting = [a["produce_ts_ms"] for a in acks if (a["topic"], a["partition"]) == tp
                       and first_done.get((a["topic"], a["partition"], a["offset"]), 1 << 62) >= nxt]
            stalls.append(nxt - max(last, min(waiting)))
    reported = json.loads((run_dir / "analysis" / "metrics.json").read_text())["metrics"]["max_freeze_pause_ms"]["value"]
    assert stalls, "the frozen member processed nothing in the 5 s before its freeze"
    real = max(stalls)
    assert abs(reported - real) <= max(100, 0.05 * real), f"max_freeze_pause_ms {reported} vs recount {real}"


def _check_streams_task_moves_match_a_recount(run_dir: Path) -> None:
    """Recount, in plain Python from the raw history, every move of a Streams task's input partition: the
    partition assigned to an instance other than the last one assigned it; its pause from the old owner's last
    processing before the new owner's first, and the new owner's restoration of the task's store partition from
    its assignment. The analysis's ``streams_task_moves`` must list the same moves with the same times."""
    events = sorted((e for f in (run_dir / "history" / "members").glob("*.jsonl") for e in _jsonl(f)),
                    key=lambda e: e["ts_ms"])
    done: dict[tuple, list[int]] = {}
    for e in events:
        if e["name"] == "processed":
            done.setdefault((e["source"], e["partition"]), []).append(e["ts_ms"])
    owner: dict[int, str] = {}
    recount = {}
    for e in events:
        if e["name"] != "assigned":
            continue
        for _, partition in e["partitions"]:
            old, owner[partition] = owner.get(partition), e["source"]
            if old is None or old == e["source"]:
                continue
            first = min((t for t in done.get((e["source"], partition), []) if t >= e["ts_ms"]), default=None)
            last = max((t for t in done.get((old, partition), []) if first is None or t < first), default=None)
            restored = max((r["ts_ms"] for r in events if r["name"] == "streams_restore" and r["phase"] in
                            ("end", "suspended") and r["source"] == e["source"] and r["partition"] == partition
                            and e["ts_ms"] <= r["ts_ms"] <= (first if first is not None else 1 << 62)),
                           default=e["ts_ms"])
            recount[(partition, old, e["source"])] = (None if first is None or last is None else first - last,
                                                      restored - e["ts_ms"])
    moves = pd.read_parquet(run_dir / "analysis" / "tables" / "streams_task_moves.parquet")
    reported = {(int(m.partition), m.from_member, m.to_member):
                (None if pd.isna(m.pause_ms) else int(m.pause_ms), int(m.restoration_ms)) for m in moves.itertuples()}
    assert recount, "no Streams task moved"
    assert reported == recount, f"streams_task_moves {reported} vs recount {recount}"
