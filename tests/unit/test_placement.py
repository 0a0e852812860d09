"""The pure parts of placing members on a Ray cluster: clock offsets, which nodes a placement allows, paths moved to a
node's directory, file bytes written back, the placement field of a scenario, refusals without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from testbed.errors import ConfigError
from testbed.faults.network import Cut
from testbed.members.config import MemberConfig
from testbed.members.spec import MemberSpec
from testbed.placement.clocks import ClockExchange, estimate_offset
from testbed.placement.cluster import NodeInfo, is_loopback, split_address, write_at
from testbed.placement.node_host import relocate
from testbed.placement.model import LabelPlacement, NodePlacement, Placement
from testbed.scenario.base import MemberCount


def test_the_offset_comes_from_the_shortest_round_trip() -> None:
    # node 50 ms ahead; the slow exchange (an asymmetric 30 ms leg) would say 35 ms
    exchanges = [ClockExchange(10.000, 10.065, 10.030), ClockExchange(20.000, 20.051, 20.002),
                 ClockExchange(30.000, 30.054, 30.006)]
    offset = estimate_offset(exchanges)
    assert offset.offset_ms == pytest.approx(50.0)
    assert offset.uncertainty_ms == pytest.approx(1.0)
    assert offset.exchanges == 3


def test_a_clock_behind_gives_a_negative_offset_and_no_exchange_is_refused() -> None:
    assert estimate_offset([ClockExchange(5.0, 4.5, 5.0)]).offset_ms == pytest.approx(-500.0)
    with pytest.raises(ValueError):
        estimate_offset([])


NODES = [NodeInfo("a1b2c3d4e5f6" + "0" * 44, "10.0.0.1", "host-1", {"zone": "a", "disk": "ssd"}),
         NodeInfo("ffeeddccbbaa" + "0" * 44, "10.0.0.2", "host-2", {"zone": "b"})]


@pytest.mark.parametrize(("placement", "expected"), [
    ("spread", ["host-1", "host-2"]),
    (NodePlacement(node="10.0.0.2"), ["host-2"]),
    (NodePlacement(node="host-1"), ["host-1"]),
    (NodePlacement(node="host-2/ffeeddcc"), ["host-2"]),
    (NodePlacement(node="a1b2c3"), ["host-1"]),
    (NodePlacement(node="a1b2"), []),  # too short to stand for an id
    (LabelPlacement(labels={"zone": "a"}), ["host-1"]),
    (LabelPlacement(labels={"zone": "a", "disk": "hdd"}), []),
    (LabelPlacement(labels={"zone": "c"}), []),
])
def test_which_nodes_a_placement_allows(placement: Placement, expected: list[str]) -> None:
    assert [n.hostname for n in NODES if n.matches(placement)] == expected


def test_a_placement_is_spread_a_node_or_labels_and_nothing_else() -> None:
    adapter = TypeAdapter(Placement)
    assert adapter.validate_python("spread") == "spread"
    assert adapter.validate_python({"node": "x"}) == NodePlacement(node="x")
    assert adapter.validate_python({"labels": {"zone": "a"}}) == LabelPlacement(labels={"zone": "a"})
    for bad in ("pinned", {"labels": {}}, {"node": ""}, {"node": "x", "labels": {"a": "b"}}, {"host": "x"}):
        with pytest.raises(ValidationError):
            adapter.validate_python(bad)
    assert MemberCount(spec="a", count=2).placement == "spread"


def test_member_paths_in_the_run_directory_move_to_the_node_and_others_stay() -> None:
    config = MemberConfig(member_id="m0", group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:9092",
                          spec=MemberSpec(name="s", client="confluent-kafka"),
                          history_path=Path("/runs/r1/history/members/m0.jsonl"), log_path=Path("/var/log/m0.log"),
                          run_dir=Path("/runs/r1"))
    moved = relocate(config, Path("/runs/r1"), Path("/tmp/testbed-nodes/x"))
    assert moved.history_path == Path("/tmp/testbed-nodes/x/history/members/m0.jsonl")
    assert moved.run_dir == Path("/tmp/testbed-nodes/x")
    assert moved.log_path == Path("/var/log/m0.log")  # outside the run directory: the same path on every node


def test_bytes_handed_back_append_and_a_file_sent_again_from_zero_replaces(tmp_path: Path) -> None:
    path = tmp_path / "history" / "members" / "m0.jsonl"
    write_at(path, 0, b'{"a":1}\n')
    write_at(path, 8, b'{"b":2}\n')
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    write_at(path, 8, b'{"b":2}\n')  # the same bytes again change nothing
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n'
    write_at(path, 0, b"{}\n")  # rewritten on its node: shorter now
    assert path.read_bytes() == b"{}\n"


def test_a_ray_address_is_host_and_port() -> None:
    assert split_address("127.0.0.1:6379") == ("127.0.0.1", 6379)
    assert split_address("ray://head.example:10001") == ("head.example", 10001)
    for bad in ("head", "head:", ":6379", "head:port"):
        with pytest.raises(ConfigError, match="ray_address"):
            split_address(bad)
    assert is_loopback("127.0.0.2") and is_loopback("localhost") and not is_loopback("10.0.0.1")


def test_a_cut_on_a_node_matches_the_members_gid_on_any_interface() -> None:
    here = Cut("m1", "member", (9092,), gid=5)
    there = Cut("m1", "member", (9092,), gid=5, interface=None)
    assert here.rules("c")[0][:2] == ["-o", "lo"]
    assert "-o" not in there.rules("c")[0] and ["--gid-owner", "5"] == there.rules("c")[0][4:6]


def test_a_placement_other_than_spread_without_a_cluster_is_refused_before_anything_starts(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    from testbed.scenario.loader import load
    from testbed.scenario.runner import ScenarioRunner
    from testbed.settings import settings

    monkeypatch.delenv("TESTBED_RAY_ADDRESS", raising=False)
    settings.cache_clear()
    path = tmp_path / "placed.yaml"
    path.write_text("""
name: placed
topics: [{name: events, partitions: 2}]
members: {a: {client: confluent-kafka}}
fleet:
  - {spec: a, count: 1}
  - {spec: a, count: 1, placement: {labels: {zone: a}}}
steps: [{wait: {seconds: 1}}]
""")
    runner = ScenarioRunner(load(path), tmp_path / "reports")
    with pytest.raises(ConfigError, match=r"fleet\.1\.placement: .*Ray cluster.*--ray"):
        runner._prepare_placement()
    assert not (tmp_path / "reports").exists()


def test_each_placed_members_shift_is_its_nodes_mean_offset_in_whole_ms() -> None:
    from testbed.analysis.view.clocks import clock_note, member_offsets_ms, node_clocks

    actions = [
        {"kind": "node_clock", "ts_ms": 1, "target": "n1", "detail": {"offset_ms": 12.4, "uncertainty_ms": 0.5}},
        {"kind": "node_clock", "ts_ms": 9, "target": "n1", "detail": {"offset_ms": 13.6, "uncertainty_ms": 0.3}},
        {"kind": "node_clock", "ts_ms": 1, "target": "n2", "detail": {"offset_ms": 0.2, "uncertainty_ms": 0.2}},
        {"kind": "member_start", "ts_ms": 2, "target": "m0", "detail": {"node": "n1"}},
        {"kind": "member_start", "ts_ms": 2, "target": "m1", "detail": {"node": "n2"}},
        {"kind": "member_start", "ts_ms": 2, "target": "m2", "detail": {}},
    ]
    clocks = node_clocks(actions)
    assert clocks["n1"].offset_ms == pytest.approx(13.0) and clocks["n1"].uncertainty_ms == pytest.approx(1.1)
    assert member_offsets_ms(actions) == {"m0": 13}  # m1's 0.2 ms is below a timestamp's resolution; m2 ran here
    assert "2 node(s)" in clock_note(actions) and "within 1.1 ms" in clock_note(actions)
    assert member_offsets_ms(actions[3:]) == {} and clock_note(actions[3:]) is None


def test_a_node_removes_the_member_directories_of_hosts_that_are_gone(tmp_path: Path) -> None:
    from testbed.children import owner_mark
    from testbed.placement.node_host import remove_orphans

    mine = tmp_path / f"run1@{owner_mark()}"
    gone = tmp_path / "run2@999999999:12.000"  # no such process
    other = tmp_path / "not-ours"
    for folder in (mine, gone, other):
        (folder / "history").mkdir(parents=True)
    assert remove_orphans(tmp_path) == [gone]
    assert mine.is_dir() and other.is_dir() and not gone.exists()


def test_a_load_placement_needs_workers_and_a_cluster(tmp_path: Path, monkeypatch) -> None:
    from testbed.scenario.loader import load
    from testbed.scenario.runner import ScenarioRunner
    from testbed.settings import settings

    monkeypatch.delenv("TESTBED_RAY_ADDRESS", raising=False)
    settings.cache_clear()
    text = """
name: placed-load
topics: [{name: events, partitions: 2}]
load: {topic: events, rate: 10, users: 2, %s}
members: {a: {client: confluent-kafka}}
fleet: [{spec: a, count: 1}]
steps: [{wait: {seconds: 1}}]
"""
    path = tmp_path / "placed.yaml"
    path.write_text(text % "placement: spread")
    with pytest.raises(ConfigError, match=r"load\.placement: the load's workers are what is placed; give workers"):
        load(path)
    path.write_text(text % "workers: 2, placement: {labels: {zone: a}}")
    with pytest.raises(ConfigError, match=r"load\.placement: the load's workers are placed on a Ray cluster only"):
        ScenarioRunner(load(path), tmp_path / "reports")._prepare_placement()


def test_a_node_hands_over_what_each_file_gained_empty_markers_too(tmp_path: Path, monkeypatch) -> None:
    import testbed.placement.node_host as node_host

    monkeypatch.setattr(node_host, "NODES_DIR", tmp_path)
    host = node_host.NodeHost("run1")
    history = host.root / "history" / "members" / "m0.jsonl"
    history.parent.mkdir(parents=True)
    history.write_bytes(b'{"a":1}\n')
    marker = host.root / "load" / "producer-0.finished"
    marker.parent.mkdir(parents=True)
    marker.touch()
    first = host.collect()
    assert sorted(first["files"]) == [("history/members/m0.jsonl", 0, b'{"a":1}\n'),
                                      ("load/producer-0.finished", 0, b"")]
    assert host.collect()["files"] == []  # nothing new
    with history.open("ab") as f:
        f.write(b'{"b":2}\n')
    assert host.collect()["files"] == [("history/members/m0.jsonl", 8, b'{"b":2}\n')]
    history.write_bytes(b"{}\n")  # written anew, shorter
    assert host.collect()["files"] == [("history/members/m0.jsonl", 0, b"{}\n")]
    host.close()
    assert not host.root.exists()


class RecordingNode:
    """A node that answers every call and records it (what a placed member asks of its NodeHost)."""

    name = "node-a/12345678"
    driver_root = Path("/runs/r1")

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def call(self, method: str, *args, timeout_s: float = 60.0):
        self.calls.append((method, args))
        return 4242 if method in ("start", "open_host") else True

    def sync(self, method: str = "collect") -> None:
        pass

    def iptables(self, *args: str) -> None:
        pass


def test_members_in_one_placed_host_share_its_node_gid_and_every_signal() -> None:
    from testbed.placement.placed import PlacedHost, PlacedMember

    node = RecordingNode()
    host = PlacedHost("host-m0", node, Path("/runs/r1/logs/host-m0.log"), gid=61000)
    host.start(MemberSpec(name="s", client="confluent-kafka").model_dump_json())
    members = []
    for i in range(2):
        config = MemberConfig(member_id=f"m{i}", slot=i, group_id="g", topics=["t"], bootstrap_servers="127.0.0.1:1",
                              spec=MemberSpec(name="s", client="confluent-kafka"), log_path=host.log_path,
                              history_path=Path(f"/runs/r1/history/members/m{i}.jsonl"), run_dir=Path("/runs/r1"))
        members.append(PlacedMember(config, Path(f"/runs/r1/config/m{i}.json"), node, None, gid=host.gid, host=host))
        members[-1].start()
    assert [c[1][-1] for c in node.calls if c[0] == "start"] == ["host-m0", "host-m0"]  # started in the host
    assert node.calls[0][0] == "open_host" and node.calls[0][1][-1] == 61000
    assert members[0].cohosted() == members and members[1].host is host
    members[1].pause()  # SIGSTOP of the host: both members paused
    assert [m.state for m in members] == ["paused", "paused"]
    members[0].resume()
    assert [m.state for m in members] == ["running", "running"]
    members[1].ended({"exit_code": -9, "signal": "SIGKILL", "cause": "killed", "host": "host-m0"})
    assert members[0].cohosted() == [members[0]] and members[1].exit_info["node"] == node.name


def test_a_load_worker_on_a_node_stamps_by_the_drivers_clock_and_finds_its_own_locustfile() -> None:
    from testbed.history.events import CLOCK_CORRECTION_ENV
    from testbed.placement.workers import PACKAGE, NodeWorkers

    node = RecordingNode()
    node.processes = []

    class Placer:
        def choose(self, placement):
            return node

        def clock_correction_ms(self, chosen) -> int:
            return -3000 if chosen is node else 0  # its clock 3 s ahead of the driver's

        def master_address(self, placement) -> str:
            return "10.0.0.1"

    workers = NodeWorkers(Placer(), "spread")
    workers.spawn("worker-0", ["-f", str(PACKAGE / "load" / "locustfile.py")], {"P": "x"},
                  Path("/runs/r1/load/worker-0.log"))
    ((method, args),) = node.calls
    assert method == "spawn" and args[2] == {"P": "x", CLOCK_CORRECTION_ENV: "-3000"}
    assert args[-1] == str(PACKAGE)  # the node swaps the driver's package path for its own
    assert workers.where("worker-0") == node.name and workers.master_address() == "10.0.0.1"


def test_the_locust_master_listens_on_loopback_unless_a_node_is_on_another_machine() -> None:
    from testbed.placement.cluster import RayPlacer

    class Ray:
        class util:
            @staticmethod
            def get_node_ip_address() -> str:
                return "10.0.0.1"

    nodes = [NodeInfo("a" * 40, "127.0.0.1", "h", {"zone": "a"}), NodeInfo("b" * 40, "10.0.0.2", "far", {"zone": "b"})]
    placer = RayPlacer("127.0.0.1:6379", Ray, nodes, owns_connection=False)
    assert placer.master_address(LabelPlacement(labels={"zone": "a"})) == "127.0.0.1"
    assert placer.master_address("spread") == "10.0.0.1"

