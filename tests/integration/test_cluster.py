"""The cluster service on real brokers in containers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid

import docker
import psutil
import pytest
from confluent_kafka import Consumer, Producer

from testbed.admin.topic_reader import read_committed
from testbed.brokers.cluster import KafkaCluster
from testbed.brokers.images import check_kafka_version, ensure_kafka_image
from testbed.brokers.producer_ids import producer_id_assigned
from testbed.brokers.reaper import OWNER_PID, OWNER_STARTED, owner_labels
from testbed.errors import ConfigError, WaitAborted
from testbed.run.layout import broker_log_name
from testbed.settings import DEFAULT_KAFKA_VERSION, PROJECT_LABEL, PROJECT_NAME, settings
from testbed.waits import wait_until

pytestmark = pytest.mark.integration


def produce(bootstrap: str, topic: str, n: int, prefix: str = "k") -> dict[tuple[int, int], bytes]:
    """Produce n records with acks=all; return (partition, offset) -> value of every acknowledged one."""
    acked: dict[tuple[int, int], bytes] = {}

    def on_delivery(err, msg) -> None:
        if err is None:
            acked[(msg.partition(), msg.offset())] = msg.value()

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": 60000, "logger": __import__("logging").getLogger("producer")})
    for i in range(n):
        p.produce(topic, key=f"{prefix}{i % 17}", value=f"{prefix}-{i}".encode(), on_delivery=on_delivery)
        p.poll(0)
    assert p.flush(90) == 0, "records still in flight after 90 s"
    return acked


def consume_all(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    """Every record of the topic, (partition, offset) -> value, read with partitions assigned: no group to join or
    leave, whose coordinator may have been on a broker the test killed (librdkafka's close can wait on it)."""
    read = read_committed(bootstrap, topic)
    assert read.complete, f"partitions not read to their end (position, end): {read.behind}"
    return {(r.partition, r.offset): r.value for r in read.records}


def test_round_trip_on_one_broker(kafka_cluster: KafkaCluster, topic_factory) -> None:
    topic = topic_factory(partitions=3)
    acked = produce(kafka_cluster.bootstrap_servers, topic, 300)
    assert len(acked) == 300
    assert consume_all(kafka_cluster.bootstrap_servers, topic) == acked


def test_a_broker_starts_from_the_class_archive_its_image_was_built_with(kafka_cluster: KafkaCluster) -> None:
    """The image's build archives the classes a start loads (recipes/kafka/class-archive.sh); a broker that silently
    read its jars instead would start a second slower, and nothing else would tell. Likewise the storage's format in
    the broker's own JVM (TestbedKafkaStart.java), which the build drops for a Kafka it cannot start: dropped for
    this one, every start would pay a second JVM's (0.3-0.4 s)."""
    ports = {str(n.port) for n in kafka_cluster.nodes}
    brokers = [p for p in psutil.process_iter(["cmdline"])
               if "kafka.Kafka" in (p.info["cmdline"] or []) and p.environ().get("KAFKA_PORT") in ports]
    assert len(brokers) == len(kafka_cluster.nodes), "a broker JVM of this cluster is not in the process table"
    for broker in brokers:
        mapped = {m.path for m in broker.memory_maps()}
        assert "/opt/kafka/class-archives/broker.jsa" in mapped, sorted(p for p in mapped if p.endswith(".jsa"))
        assert "TestbedKafkaStart" in broker.info["cmdline"], broker.info["cmdline"]
    assert "Unable to use shared archive" not in "".join(n.logs() for n in kafka_cluster.nodes)


def test_a_producer_id_is_seen_assigned_in_librdkafkas_statistics(kafka_cluster: KafkaCluster) -> None:
    """The cluster's warm-up (testbed/brokers/producer_ids.py) is done once librdkafka's statistics say its producer
    holds a producer id: a librdkafka that named that state otherwise would leave every start's warm-up asking until
    its timeout."""
    for node in kafka_cluster.nodes:
        assert producer_id_assigned(node.address, timeout_s=15.0)


def test_a_clusters_start_says_nothing_of_its_producer_id_warm_up(caplog: pytest.LogCaptureFixture) -> None:
    """The warm-up waits through the brokers' 'Coordinator load in progress' on purpose: librdkafka's warning of it
    reached the console of every `testbed run`."""
    caplog.set_level(logging.WARNING, logger="testbed.brokers.producer_ids")
    with KafkaCluster(brokers=1) as cluster:
        wait_until(lambda: producer_id_assigned(cluster.nodes[0].address, timeout_s=1.0), timeout_s=30,
                   what="a producer id")
    assert [r.getMessage() for r in caplog.records if r.name == "testbed.brokers.producer_ids"] == []


def test_a_started_cluster_has_its_group_coordinators_up() -> None:
    """Its start made __consumer_offsets (beside the probe topic): the first group's coordinator answers at once."""
    with KafkaCluster(brokers=1) as cluster:
        admin = cluster.admin()
        assert "__consumer_offsets" in admin.client.list_topics(timeout=10).topics
        assert admin.describe_group(f"first-{uuid.uuid4().hex[:6]}").state in ("EMPTY", "DEAD")


def test_three_brokers_round_trip_and_lose_no_acknowledged_record_across_a_broker_restart(kafka_cluster_3,
                                                                                        topic_factory) -> None:
    # One test, one 3-broker cluster: a second test of its own started a second cluster on the other xdist worker.
    cluster = kafka_cluster_3
    assert len(cluster.bootstrap_servers.split(",")) == 3
    topic = topic_factory(partitions=6, replication_factor=3, cluster=cluster)
    acked = produce(cluster.bootstrap_servers, topic, 500, prefix="before")
    assert len(acked) == 500
    cluster.kill_broker(2)
    acked |= produce(cluster.bootstrap_servers, topic, 500, prefix="during")
    cluster.start_broker(2)
    acked |= produce(cluster.bootstrap_servers, topic, 500, prefix="after")
    assert len(acked) == 1500
    assert consume_all(cluster.bootstrap_servers, topic) == acked


def test_consumer_group_forms_and_owns_all_partitions(kafka_cluster: KafkaCluster, topic_factory) -> None:
    topic = topic_factory(partitions=6)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumers = [Consumer({"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": group,
                           "partition.assignment.strategy": "cooperative-sticky"}) for _ in range(2)]
    try:
        for c in consumers:
            c.subscribe([topic])

        seen: dict[str, object] = {}

        def owned_by_group() -> set[int] | None:
            # The broker turns STABLE at SyncGroup; a member applies its share only at its next poll, so
            # both views are waited for: neither alone says the group formed.
            for c in consumers:
                c.poll(0.2)
            desc = kafka_cluster.admin().client.describe_consumer_groups([group])[group].result(timeout=10)
            parts = sorted(tp.partition for m in desc.members for tp in m.assignment.topic_partitions)
            local = sorted(tp.partition for c in consumers for tp in c.assignment())
            seen.update(state=str(desc.state), members=len(desc.members), broker=parts, local=local)
            ok = str(desc.state).endswith("STABLE") and len(desc.members) == 2 and parts == local == list(range(6))
            return set(parts) if ok else None

        owned = wait_until(owned_by_group, timeout_s=60, what="a stable group of 2 owning all 6 partitions, "
                           "as the broker and the consumers see it", diagnostics=lambda: str(seen))
        assert owned == set(range(6))
    finally:
        for c in consumers:
            c.close()


def test_leftover_container_of_an_earlier_run_is_reaped(kafka_cluster: KafkaCluster) -> None:
    client = docker.from_env()
    labels = {**owner_labels("broker"), OWNER_PID: "999999", OWNER_STARTED: "1.000"}
    volume = client.volumes.create(f"testbed-data-leftover-{uuid.uuid4().hex[:6]}", labels=labels)
    leftover = client.containers.create(ensure_kafka_image(kafka_cluster.kafka_version), labels=labels,
                                        network_mode="none", entrypoint=["sleep", "600"],
                                        volumes={volume.name: {"bind": "/var/lib/kafka/data", "mode": "rw"}})
    try:
        with KafkaCluster(brokers=1, kafka_version=kafka_cluster.kafka_version) as other:
            assert other.bootstrap_servers
        names = {c.id for c in client.containers.list(all=True)}
        assert leftover.id not in names, "a container whose owner is gone must be reaped at start"
        assert volume.name not in {v.name for v in client.volumes.list()}, "and its data volume with it"
    finally:
        if leftover.id in {c.id for c in client.containers.list(all=True)}:
            leftover.remove(force=True)
        client.close()


def test_readiness_stops_at_once_when_a_broker_container_exits_and_says_what_docker_says(kafka_cluster) -> None:
    started = time.monotonic()
    with pytest.raises(WaitAborted) as info:
        with KafkaCluster(brokers=1, kafka_version=kafka_cluster.kafka_version, startup_timeout_s=120,
                          broker_settings={"num.partitions": "many"}):
            pass
    assert time.monotonic() - started < 60, "the wait outlived the broker it waited for"
    message = str(info.value)
    assert "container" in message and "is exited (exit code 1)" in message, message
    assert "Invalid value many for configuration num.partitions" in message, "the log tail names the cause"
    client = docker.from_env()
    try:
        # The failed cluster removed its container; the session's own clusters (1 and 3 brokers) run on.
        mine = client.containers.list(all=True, filters={"label": f"{OWNER_PID}={os.getpid()}"})
        assert {c.status for c in mine} == {"running"}, [(c.name, c.status) for c in mine]
        assert {n.container.get_wrapped_container().name for n in kafka_cluster.nodes} <= {c.name for c in mine}
        volumes = {v.name for v in client.volumes.list(filters={"label": f"{OWNER_PID}={os.getpid()}"})}
        in_use = {mount.get("Name") for c in mine for mount in c.attrs.get("Mounts", [])}
        assert volumes <= in_use, f"data volumes of the failed cluster left behind: {volumes - in_use}"
    finally:
        client.close()


def test_a_cluster_closed_beside_copies_its_logs_before_returning_and_leaves_nothing_once_joined(
        kafka_cluster, tmp_path) -> None:
    """A run's cluster is removed on a thread while its analysis reads the broker logs: the copies are whole when
    ``close_beside`` returns, and after the thread nothing of the cluster remains (containers, volumes, watchdog)."""
    cluster = KafkaCluster(brokers=1, kafka_version=kafka_cluster.kafka_version, log_dir=tmp_path).open()
    containers = {n.container.get_wrapped_container().id for n in cluster.nodes}
    volumes = {n.volume for n in cluster.nodes}
    watchdog = cluster._watchdog.process
    removal = cluster.close_beside()
    try:
        assert "Kafka Server started" in (tmp_path / broker_log_name(1)).read_text()
    finally:
        removal.join(60)
    assert not removal.is_alive()
    client = docker.from_env()
    try:
        assert not containers & {c.id for c in client.containers.list(all=True)}
        assert not volumes & {v.name for v in client.volumes.list()}
    finally:
        client.close()
    assert watchdog.poll() == 0, "released: it exits without reaping"


def _inner_session(tmp_path, *options: str) -> subprocess.CompletedProcess[str]:
    """``pytest -m integration`` of ``tmp_path/test_inner.py`` in a process of its own: a session with its own
    session cluster. One still running near the limit below prints every thread's stack and ends: the failure says
    where it was (once in CI it hung after its teardown, with nothing to show for it)."""
    (tmp_path / "conftest.py").write_text("import faulthandler\nfaulthandler.dump_traceback_later(240, exit=True)\n")
    command = [sys.executable, "-m", "pytest", "-q", *options, "-m", "integration", "-p", "no:cacheprovider",
               str(tmp_path / "test_inner.py")]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"})


def test_no_container_outlives_a_pytest_session(tmp_path) -> None:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.integration
        def test_uses_cluster(kafka_cluster):
            assert kafka_cluster.bootstrap_servers.startswith("127.0.0.1:")
            print("OWNER", __import__("os").getpid())
    """))
    proc = _inner_session(tmp_path, "-s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-8000:]
    owner = next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("OWNER"))
    client = docker.from_env()
    try:
        left = client.containers.list(all=True, filters={"label": [f"{PROJECT_LABEL}={PROJECT_NAME}",
                                                                  f"{OWNER_PID}={owner}"]})
        assert left == [], f"containers left by the session: {[c.name for c in left]}"
        volumes = client.volumes.list(filters={"label": [f"{PROJECT_LABEL}={PROJECT_NAME}", f"{OWNER_PID}={owner}"]})
        assert volumes == [], f"data volumes left by the session: {[v.name for v in volumes]}"
    finally:
        client.close()


def test_a_test_that_fails_beside_a_stalled_session_broker_says_so_in_its_report(tmp_path) -> None:
    """The session's broker frozen longer than its controller waits for a heartbeat (9 s): the controller fences it
    once it runs again, and the failure of the test meanwhile shows that fence in a section of its report."""
    (tmp_path / "test_inner.py").write_text(textwrap.dedent("""
        import time

        import pytest

        from testbed.errors import WaitTimeout
        from testbed.waits import wait_until

        @pytest.mark.integration
        def test_fails_beside_a_frozen_broker(kafka_cluster):
            started = time.time()
            # Thawed, the controller fences the broker when its stale-broker check runs before the broker's next
            # heartbeat lands; once in CI the heartbeat came first: frozen again, at most three times.
            for _ in range(3):
                kafka_cluster.pause_broker(1)
                time.sleep(12)
                kafka_cluster.unpause_broker(1)
                try:
                    wait_until(lambda: kafka_cluster.stalls_since(started), timeout_s=10, what="the fence in the log")
                    break
                except WaitTimeout:
                    continue
            else:
                pytest.fail("the controller fenced no broker after three 12 s freezes")
            assert False, "fails on purpose"
    """))
    proc = _inner_session(tmp_path)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "fails on purpose" in proc.stdout, proc.stdout[-3000:]
    section = proc.stdout.split("testbed: the brokers of kafka_cluster stalled during this test", 1)
    assert len(section) == 2, proc.stdout[-3000:]
    assert "broker 1 (127.0.0.1:" in section[1] and "Fencing broker 1 at epoch" in section[1], section[1][:2000]


def test_a_kafka_version_maven_central_does_not_serve_is_refused() -> None:
    with pytest.raises(ConfigError, match="not served by Maven Central.*testbed kafka-versions"):
        check_kafka_version("3.99.0")


def test_a_3_9_broker_upgraded_to_4_keeps_its_data_and_its_levels_are_raised() -> None:
    """3.9.1 starts; its container is replaced by one of the default version (4.x) on the same data volume: the
    records written before are read back after, and the feature levels rise from 3.9's to the new release's.
    Nothing remains after close."""
    actions = []
    new = DEFAULT_KAFKA_VERSION
    release = ".".join(new.split(".")[:2])
    with KafkaCluster(brokers=1, kafka_version="3.9.1", recorder=actions.append) as cluster:
        assert len(cluster.admin().client.list_topics(timeout=10).brokers) == 1
        topic = cluster.create_topic(f"upgrade-{uuid.uuid4().hex[:6]}", 2)
        before = produce(cluster.bootstrap_servers, topic, 200)
        volume = cluster.nodes[0].volume
        cluster.upgrade_broker(1, new)
        assert cluster.versions() == {1: new}
        assert consume_all(cluster.bootstrap_servers, topic) == before
        change = cluster.finalize_features(new)
        assert change["before"]["metadata.version"] == "3.9-IV0"
        assert change["after"]["metadata.version"].startswith(f"{release}-IV"), change["after"]
        assert change["after"]["group.version"] == "1"
        banners = [line for line in cluster.nodes[0].logs().splitlines() if "Kafka version: " in line]
        assert [b.split("Kafka version: ")[1].split()[0] for b in banners] == ["3.9.1", new]
    assert [(a.kind, a.detail.get("upgrade_to") or a.detail.get("version")) for a in actions][:2] == [
        ("broker_stop", new), ("broker_start", new)]
    client = docker.from_env()
    try:
        assert volume not in {v.name for v in client.volumes.list()}, "the data volume outlived its cluster"
    finally:
        client.close()


def test_a_broker_container_has_a_cpu_weight_of_its_own_beside_the_hosts_processes(kafka_cluster) -> None:
    """Not in the engine's one cgroup, which the kernel weighs as a single process against each member's session
    (thirty busy members starved a broker 20 s, benchmarks/broker_cpu.py): a cgroup of its own at the root of the
    hierarchy with the configured weight, as the kernel places the broker's JVM."""
    shares = settings().broker_cpu_shares
    assert shares > 0, "the suite runs with the default placement"
    client = docker.from_env()
    try:
        container = client.containers.get(kafka_cluster.nodes[0].container.get_wrapped_container().id)
        driver = client.info()["CgroupDriver"]
    finally:
        client.close()
    assert container.attrs["HostConfig"]["CpuShares"] == shares
    pid = container.attrs["State"]["Pid"]
    lines = [line.split(":", 2) for line in open(f"/proc/{pid}/cgroup").read().splitlines()]
    cpu_path = next((path for _, controllers, path in lines if "cpu" in controllers.split(",")),
                    next(path for hierarchy, _, path in lines if hierarchy == "0"))
    if driver == "cgroupfs":
        assert cpu_path == f"/{container.id}", f"the broker's JVM is in {cpu_path}, not a cgroup of its own at the root"
    v1_weight = f"/sys/fs/cgroup/cpu{cpu_path}/cpu.shares"
    if os.path.exists(v1_weight):
        assert int(open(v1_weight).read()) == shares
