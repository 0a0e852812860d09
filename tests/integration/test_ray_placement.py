"""Members placed on a Ray cluster: a head and two worker nodes on loopback (``LocalRayCluster``), the session's
brokers, real member processes started by each node's actor.

A mixed fleet (two confluent-kafka runners hosted in one process, a kafka-python runner, the Java runner, a user's
program run unchanged) spread over the nodes and pinned by label, the load's two Locust workers on the nodes too, the
host killed (both its members) and one member cut off the network by an iptables rule on its node: every
history comes home whole, every count the analysis reports equals a recount of the raw histories, and the same
scenario run on this machine alone judges the same (nothing lost, every acknowledged record processed). Then what is
refused before a member starts, and a node lost in the middle of a run.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from history_recount import jsonl, recount, reported

from testbed.errors import ConfigError
from testbed.placement.local import LocalRayCluster
from testbed.scenario.loader import load
from testbed.settings import settings

pytestmark = pytest.mark.integration

PROGRAM = Path(__file__).parent / "programs" / "confluent_batch_commit.py"
MIXED = """
name: {name}
topics: [{{name: events, partitions: 8}}]
load: {{topic: events, rate: 100, users: 2{load}}}
members:
  ck: {{client: confluent-kafka, assignors: [range], commit_mode: on_revoke, session_timeout_ms: 6000}}
  kp: {{client: kafka-python, assignors: [range], commit_mode: on_revoke, session_timeout_ms: 6000}}
  jv: {{client: java, assignors: [range], commit_mode: sync, session_timeout_ms: 6000}}
  app: {{client: confluent-kafka, command: [{python}, {program}],
         env: {{BOOTSTRAP: '{{bootstrap_servers}}', GROUP: '{{group_id}}', TOPIC: '{{topic:events}}'}}}}
fleet:
  - {{spec: ck, count: 2, members_per_process: 2}}
  - {{spec: kp, count: 1{zone_a}}}
  - {{spec: jv, count: 1{zone_b}}}
  - {{spec: app, count: 1}}
steps:
  - wait_stable: {{timeout_s: 60}}
  - wait: {{seconds: 2}}
  - kill: {{member: m0, whole_process: true}}
  - wait_stable: {{timeout_s: 60}}
  - partition: {{member: m2, seconds: 8}}
  - wait_stable: {{timeout_s: 60}}
  - drain: {{timeout_s: 60}}
expect:
  - lost_records == 0
"""


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[LocalRayCluster]:
    with LocalRayCluster(labels=[{"zone": "a"}, {"zone": "b"}]) as cluster:
        yield cluster


@pytest.fixture
def on_ray(ray_cluster: LocalRayCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalRayCluster]:
    """The setting that places a run's members on the cluster, for one test."""
    monkeypatch.setenv("TESTBED_RAY_ADDRESS", ray_cluster.address)
    settings.cache_clear()
    yield ray_cluster
    monkeypatch.delenv("TESTBED_RAY_ADDRESS")
    settings.cache_clear()


def mixed(tmp_path: Path, name: str, placed: bool) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(MIXED.format(name=name, python=sys.executable, program=PROGRAM,
                                 load=", workers: 2, placement: spread" if placed else "",
                                 zone_a=", placement: {labels: {zone: a}}" if placed else "",
                                 zone_b=", placement: {labels: {zone: b}}" if placed else ""))
    return path


def actions(run_dir: Path, kind: str) -> list[dict]:
    return [a for a in jsonl(run_dir / "history" / "harness.jsonl") if a.get("kind") == kind]


def test_a_mixed_fleet_on_the_nodes_counts_as_on_one_machine(ray_cluster, run_scenario, kafka_cluster,
                                                             tmp_path: Path, monkeypatch) -> None:
    local = run_scenario(load(mixed(tmp_path, "mixed-here", placed=False)), tmp_path / "reports", cluster=kafka_cluster)
    monkeypatch.setenv("TESTBED_RAY_ADDRESS", ray_cluster.address)
    settings.cache_clear()
    try:
        placed = run_scenario(load(mixed(tmp_path, "mixed-on-ray", placed=True)), tmp_path / "reports",
                              cluster=kafka_cluster)
    finally:
        monkeypatch.delenv("TESTBED_RAY_ADDRESS")
        settings.cache_clear()
    counts = {}
    for name, result in (("here", local), ("ray", placed)):
        run_dir = Path(result.run_dir)
        assert result.status == "pass", f"{name}: {result.status} {result.reason} {result.problems}"
        counts[name] = recount(run_dir)
        assert reported(run_dir) == counts[name], f"{name}: the analysis against a recount of its raw history"
        assert counts[name]["records_acked"] > 1000, f"{name}: too little load to compare"
        assert counts[name]["lost_records"] == 0 and counts[name]["records_unique_processed"] == counts[name][
            "records_acked"], name
    run_dir = Path(placed.run_dir)
    starts = {a["target"]: a["detail"] for a in actions(run_dir, "member_start")}
    names = {n.name: n for n in ray_cluster_nodes(ray_cluster)}
    assert set(starts) == {"m0", "m1", "m2", "m3", "m4"} and all(d["node"] in names for d in starts.values())
    assert starts["m0"]["host"] == starts["m1"]["host"] and starts["m0"]["node"] == starts["m1"]["node"]  # one process
    assert names[starts["m2"]["node"]].labels == {"zone": "a"}  # pinned by label
    assert names[starts["m3"]["node"]].labels == {"zone": "b"}
    assert len({d["node"] for d in starts.values()}) == 3  # ck's host and app spread over the nodes with fewest members
    kills = {a["target"]: a["detail"] for a in actions(run_dir, "member_kill")}
    assert set(kills) == {"m0", "m1"} and kills["m1"]["by"] == "m0", kills  # a kill of a hosted member kills its host
    exits = {a["target"]: a["detail"] for a in actions(run_dir, "member_exit")}
    assert all(exits[m]["cause"] == "killed" and exits[m]["node"] == starts["m0"]["node"]
               and exits[m]["host"] == starts["m0"]["host"] for m in ("m0", "m1")), exits
    assert all(exits[m]["cause"] == "stopped" for m in ("m2", "m3", "m4"))
    (cut,) = actions(run_dir, "member_partition")
    assert cut["target"] == "m2" and cut["detail"]["node"] == starts["m2"]["node"] and cut["detail"]["gid"]
    for member in ("m2", "m3", "m4"):  # whole: from started to the clean stop, as written on the node
        events = jsonl(run_dir / "history" / "members" / f"{member}.jsonl")
        assert events[0]["name"] == "started" and events[-1]["name"] == "stopped", member
    (started_load,) = actions(run_dir, "load_start")  # the two Locust workers on two nodes, their acks brought home
    workers = started_load["detail"]["nodes"]
    assert set(workers) == set(started_load["detail"]["producers"]) and len(workers) == 2
    assert len(set(workers.values())) == 2 and set(workers.values()) <= set(names)
    for producer in workers:
        acks = jsonl(run_dir / "history" / "acks" / f"{producer}.jsonl")
        assert sum(1 for a in acks if a["name"] == "ack") > 300, producer
    clocks = actions(run_dir, "node_clock")
    assert {(c["target"], c["detail"]["moment"]) for c in clocks} == {
        (node, moment) for node in {d["node"] for d in starts.values()} for moment in ("start", "end")}
    assert all(abs(c["detail"]["offset_ms"]) <= c["detail"]["uncertainty_ms"] + 5 for c in clocks)  # one machine
    folders = {c["detail"]["folder"] for c in clocks}
    assert len(folders) == 3 and not any(Path(f).exists() for f in folders), "a node kept the run's files"


def ray_cluster_nodes(cluster: LocalRayCluster):
    from testbed.placement.cluster import RayPlacer

    placer = RayPlacer.connect(cluster.address)
    try:
        return placer.nodes
    finally:
        placer.close()


REFUSED = """
name: refused
topics: [{{name: events, partitions: 2}}]
members: {{a: {{client: confluent-kafka}}}}
fleet: [{{spec: a, count: 2{extra}}}]
steps: [{{wait: {{seconds: 1}}}}]
"""


@pytest.mark.parametrize(("extra", "message"), [
    (", placement: {labels: {zone: c}}", r"fleet\.0\.placement: no node of the Ray cluster .* matches labels"),
    (", placement: {node: no-such-host}", r"fleet\.0\.placement: no node .* matches node 'no-such-host'.*zone"),
])
def test_what_the_cluster_cannot_do_is_refused_before_anything_starts(on_ray, run_scenario, tmp_path: Path,
                                                                     extra: str, message: str) -> None:
    path = tmp_path / "refused.yaml"
    path.write_text(REFUSED.format(extra=extra))
    with pytest.raises(ConfigError, match=message):
        run_scenario(load(path), tmp_path / "reports")
    assert not (tmp_path / "reports").exists()


def test_an_address_where_nothing_answers_is_refused(run_scenario, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TESTBED_RAY_ADDRESS", "127.0.0.1:1")
    settings.cache_clear()
    path = tmp_path / "refused.yaml"
    path.write_text(REFUSED.format(extra=""))
    try:
        with pytest.raises(ConfigError, match=r"ray_address: nothing answers at 127\.0\.0\.1:1"):
            run_scenario(load(path), tmp_path / "reports")
    finally:
        monkeypatch.delenv("TESTBED_RAY_ADDRESS")
        settings.cache_clear()


LOST = """
name: node-lost
topics: [{name: events, partitions: 6}]
load: {topic: events, rate: 100, users: 1}
members:
  a: {client: confluent-kafka, assignors: [range], commit_mode: on_revoke, session_timeout_ms: 6000}
fleet:
  - {spec: a, count: 2, placement: {labels: {testbed-node: head}}}
  - {spec: a, count: 1, placement: {labels: {zone: lost}}}
steps:
  - wait_stable: {timeout_s: 60}
  - wait: {seconds: 12}
  - wait_stable: {timeout_s: 60}
  - drain: {timeout_s: 60}
"""


def test_a_node_lost_mid_run_is_an_event_and_the_run_judges_what_it_has(run_scenario, kafka_cluster, tmp_path: Path,
                                                                         monkeypatch) -> None:
    path = tmp_path / "lost.yaml"
    path.write_text(LOST)
    with LocalRayCluster(labels=[{"zone": "lost"}]) as cluster:
        monkeypatch.setenv("TESTBED_RAY_ADDRESS", cluster.address)
        settings.cache_clear()
        reports = tmp_path / "reports"

        def lose_the_worker_once_stable() -> None:  # the first wait_stable's end: members up and processing
            import time

            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                harness = list(reports.glob("*/history/harness.jsonl"))
                if harness and any(a.get("kind") == "step_end" for a in jsonl(harness[0])):
                    time.sleep(2)
                    cluster.remove_worker(0)
                    return
                time.sleep(0.2)

        killer = threading.Thread(target=lose_the_worker_once_stable, daemon=True)
        killer.start()
        try:
            result = run_scenario(load(path), reports, cluster=kafka_cluster)
        finally:
            killer.join(5)
            monkeypatch.delenv("TESTBED_RAY_ADDRESS")
            settings.cache_clear()
    run_dir = Path(result.run_dir)
    assert result.status == "pass", f"{result.status} {result.reason}"
    (lost,) = actions(run_dir, "node_lost")
    assert lost["detail"]["members"] == ["m2"]
    (exit_m2,) = [a for a in actions(run_dir, "member_exit") if a["target"] == "m2"]
    assert exit_m2["detail"]["node_lost"] is True and exit_m2["detail"]["node"] == lost["target"]
    history = jsonl(run_dir / "history" / "members" / "m2.jsonl")
    assert history[0]["name"] == "started" and any(e["name"] == "processed" for e in history)
    assert reported(run_dir) == recount(run_dir)  # judged from what came home


KILLED = """
name: killed-on-ray
topics: [{name: events, partitions: 4}]
load: {topic: events, rate: 50, users: 2, workers: 1, placement: spread}
members:
  a: {client: confluent-kafka}
fleet: [{spec: a, count: 2}]
steps:
  - wait_stable: {timeout_s: 60}
  - wait: {seconds: 300}
"""


@pytest.mark.parametrize("how", ["kill_9", "ctrl_c"])
def test_kill_9_or_ctrl_c_of_a_placed_run_ends_its_members_and_actors_on_the_nodes(ray_cluster, tmp_path: Path,
                                                                                  how: str) -> None:
    """``kill -9``: Ray ends the actors of a driver that is gone, and each actor's processes die with it (the
    parent-death signal); the members' folder it leaves is removed by the next NodeHost or ``testbed clean`` on the
    node. Ctrl-C: the run ends as a partial one with every history brought home, and each NodeHost ends its processes
    and removes its folder."""
    import json
    import os
    import signal
    import subprocess

    import psutil

    from testbed.placement.node_host import NODES_DIR, remove_orphans
    from testbed.waits import wait_until

    from fleet_support import living

    scenario = tmp_path / "killed.yaml"
    scenario.write_text(KILLED)
    reports = tmp_path / "reports"
    with (tmp_path / "out.txt").open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", str(scenario), "--reports", str(reports),
                                 "--ray", ray_cluster.address], stdout=out, stderr=subprocess.STDOUT,
                                env={k: v for k, v in os.environ.items() if k != "TESTBED_RAY_ADDRESS"})

    def stable() -> list[dict] | None:
        for harness in reports.glob("*/history/harness.jsonl"):
            kinds = [a.get("kind") for a in jsonl(harness)]
            if "step_end" in kinds:
                return [a for a in jsonl(harness) if a.get("kind") == "node_clock"]
        return None

    try:
        clocks = wait_until(stable, timeout_s=240, what="the placed run's group stable",
                            diagnostics=lambda: (tmp_path / "out.txt").read_text()[-3000:])
        folders = {c["detail"]["folder"] for c in clocks}
        actors = [int(Path(f).name.partition("@")[2].partition(":")[0]) for f in folders]

        def on_the_nodes(p: psutil.Process) -> bool:  # a member's config path or a worker's params: the nodes' folders
            try:
                seen = " ".join(p.cmdline()) + " " + " ".join(p.environ().values())
            except psutil.Error:
                return False
            return p.pid not in actors and any(f in seen for f in folders)

        started_there = [p.pid for p in psutil.process_iter() if on_the_nodes(p)]
        assert len(started_there) >= 3, "two members and a Locust worker on the nodes"
        if how == "kill_9":
            proc.kill()
            proc.wait(timeout=30)
        else:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=300) == 1, (tmp_path / "out.txt").read_text()[-3000:]
        wait_until(lambda: not living(actors + started_there), timeout_s=60,
                   what="the ended run's NodeHosts and every process they started to end",
                   diagnostics=lambda: f"alive: {living(actors + started_there)}")
        if how == "kill_9":
            assert all(Path(f).is_dir() for f in folders)  # left by the actors that were ended
            assert sorted(str(f) for f in remove_orphans(NODES_DIR) if str(f) in folders) == sorted(folders)
        else:
            assert not any(Path(f).exists() for f in folders), "a node kept the interrupted run's files"
            (run_dir,) = [h.parents[1] for h in reports.glob("*/history/harness.jsonl")]
            result = json.loads((run_dir / "result.json").read_text())
            assert result["status"] == "partial" and "interrupted" in result["reason"], result
            for member in ("m0", "m1"):  # brought home whole: to the stop the interruption made
                events = jsonl(run_dir / "history" / "members" / f"{member}.jsonl")
                assert events[0]["name"] == "started" and events[-1]["name"] == "stopped", member
            assert {c["detail"]["moment"] for c in actions(run_dir, "node_clock")} == {"start", "end"}
            assert (run_dir / "report.html").is_file()
    finally:
        if proc.poll() is None:
            proc.kill()


CRASH_AFTER_PLACING = """
import ctypes
from testbed.placement.cluster import RayPlacer
from testbed.placement.local import LocalRayCluster

with LocalRayCluster(labels=[]) as cluster:
    RayPlacer.connect(cluster.address).close()
ctypes.string_at(0)  # a crash in C code, after this process was a driver of the cluster
"""


def test_a_crash_after_placing_members_still_prints_where_it_happened(tmp_path: Path) -> None:
    """A Ray driver takes the process's fatal-signal handlers for its own, which print nothing: a pytest worker that
    had run a placed scenario once died later without a word. Python's faulthandler keeps them."""
    import os
    import signal
    import subprocess

    from testbed.placement.cluster import KEEP_SIGNAL_HANDLERS_ENV

    script = tmp_path / "crash.py"
    script.write_text(CRASH_AFTER_PLACING)
    env = {k: v for k, v in os.environ.items() if k != KEEP_SIGNAL_HANDLERS_ENV}  # as testbed's process starts
    done = subprocess.run([sys.executable, "-X", "faulthandler", str(script)], env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == -signal.SIGSEGV, (done.returncode, done.stderr[-2000:])
    assert "Fatal Python error: Segmentation fault" in done.stderr, done.stderr[-2000:]
    crash_line = next(i for i, line in enumerate(CRASH_AFTER_PLACING.splitlines(), 1) if "string_at" in line)
    assert f'crash.py", line {crash_line} in <module>' in done.stderr, done.stderr[-2000:]
