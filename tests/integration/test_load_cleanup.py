"""LoadGenerator cleans up its Locust processes when the caller fails, even with no broker reachable."""

from __future__ import annotations

import psutil
import pytest

from testbed.run.layout import RunDir
from testbed.load import LoadGenerator
from testbed.load.generator import free_port
from testbed.waits import wait_until

pytestmark = pytest.mark.integration

FIRST_USER = "first user started"  # a producing process's log line once its load began


def test_an_exception_in_the_with_block_stops_every_locust_process(run_dir: RunDir) -> None:
    # A closed loopback port: nothing gets acknowledged, the processes must still end promptly.
    dead_broker = f"127.0.0.1:{free_port()}"
    with pytest.raises(RuntimeError, match="scenario failed"):
        with LoadGenerator(run_dir, bootstrap_servers=dead_broker, topic="t", rate=50, users=2, workers=2,
                           duration_s=300, stop_timeout_s=5) as load:
            producing = [p for p in load.processes if p.producer_index is not None]
            wait_until(lambda: all(FIRST_USER in p.log_path.read_text() for p in producing),
                       timeout_s=60, what="every worker's users to run", diagnostics=load.diagnostics)
            pids = [p.popen.pid for p in load.processes]
            raise RuntimeError("scenario failed")
    assert not load.running
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    summary = load.summary()
    assert summary.acked == 0
    # The records queued for the dead broker were purged at the stop and count as failures.
    assert summary.failures is not None and summary.failures > 0
    assert summary.achieved_rate is None and "achieved_rate" in summary.unknown
