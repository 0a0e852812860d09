"""Bad input to the cluster service is refused before anything starts."""

import os
import subprocess
import sys

import pytest

from testbed.brokers.cluster import KafkaCluster, rebalance_defaults
from testbed.brokers.images import check_kafka_version, recipe_hash
from testbed.errors import ConfigError


@pytest.mark.parametrize("brokers", [0, 2, 4, 5])
def test_brokers_other_than_1_or_3_are_refused(brokers: int) -> None:
    with pytest.raises(ConfigError, match=r"brokers must be one of \(1, 3\)"):
        KafkaCluster(brokers=brokers)


def test_non_loopback_host_is_refused() -> None:
    with pytest.raises(ConfigError, match="loopback"):
        KafkaCluster(brokers=1, host="10.0.0.1")


def test_malformed_kafka_version_names_the_way_to_list_versions() -> None:
    with pytest.raises(ConfigError, match="testbed kafka-versions"):
        check_kafka_version("latest")


def test_defaults_suit_rebalance_experiments_and_scale_with_brokers() -> None:
    assert rebalance_defaults(1)["group.initial.rebalance.delay.ms"] == "0"
    assert rebalance_defaults(1)["offsets.topic.replication.factor"] == "1"
    assert rebalance_defaults(3)["offsets.topic.replication.factor"] == "3"
    assert rebalance_defaults(3)["min.insync.replicas"] == "2"
    # topics the clients create (Streams' internal topics) are replicated as the cluster allows
    assert rebalance_defaults(1)["default.replication.factor"] == "1"
    assert rebalance_defaults(3)["default.replication.factor"] == "3"


def test_recipe_hash_changes_with_recipe_and_version(tmp_path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    first = recipe_hash(tmp_path, "4.3.1")
    assert recipe_hash(tmp_path, "4.3.1") == first
    assert recipe_hash(tmp_path, "3.9.1") != first
    (tmp_path / "Dockerfile").write_text("FROM y\n")
    assert recipe_hash(tmp_path, "4.3.1") != first


def test_no_engine_and_no_way_to_start_one_says_what_to_do(tmp_path) -> None:
    """A real non-root process with no Docker socket: the error must say how to get an engine."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to an unprivileged user")
    env = {"DOCKER_HOST": f"unix://{tmp_path}/no-such.sock", "HOME": str(tmp_path), "PATH": os.environ["PATH"],
           "TESTBED_CACHE_DIR": str(tmp_path)}
    os.chmod(tmp_path, 0o777)
    code = "from testbed.brokers.engine import ensure_engine\nensure_engine()"
    proc = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c", code],
        env=env, capture_output=True, text=True, timeout=60, cwd=os.path.dirname(os.path.dirname(__file__)),
    )
    assert proc.returncode != 0
    assert "EngineError" in proc.stderr
    assert "no Docker engine answers" in proc.stderr and "start Docker yourself" in proc.stderr


def test_broker_log_levels_set_loggers_in_the_images_log4j_configuration() -> None:
    from pathlib import Path

    from testbed.brokers.cluster import broker_log_config

    base = (Path(__file__).resolve().parents[2] / "docker" / "kafka" / "log4j2.xml").read_text()
    out = broker_log_config(base, {"kafka.request.logger": "DEBUG", "kafka.server.share.SharePartition": "TRACE"})
    assert '<Logger name="kafka.request.logger" level="DEBUG"/>' in out  # replaced: the image says WARN
    assert 'name="kafka.request.logger" level="WARN"' not in out
    assert out.index('<Logger name="kafka.server.share.SharePartition" level="TRACE"/>') < out.index("<Root ")
    assert broker_log_config(base, {}) == base


@pytest.mark.parametrize("levels, message", [({"kafka server": "DEBUG"}, "is not a logger name"),
                                             ({"kafka.server": "VERBOSE"}, "is not one of TRACE")])
def test_bad_broker_log_levels_are_refused_before_anything_starts(levels, message) -> None:
    with pytest.raises(ConfigError, match=message):
        KafkaCluster(log_levels=levels)


@pytest.mark.usefixtures("fresh_settings")
def test_broker_jvm_options_reach_the_container_only_when_set(monkeypatch) -> None:
    from testbed.brokers.cluster import Broker
    from testbed.settings import settings

    def container_env(opts: str | None) -> dict:
        if opts is None:
            monkeypatch.delenv("TESTBED_BROKER_JAVA_OPTS", raising=False)
        else:
            monkeypatch.setenv("TESTBED_BROKER_JAVA_OPTS", opts)
        settings.cache_clear()
        cluster = KafkaCluster(brokers=1)
        cluster._cluster_id, cluster._voters = "id", "1@127.0.0.1:2"
        return cluster._container(Broker(1, 1, 2, "4.4.0", "volume"), "image").env

    assert container_env(None)["KAFKA_JVM_OPTS"] == "-XX:TieredStopAtLevel=1"  # a run's broker: C1 only
    assert "KAFKA_JVM_OPTS" not in container_env("")  # the JVM's defaults
    assert container_env("-XX:TieredStopAtLevel=1")["KAFKA_JVM_OPTS"] == "-XX:TieredStopAtLevel=1"
