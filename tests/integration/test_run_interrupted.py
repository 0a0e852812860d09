"""A run interrupted, and nothing outlives it.

The run: testbed's own members beside a user's program (a command member) that starts a worker process of its
own, under load. Ctrl-C: load and fleet stop (the program's whole process group, its worker too), the history
stays, the result says partial. ``kill -9``: every child process dies with the run at once; what remains (the
brokers' container and data volume, which the Docker engine keeps, and the program's worker, which the kernel
does not end with its parent) is removed within seconds by the cluster's watchdog (testbed.brokers.watchdog),
through the same owner marks ``testbed clean`` and the next run's start reap by, and the watchdog exits.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import psutil
import pytest

from testbed.brokers.reaper import OWNER_PID, leftover_processes, reap_leftover_processes, reap_leftovers
from testbed.children import LOCUST_MAIN, child_env
from testbed.history.events import Action
from testbed.settings import PROJECT_LABEL, PROJECT_NAME
from testbed.waits import wait_until

from fleet_support import living

pytestmark = pytest.mark.integration
WATCHDOG_BOUND_S = 15  # "within seconds": a container's forced removal takes about one on an idle machine
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "integration" / "programs" / "confluent_with_worker.py"
SCENARIO = """
name: interrupted
topics: [{{name: events, partitions: 6}}]
load: {{topic: events, rate: 100, users: 2}}
members:
  main: {{client: confluent-kafka}}  # the client default (range, roundrobin), as the program has
  app:
    client: confluent-kafka
    command: [{python}, {program}]
    env: {{BOOTSTRAP: '{{bootstrap_servers}}', GROUP: '{{group_id}}', TOPIC: '{{topic:events}}',
          WORKER_PID_FILE: '{{run_dir}}/worker.pid'}}
fleet: [{{spec: main, count: 2}}, {{spec: app, count: 1}}]
steps:
  - wait_stable: {{timeout_s: 60}}
  - wait: {{seconds: 300}}
"""


def start_run(tmp_path: Path, out) -> tuple[subprocess.Popen, Path]:
    scenario = tmp_path / "interrupted.yaml"
    scenario.write_text(SCENARIO.format(python=sys.executable, program=PROGRAM))
    reports = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", str(scenario), "--reports", str(reports)],
                            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, text=True)
    return proc, reports


def stable_under_load(reports: Path) -> Path | None:
    """The run directory once the group was stable (members and load run) and the program's worker is up."""
    for harness in reports.glob("*/history/harness.jsonl"):
        run_dir = harness.parent.parent
        kinds = [json.loads(line)["kind"] for line in harness.read_text().splitlines()]
        if Action.STEP_END in kinds and (run_dir / "worker.pid").exists():
            return run_dir
    return None


def test_ctrl_c_keeps_the_history_marks_the_run_partial_and_cleans_up(tmp_path: Path) -> None:
    proc, reports = start_run(tmp_path, subprocess.PIPE)
    try:
        run_dir = wait_until(lambda: stable_under_load(reports), timeout_s=240, what="a stable group under load",
                             diagnostics=lambda: proc.stdout.read() if proc.poll() is not None else "still running")
        children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        worker = int((run_dir / "worker.pid").read_text())
        assert children and worker in children, "the run has member, program and load processes"
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "partial" and result["partial"] is True, result
    assert "interrupted" in result["reason"]
    kinds = [json.loads(line)["kind"] for line in (run_dir / "history" / "harness.jsonl").read_text().splitlines()]
    assert Action.INTERRUPTED in kinds and kinds[-1] == Action.RUN_END
    members = list((run_dir / "history" / "members").glob("*.jsonl"))
    assert len(members) == 3 and all(f.stat().st_size > 0 for f in members), "member histories are kept"
    assert (run_dir / "analysis" / "metrics.json").exists(), "what there is gets analysed"
    assert (run_dir / "report.html").is_file(), "an interrupted run still gets its report"
    assert not living(children), f"processes outlived the run: {living(children)}"
    assert not containers_of(proc.pid)


def containers_of(owner_pid: int) -> list[str]:
    return _docker_of(owner_pid, lambda client, labels: client.containers.list(all=True, filters={"label": labels}))


def volumes_of(owner_pid: int) -> list[str]:
    return _docker_of(owner_pid, lambda client, labels: client.volumes.list(filters={"label": labels}))


def _docker_of(owner_pid: int, listing) -> list[str]:
    client = docker.from_env()
    try:
        return [item.name for item in listing(client, [f"{PROJECT_LABEL}={PROJECT_NAME}", f"{OWNER_PID}={owner_pid}"])]
    finally:
        client.close()


def test_kill_9_of_a_run_under_load_leaves_nothing_within_seconds(tmp_path: Path) -> None:
    with (tmp_path / "out.txt").open("w") as out:
        proc, reports = start_run(tmp_path, out)
    try:
        run_dir = wait_until(lambda: stable_under_load(reports), timeout_s=240, what="a stable group under load",
                             diagnostics=lambda: (tmp_path / "out.txt").read_text()[-3000:])
        worker = int((run_dir / "worker.pid").read_text())
        commands = {c.pid: " ".join(c.cmdline()) for c in psutil.Process(proc.pid).children(recursive=True)}
        assert any(f"-m {LOCUST_MAIN}" in c for c in commands.values()), commands
        assert any("testbed.members" in c for c in commands.values()), commands
        watchdog = [pid for pid, c in commands.items() if "testbed.brokers.watchdog" in c]
        assert len(watchdog) == 1, commands
        assert containers_of(proc.pid) and volumes_of(proc.pid), "the run's broker container and data volume"
        proc.kill()
        proc.wait(timeout=30)
        killed = time.monotonic()
        pids = [pid for pid in commands if pid not in (worker, *watchdog)]
        # The parent-death signal is immediate; the bound only absorbs a slow machine.
        wait_until(lambda: not living(pids), timeout_s=30, what="every child of the killed run to die",
                   diagnostics=lambda: f"alive: {[(p, commands[p]) for p in living(pids)]}")
        # The rest is the watchdog's: no testbed clean, no next run.
        log = run_dir / "brokers" / "watchdog.log"
        wait_until(lambda: not containers_of(proc.pid) and not volumes_of(proc.pid) and not living([worker]),
                   timeout_s=WATCHDOG_BOUND_S, what="the watchdog to reap the killed run's broker, volume and worker",
                   diagnostics=lambda: f"containers {containers_of(proc.pid)}, volumes {volumes_of(proc.pid)}, "
                                       f"worker alive: {bool(living([worker]))}; watchdog log: {log.read_text()}")
        reaped_in = time.monotonic() - killed
        wait_until(lambda: not living(watchdog), timeout_s=10, what="the watchdog to exit after reaping")
        print(f"the watchdog reaped the killed run's leftovers within {reaped_in:.1f} s of the kill")
        assert f"owner {proc.pid}:" in log.read_text() and f"(pid {worker})" in log.read_text()
        assert reap_leftovers(owner_pid=proc.pid) == [], "nothing is left for a later reaping"
    finally:
        if proc.poll() is None:
            proc.kill()
        reap_leftovers(owner_pid=proc.pid)


ORPHAN_MAKER = """
import os, subprocess
from testbed.children import child_env
# Marked as this process's child but started without the parent-death signal: it outlives this process.
child = subprocess.Popen(["sleep", "600"], env=child_env(), start_new_session=True, stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(os.getpid(), child.pid, flush=True)
"""


def test_reaping_ends_the_marked_processes_of_a_gone_owner_and_keeps_a_live_owners() -> None:
    made = subprocess.run([sys.executable, "-c", ORPHAN_MAKER], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    gone_owner, orphan = map(int, made.stdout.split())
    mine = subprocess.Popen(["sleep", "600"], env=child_env())  # marked as this (live) test process's
    try:
        assert [p.pid for p in leftover_processes(owner_pid=gone_owner)] == [orphan]
        assert reap_leftover_processes(owner_pid=gone_owner) == [f"sleep (pid {orphan})"]
        assert not living([orphan])
        assert reap_leftover_processes(owner_pid=os.getpid()) == [] and mine.poll() is None
    finally:
        mine.kill()
        mine.wait()
        if living([orphan]):
            os.kill(orphan, signal.SIGKILL)

