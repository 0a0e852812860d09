"""A Locust process's producer is made before Locust loads (its producer id is fetched meanwhile), handed once to
the session, and never made by a master, which produces nothing."""

from __future__ import annotations

import subprocess
import sys

from testbed.children import LOCUST_MAIN, child_env
from testbed.load import early_producer
from testbed.load.spec import PARAMS_ENV, LoadSpec, ProducerProcessParams


def _params(tmp_path) -> ProducerProcessParams:
    spec = LoadSpec.parse(bootstrap_servers="127.0.0.1:1", topic="t", rate=10, duration_s=1)
    return ProducerProcessParams(spec=spec, process_index=0, ack_log=str(tmp_path / "acks.jsonl"),
                                 failure_log=str(tmp_path / "failed.jsonl"),
                                 finish_request=str(tmp_path / "finish"), finished_marker=str(tmp_path / "finished"))


def test_the_session_takes_the_producer_started_early_once(tmp_path):
    params = _params(tmp_path)
    early_producer.start(params)
    started = early_producer._started
    assert started is not None
    assert early_producer.take(params) is started
    again = early_producer.take(params)  # nothing started any more: a producer of its own
    assert again is not started and early_producer._started is None
    config = early_producer.producer_config(params)
    assert config["enable.idempotence"] is True and config["client.id"] == params.producer_id


def test_a_master_starts_no_producer_and_a_producing_process_needs_its_parameters():
    master = subprocess.run([sys.executable, "-m", LOCUST_MAIN, "--master", "--version"], env=child_env(),
                            capture_output=True, text=True, timeout=60)
    assert master.returncode == 0, master.stderr
    worker = subprocess.run([sys.executable, "-m", LOCUST_MAIN, "--version"],
                            env={k: v for k, v in child_env().items() if k != PARAMS_ENV},
                            capture_output=True, text=True, timeout=60)
    assert worker.returncode != 0 and f"{PARAMS_ENV} is not set" in worker.stderr
