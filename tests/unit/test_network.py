"""The iptables rules a network cut makes, and which leftovers the reaper removes (iptables itself replaced)."""

from __future__ import annotations

import pytest

from testbed.children import owner_mark
from testbed.errors import ConfigError
from testbed.faults import network
from testbed.faults.network import Cut, member_gid


def test_member_cut_drops_only_its_gids_packets_to_the_broker_ports():
    [rule] = Cut("m1", "member", (9092, 9093), gid=1_000_001).rules("testbed-net owner=1:2 cut=m1")
    text = " ".join(rule)
    assert "-o lo -p tcp -m owner --gid-owner 1000001 -m multiport --dports 9092,9093" in text
    assert rule[-2:] == ["-j", "DROP"] and "statistic" not in text


def test_broker_cut_drops_both_ways_and_loss_is_random():
    rules = Cut("broker-2", "broker", (9092, 9093), both_ways=True, loss=0.25).rules("c")
    assert [r[r.index("multiport") + 1] for r in rules] == ["--dports", "--sports"]
    assert all("--gid-owner" not in r and r[r.index("--probability") + 1] == "0.2500" for r in rules)


@pytest.mark.parametrize("kwargs", [dict(ports=()), dict(ports=tuple(range(1, 17))), dict(ports=(1,), loss=1.0),
                                    dict(ports=(1,), loss=0.0)])
def test_cut_refuses_what_iptables_cannot_do(kwargs):
    with pytest.raises(ConfigError):
        Cut("m0", "member", **kwargs)


def test_member_gids_are_per_harness_and_slot_and_above_system_ranges():
    gids = {member_gid(slot, owner_pid=pid) for pid in (100, 101) for slot in (0, 1, 999)}
    assert len(gids) == 6 and min(gids) >= network.GID_BASE
    with pytest.raises(ConfigError, match="at most 1000 member slots"):
        member_gid(1000, owner_pid=1)


def test_reaper_removes_rules_of_gone_owners_only(monkeypatch):
    mine = f'-A OUTPUT -o lo -p tcp -m multiport --dports 1 -m comment --comment "testbed-net owner={owner_mark()} cut=m0" -j DROP'
    gone = '-A OUTPUT -o lo -p tcp -m multiport --dports 2 -m comment --comment "testbed-net owner=999999:1.000 cut=broker-1" -j DROP'
    deleted: list[tuple[str, ...]] = []
    monkeypatch.setattr(network, "_listed_rules", lambda: [mine, gone])
    monkeypatch.setattr(network, "_iptables", lambda *args: deleted.append(args))
    removed = network.reap_leftover_rules()
    assert deleted == [("-D", "OUTPUT", "-o", "lo", "-p", "tcp", "-m", "multiport", "--dports", "2", "-m", "comment",
                        "--comment", "testbed-net owner=999999:1.000 cut=broker-1", "-j", "DROP")]
    assert removed == ["iptables rule broker-1 of owner 999999:1.000"]
