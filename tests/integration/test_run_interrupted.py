"""Ctrl-C during a run: load and fleet stop, the history stays, the result says partial, nothing outlives it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import docker
import psutil
import pytest

from testbed.history.events import Action
from testbed.reaper import OWNER_PID
from testbed.settings import PROJECT_LABEL, PROJECT_NAME
from testbed.waits import wait_until

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_ctrl_c_keeps_the_history_marks_the_run_partial_and_cleans_up(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    proc = subprocess.Popen([sys.executable, "-m", "testbed.cli", "run", str(ROOT / "scenarios" / "hard-kill.yaml"),
                             "--reports", str(reports)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        def processing_under_load() -> Path | None:
            for harness in reports.glob("*/history/harness.jsonl"):
                kinds = [json.loads(line)["kind"] for line in harness.read_text().splitlines()]
                if Action.STEP_END in kinds:  # the group was stable: members run, load runs
                    return harness.parent.parent
            return None

        run_dir = wait_until(processing_under_load, timeout_s=240, what="the first step to finish",
                             diagnostics=lambda: proc.stdout.read() if proc.poll() is not None else "still running")
        children = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert children, "the run has member and load processes"
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
    assert members and all(f.stat().st_size > 0 for f in members), "member histories are kept"
    assert (run_dir / "analysis" / "metrics.json").exists(), "what there is gets analysed"
    assert (run_dir / "report.html").is_file(), "an interrupted run still gets its report"
    alive = [pid for pid in children if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert not alive, f"processes outlived the run: {alive}"
    client = docker.from_env()
    try:
        left = client.containers.list(all=True, filters={"label": [f"{PROJECT_LABEL}={PROJECT_NAME}",
                                                                  f"{OWNER_PID}={proc.pid}"]})
        assert not left, [c.name for c in left]
    finally:
        client.close()
