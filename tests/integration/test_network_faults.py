"""Network cuts with real iptables rules and real processes on loopback (root, iptables; no broker needed)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import psutil
import pytest

from testbed.children import owner_identity
from testbed.faults import network
from testbed.faults.network import Cut, NetworkFaults, member_gid
from testbed.history.harness import HarnessLog
from testbed.run.layout import RunDir

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(network.unavailable() is not None, reason=str(network.unavailable()))]


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback port that accepts connections (and keeps them) until the test ends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    done = threading.Event()
    accepted: list[socket.socket] = []

    def serve() -> None:
        while not done.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    done.set()
    thread.join()
    for conn in accepted:
        conn.close()
    server.close()


def connects(port: int, gid: int | None) -> bool:
    """Whether a fresh process under ``gid`` connects to ``port`` within 2 s."""
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    proc = subprocess.run([sys.executable, "-c", code], group=gid, extra_groups=[] if gid is not None else None,
                          capture_output=True, timeout=30)
    return proc.returncode == 0


def our_rules() -> list[str]:
    return [r for r in network._listed_rules() if f"owner={network.owner_mark()}" in r]


def test_member_cut_isolates_only_that_gid_and_heal_restores_it(listener: int, run_dir: RunDir) -> None:
    gid, other = member_gid(0), member_gid(1)
    harness = HarnessLog(run_dir.harness_log)
    with NetworkFaults(harness) as net:
        net.cut(Cut("m0", "member", (listener,), gid=gid, detail={"brokers": "all"}))
        assert len(our_rules()) == 1
        assert not connects(listener, gid), "the cut member still reaches the port"
        assert connects(listener, other) and connects(listener, None), "the cut reached other processes"
        assert net.heal(["m0"]) == ["m0"]
        assert our_rules() == []
        assert connects(listener, gid)
        net.cut(Cut("m0", "member", (listener,), gid=gid))
    assert our_rules() == [], "closing the service must remove every rule it made"
    harness.close()
    kinds = [(a["kind"], a["target"]) for a in map(json.loads, run_dir.harness_log.read_text().splitlines())]
    assert kinds == [("member_partition", "m0"), ("member_heal", "m0"), ("member_partition", "m0"),
                     ("member_heal", "m0")]


def connects_out_of(port: int, gid: int, tries: int) -> int:
    """How many of ``tries`` fresh connections from a process under ``gid`` are made within 0.5 s each (a dropped
    SYN is sent again only after 1 s)."""
    code = (f"import socket\nmade = 0\nfor _ in range({tries}):\n    try:\n"
            f"        socket.create_connection(('127.0.0.1', {port}), timeout=0.5).close(); made += 1\n"
            f"    except OSError:\n        pass\nprint(made)")
    proc = subprocess.run([sys.executable, "-c", code], group=gid, extra_groups=[], capture_output=True, text=True,
                          timeout=120)
    return int(proc.stdout)


def test_a_lossy_cut_drops_about_its_share_of_the_members_packets(listener: int) -> None:
    """scenarios/member-packet-loss.yaml's mechanism (iptables' statistic match), out of the scenario."""
    gid = member_gid(0)
    with NetworkFaults() as net:
        net.cut(Cut("m0", "member", (listener,), gid=gid, loss=0.5))
        (rule,) = our_rules()
        assert "--mode random --probability 0.5" in rule, rule
        made = connects_out_of(listener, gid, 40)
        # binomial(40, 0.5): outside [5, 35] with a probability below 1e-6
        assert 5 <= made <= 35, f"{made} of 40 connections made through a 50 % loss"
        assert connects(listener, member_gid(1))
    assert our_rules() == [] and connects_out_of(listener, gid, 10) == 10


def test_broker_cut_drops_every_process_both_ways(listener: int) -> None:
    with NetworkFaults() as net:
        net.cut(Cut("broker-1", "broker", (listener,), both_ways=True))
        assert not connects(listener, None) and not connects(listener, member_gid(0))
    assert connects(listener, None)


def test_a_crashed_runs_rules_are_reaped_at_the_next_start(listener: int) -> None:
    # The rule of a harness that then dies. Its owner lives while the rule is checked to cut: a rule whose owner
    # is already gone would be any start's to reap, another pytest worker's included, before this test looked.
    harness = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    mark = "{}:{}".format(*owner_identity(psutil.Process(harness.pid)))
    leftover = Cut("m7", "member", (listener,), gid=member_gid(7)).rules(f"{network.TAG} owner={mark} cut=m7")[0]
    network._iptables("-I", network.CHAIN, *leftover)
    try:
        assert not connects(listener, member_gid(7))
        harness.kill()
        harness.wait()
        with NetworkFaults():
            assert not [r for r in network._listed_rules() if f"owner={mark}" in r]
        assert connects(listener, member_gid(7))
    finally:
        harness.kill()
        harness.wait()
        if [r for r in network._listed_rules() if f"owner={mark}" in r]:
            network._iptables("-D", network.CHAIN, *leftover)
