"""Property and example tests of the pure interval and control-plane logic (no Spark)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testbed.analysis.group.broker_logs import (KEEP, broker_stalls, classic_rebalances, controller_stalls,
                                               for_group, parse_line, parse_lines, run_stalls_note, stall_note)
from testbed.analysis.group.ownership import ownership_intervals
from testbed.analysis.group.episodes import rebalance_episodes
from testbed.analysis.intervals import OwnerSpan, shared_ownership
from testbed.analysis.view.lives import MemberEvent, MemberLife
from testbed.analysis.catalog import CATALOG, TABLES


def union_length(spans: list[tuple[int, int]]) -> int:
    """The time half-open ``(start, end)`` spans cover together: the oracle the properties below are held to."""
    covered, reached = 0, None
    for start, end in sorted(spans):
        if reached is not None and start < reached:
            start = reached
        if end > start:
            covered += end - start
            reached = end
    return covered


owners = st.lists(
    st.builds(lambda m, a, d: OwnerSpan(m, a, a + d), st.sampled_from("ABC"), st.integers(0, 1000), st.integers(0, 500)),
    max_size=12,
)


@given(owners)
def test_shared_ownership_lies_inside_pairwise_overlaps(os_):
    shared = shared_ownership(os_)
    pairwise = [
        (max(a.start, b.start), min(a.end, b.end))
        for i, a in enumerate(os_) for b in os_[i + 1 :]
        if a.member != b.member and min(a.end, b.end) > max(a.start, b.start)
    ]
    assert sum(s.length for s in shared) == union_length(pairwise)
    assert all(len(s.members) >= 2 for s in shared)


@given(owners)
def test_shared_ownership_does_not_depend_on_order(os_):
    assert shared_ownership(os_) == shared_ownership(list(reversed(os_)))


def test_hand_over_at_the_same_millisecond_is_not_shared():
    assert shared_ownership([OwnerSpan("A", 0, 100), OwnerSpan("B", 100, 200)]) == []


partition_events = st.lists(
    st.tuples(st.integers(0, 10_000), st.sampled_from(["assigned", "revoked", "lost", "stopped"]),
              st.sets(st.integers(0, 3), max_size=4)),
    max_size=25,
)


@settings(max_examples=200)
@given(partition_events, st.sampled_from(["killed", "vanished", "run_end", "stopped"]), st.integers(0, 12_000))
def test_owned_time_never_exceeds_wall_time_times_partitions(evs, reason, end):
    events = [MemberEvent(ts, "A", name, tuple(("t", p) for p in sorted(parts)), i) for i, (ts, name, parts) in enumerate(evs)]
    first = min((e.ts for e in events), default=0)
    last_end = max([end, *(e.ts for e in events)])
    intervals = ownership_intervals(events, MemberLife("A", end, reason))
    assert all(iv.duration_ms >= 0 for iv in intervals)
    per_tp: dict = {}
    for iv in intervals:
        per_tp.setdefault((iv.topic, iv.partition), []).append((iv.start_ms, iv.end_ms))
    for tp_spans in per_tp.values():  # one member never holds a partition twice at once
        assert union_length(tp_spans) == sum(end - start for start, end in tp_spans)
    assert sum(iv.duration_ms for iv in intervals) <= (last_end - first) * 4


def test_interval_ends_at_kill_time_and_at_stop():
    evs = [MemberEvent(10, "A", "assigned", (("t", 0), ("t", 1))), MemberEvent(20, "A", "revoked", (("t", 1),), 1)]
    ivs = ownership_intervals(evs, MemberLife("A", 50, "killed"))
    assert sorted((iv.partition, iv.start_ms, iv.end_ms, iv.end_reason) for iv in ivs) == [(0, 10, 50, "killed"), (1, 10, 20, "revoked")]


def test_kill_keeps_the_episode_open_through_the_session_timeout():
    evs = [
        MemberEvent(0, "A", "started"), MemberEvent(0, "B", "started", seq=1),
        MemberEvent(100, "A", "assigned", (("t", 0),), 2), MemberEvent(100, "B", "assigned", (("t", 1),), 3),
        MemberEvent(20_000, "B", "revoked", (("t", 1),), 4), MemberEvent(20_500, "B", "assigned", (("t", 0), ("t", 1)), 5),
    ]
    lives = {"A": MemberLife("A", 5_000, "killed"), "B": MemberLife("B", 30_000, "run_end")}
    eps = rebalance_episodes(evs, lives, gap_ms=1500, teardown_after_ms=None)
    assert [(e.start_ms, e.end_ms, e.trigger) for e in eps] == [(0, 100, "started:A"), (5_000, 20_500, "death:A")]


def test_broker_log_lines_parse_and_pair():
    lines = [
        ("1", "[2026-11-22 10:00:00,123] INFO [GroupCoordinator id=1] Preparing to rebalance group g in state "
              "PreparingRebalance with old generation 3 (__consumer_offsets-7) (reason: Adding new member x) "
              "(org.apache.kafka.coordinator.group.GroupMetadataManager)"),
        ("1", "[2026-11-22 10:00:03,456] INFO [GroupCoordinator id=1] Stabilized group g generation 4 "
              "(__consumer_offsets-7) with 3 members (org.apache.kafka.coordinator.group.GroupMetadataManager)"),
        ("1", "[2026-11-22 10:00:04,000] INFO [GroupId h] Computed a new target assignment for epoch 5 with "
              "'uniform' assignor in 2ms. (org.apache.kafka.coordinator.group.GroupMetadataManager)"),
        ("1", "[2026-11-22 10:00:05,000] INFO unrelated line"),
    ]
    parsed = parse_lines(lines)
    assert [p.event for p in parsed] == ["prepare", "stabilized", "target_assignment"]
    assert parsed[0].reason == "Adding new member x" and parsed[0].generation == 3
    assert parsed[2].assignor == "uniform" and parsed[2].compute_ms == 2
    (reb,) = classic_rebalances(parsed)
    assert reb.stabilized_ms - reb.prepare_ms == 3333 and reb.generation == 4
    assert parse_line("1", "no timestamp here") is None


def test_broker_log_lines_of_3x_brokers_parse_without_the_logger_name():
    """Kafka 3.x's Scala group coordinator (a cluster mid-upgrade has both) names its logger kafka.*."""
    line = ("[2026-11-23 18:53:39,094] INFO [GroupCoordinator 3]: Preparing to rebalance group g in state "
            "PreparingRebalance with old generation 0 (__consumer_offsets-6) (reason: Adding new member m0 with "
            "group instance id None; client reason: not provided) (kafka.coordinator.group.GroupCoordinator)")
    parsed = parse_line("3", line)
    assert parsed is not None and parsed.event == "prepare" and parsed.group_id == "g"
    assert parsed.reason == "Adding new member m0 with group instance id None; client reason: not provided"


def test_broker_log_lines_of_streams_groups_parse():
    """KIP-1071 lines name the member after the group ("[GroupId g][MemberId m] "); lines of Kafka 4.3.1."""
    prefix = "[2026-11-27 15:06:01,000] INFO [GroupCoordinator id=2 topic=__consumer_offsets partition=6] "
    bump = parse_line("2", prefix + "[GroupId g][MemberId hwgk-YQ] Bumped streams group epoch to 4 with metadata "
                      "hash 5002176727333283369 and validated topic metadata. "
                      "(org.apache.kafka.coordinator.group.GroupMetadataManager)")
    fenced = parse_line("2", prefix + "[GroupId g] Streams member 3ueU-HQ fenced from the group because the member "
                        "session expired. (org.apache.kafka.coordinator.group.GroupMetadataManager)")
    consumer = parse_line("2", prefix + "[GroupId h] Member abc fenced from the group because its session expired. "
                          "(org.apache.kafka.coordinator.group.GroupMetadataManager)")
    assert bump is not None and (bump.event, bump.group_id, bump.generation) == ("epoch_bump", "g", 4)
    assert fenced is not None and (fenced.event, fenced.group_id, fenced.member) == ("fenced", "g", "3ueU-HQ")
    assert fenced.reason == "the member session expired"
    assert consumer is not None and (consumer.member, consumer.reason) == ("abc", "its session expired")


def test_docs_name_every_metric_and_table():
    doc = (Path(__file__).parents[2] / "docs" / "metrics.md").read_text()
    named = set(re.findall(r"`([a-z0-9_]+)`", doc))
    missing = [n for n in CATALOG if n not in named and not _covered_by_pattern(n, doc)]
    assert missing == []
    assert all(f"`{t}`" in doc for t in TABLES)


def _covered_by_pattern(name: str, doc: str) -> bool:
    # Latency phases are documented as one row: `e2e_latency_steady_p99_ms` / `..._bounce_..` (and `_p50_`, `_max_`).
    return name.startswith("e2e_latency") and "e2e_latency_steady_p99_ms" in doc


def _documented_metrics(doc: str) -> list[tuple[str, str]]:
    """(name, unit) of every row of the page's metric tables (header ``| name | unit | definition |``); a row naming
    several metrics gives each its unit (``count / ms``) or their one unit. Fragments like `_p50_` are no names."""
    out, in_table = [], False
    for line in doc.splitlines():
        if line.startswith("| name | unit | definition |"):
            in_table = True
        elif in_table and line.startswith("| "):
            names_cell, unit_cell = (c.strip() for c in line.strip("|").split("|")[:2])
            names = [n for n in re.findall(r"`([a-z0-9_]+)`", names_cell) if not n.startswith("_")]
            units = [u.strip() for u in unit_cell.split(" / ")]
            out += [(n, units[i] if len(units) == len(names) else unit_cell) for i, n in enumerate(names)]
        elif not line.startswith("|---"):
            in_table = False
    return out


def test_docs_name_no_metric_the_analysis_does_not_declare_and_give_each_its_declared_unit():
    documented = _documented_metrics((Path(__file__).parents[2] / "docs" / "metrics.md").read_text())
    assert len(documented) > 100  # the tables were found
    assert [n for n, _ in documented if n not in CATALOG] == []
    assert [(n, unit, CATALOG[n]) for n, unit in documented if n in CATALOG and CATALOG[n] != unit] == []


def test_every_metric_says_what_it_means_and_the_ones_compared_which_way_is_better():
    from testbed.analysis.catalog import METRICS
    from testbed.report.definitions import KEY_METRICS, STREAMS_KEY_METRICS

    assert [n for n, m in METRICS.items() if not m.meaning.strip()] == []
    assert all(METRICS[n].better is not None for n in {**KEY_METRICS, **STREAMS_KEY_METRICS})
    assert KEY_METRICS["throughput_mean_rps"] is True and KEY_METRICS["lost_records"] is False


FENCE = ("[2026-12-04 18:23:25,930] INFO [QuorumController id=1] Fencing broker 1 at epoch 11 because its session has "
         "timed out. (org.apache.kafka.controller.ReplicationControlManager)")  # Kafka 4.4.0, a paused broker's


def test_a_broker_fenced_by_its_controller_is_a_line_naming_no_group_and_a_note(tmp_path: Path):
    """What a single broker logs when its process or host stalled past its session timeout (docker pause, 12 s)."""
    parsed = parse_line("1", FENCE)
    assert parsed is not None and (parsed.event, parsed.fenced, parsed.group_id) == ("broker_fenced", 1, None)
    assert re.search(KEEP, FENCE)
    fence_ms = parsed.ts_ms
    assert broker_stalls([parsed, parsed], fence_ms - 1, fence_ms + 1) == [parsed]  # once, inside the window
    assert broker_stalls([parsed], fence_ms + 1, None) == []
    assert for_group([parsed], {"g"}, None, None) == []  # never a line of the group's table
    note = stall_note([parsed])
    assert note is not None and "1 time(s): broker 1 at 18:23:25.930 UTC" in note
    assert stall_note([]) is None
    # the runner's reading of a run's copied logs says the same
    (tmp_path / "broker-1.log").write_text(f"[2026-12-04 18:23:25,000] INFO unrelated\n{FENCE}\n")
    assert run_stalls_note(tmp_path, fence_ms - 1_000, fence_ms + 1_000) == note
    assert run_stalls_note(tmp_path, fence_ms + 1, fence_ms + 1_000) is None


@pytest.mark.parametrize("faults, explained", [
    ([("broker_kill", -9_000)], True),  # killed by a step, fenced as its session timed out: the step's doing
    ([("broker_kill", -40_000), ("broker_start", -30_000)], False),  # back 30 s before: a stall of its own
    ([("broker_pause", -12_000), ("broker_unpause", -100)], True),  # its frozen controller fenced it on resuming
    ([("broker_restart", -5_000)], True),
    ([("member_kill", -9_000)], False),
])
def test_a_fence_of_a_broker_the_runs_own_step_took_down_is_not_noted(tmp_path: Path, faults, explained):
    """Scenarios that kill or freeze a broker (coordinator-kill-cooperative, streams-eos-coordinator-kill) see
    the controller fence it: that is the step, not a stalled broker or host."""
    fence = parse_line("1", FENCE)
    assert fence is not None
    actions = [{"kind": kind, "target": "m0" if kind.startswith("member") else "broker-1", "ts_ms": fence.ts_ms + dt}
               for kind, dt in faults]
    assert broker_stalls([fence], None, None, actions) == ([] if explained else [fence])
    other = [{**a, "target": "broker-2"} for a in actions]  # another broker's fault explains nothing of broker 1
    assert broker_stalls([fence], None, None, other) == [fence]
    (tmp_path / "broker-1.log").write_text(FENCE + "\n")
    assert (run_stalls_note(tmp_path, fence.ts_ms - 1, fence.ts_ms + 1, actions) is None) == explained


def _slow(ts: str, took_ms: int, event: str = "writeNoOpRecord(1210214200)") -> str:
    return (f"[2026-12-04 {ts}] ERROR [QuorumController id=1] Exceptionally slow controller event {event} took "
            f"{took_ms} ms. (org.apache.kafka.controller.EventPerformanceMonitor)")  # Kafka 4.4.0, CI's starved broker


def test_a_controllers_slow_events_are_one_stall_of_its_node_and_a_note(tmp_path: Path):
    """What CI's starved brokers logged (2026-12-04): the events one stall held up end together, each having run
    for part of it; they are one stall from the earliest start, not five."""
    held = [_slow("21:12:52,828", 23394), _slow("21:12:52,828", 22217, "maybeFenceStaleBroker(1246343971)"),
            _slow("21:12:52,875", 13812), _slow("21:12:59,000", 2100)]
    lines = [parse_line("1", line) for line in held]
    assert all(ln is not None and ln.event == "controller_slow" and ln.group_id is None for ln in lines)
    assert [ln.took_ms for ln in lines] == [23394, 22217, 13812, 2100]
    assert all(re.search(KEEP, line) for line in held)
    stalls = broker_stalls(lines, None, None)
    assert len(stalls) == 4
    windows = controller_stalls(stalls)
    assert [(w.target, w.end_ms - w.start_ms) for w in windows] == [("1", 23441), ("1", 2100)]
    note = stall_note(stalls)
    assert note is not None and "stalled for 2 s or more 2 time(s), the longest 23.4 s (broker 1, until " in note
    assert "21:12:52.875 UTC" in note and "fenced" not in note
    fence = parse_line("1", FENCE)
    both = stall_note(broker_stalls([fence, *lines], None, None))
    assert both is not None and both.startswith("the controller fenced") and "; a controller's work stalled" in both
    (tmp_path / "broker-1.log").write_text("\n".join(held) + "\n")
    assert run_stalls_note(tmp_path, lines[0].ts_ms - 1, lines[-1].ts_ms + 1) == note


def test_a_controller_held_up_by_the_runs_own_pause_of_its_broker_is_not_noted():
    """A broker_pause step freezes the node's controller with it: the events that waited out the pause are the
    step's doing. Another broker's pause explains nothing of this one."""
    slow = parse_line("1", _slow("21:12:52,828", 12138))
    assert slow is not None
    pause = [{"kind": "broker_pause", "target": "broker-1", "ts_ms": slow.ts_ms - 12_200},
             {"kind": "broker_unpause", "target": "broker-1", "ts_ms": slow.ts_ms - 50}]
    assert broker_stalls([slow], None, None, pause) == []
    assert broker_stalls([slow], None, None, [{**a, "target": "broker-2"} for a in pause]) == [slow]
