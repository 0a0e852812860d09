"""Known-answer histories for the Kafka Streams task spans and moves: each move's pause split into the assignment
wait, the restoration and the resumption; standby and warm-up promotions; formation moves kept out of the figures."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.streams.measures import CATALOGUE, StreamsFound
from testbed.analysis.streams.tasks import (Copies, EpisodeSpan, TasksEvent, task_moves, task_of_partitions,
                                                  task_partition, task_spans, warmups)
from testbed.analysis.intervals import OwnershipInterval
from testbed.analysis.view.lives import MemberLife

T = "orders"


def _tasks(member: str, ts: int, active: tuple[str, ...] = (), standby: tuple[str, ...] = ()) -> TasksEvent:
    def of(tasks: tuple[str, ...]) -> dict[str, frozenset[tuple[str, int]]]:
        return {t: frozenset({(T, task_partition(t))}) for t in tasks}

    return TasksEvent(member, ts, of(active), of(standby))


EVENTS = [_tasks("a", 0, active=("0_0", "0_2")), _tasks("c", 0, active=("0_1",)), _tasks("d", 0, standby=("0_1",)),
          _tasks("c", 20, active=("0_1", "0_2")), _tasks("b", 100, standby=("0_0",)), _tasks("b", 1100),
          _tasks("b", 1200, standby=("0_1",)), _tasks("b", 1250, active=("0_0",), standby=("0_1",)),
          _tasks("c", 2000, active=("0_2",)), _tasks("b", 2050, active=("0_0", "0_1"))]
LIVES = {"a": MemberLife("a", 1000, "killed"), **{m: MemberLife(m, 3000, "stopped") for m in "bcd"}}
INTERVALS = [OwnershipInterval(T, 0, "a", 0, 1000, "killed"), OwnershipInterval(T, 0, "b", 1050, 3000, "stopped"),
             OwnershipInterval(T, 1, "c", 0, 2000, "revoked"), OwnershipInterval(T, 1, "b", 2000, 3000, "stopped"),
             OwnershipInterval(T, 2, "a", 0, 10, "revoked"), OwnershipInterval(T, 2, "c", 10, 3000, "stopped")]
PROCESSED = {("a", (T, 0)): [500, 900], ("b", (T, 0)): [1300, 1400], ("c", (T, 1)): [100, 1990],
             ("b", (T, 1)): [2100], ("c", (T, 2)): [50]}
RESTORED = pd.DataFrame([{"member": "b", "partition": 0, "start_ms": 1100, "end_ms": 1200, "records": 50, "ended": "end"},
                         {"member": "c", "partition": 0, "start_ms": 5, "end_ms": 8, "records": 9, "ended": "end"},  # not b's
                         # never ended (b's life ended at 1250): no restoration finished there
                         {"member": "b", "partition": 0, "start_ms": 1210, "end_ms": 1250, "records": 0, "ended": "never"}])
EPISODES = [EpisodeSpan(0, 0, 20, "formation"), EpisodeSpan(1, 1000, 1400, "running"),
            EpisodeSpan(2, 1990, 2200, "running")]


def _moves(copies: Copies) -> pd.DataFrame:
    spans = task_spans(EVENTS, LIVES)
    return task_moves(INTERVALS, PROCESSED, spans, RESTORED, copies, task_of_partitions(EVENTS), EPISODES)


def test_spans_run_from_the_first_listing_to_the_first_without_or_the_life_end() -> None:
    spans = task_spans(EVENTS, LIVES)
    rows = {(r.member, r.task, r.role): (r.start_ms, r.end_ms) for r in spans.itertuples()}
    assert rows[("a", "0_0", "active")] == (0, 1000)  # killed at 1000
    assert rows[("b", "0_0", "standby")] == (100, 1100)
    assert rows[("b", "0_1", "standby")] == (1200, 2050)
    assert rows[("b", "0_0", "active")] == (1250, 3000)
    assert rows[("c", "0_1", "active")] == (0, 2000)
    assert len(rows) == len(spans)


def test_each_move_splits_its_pause_into_wait_restoration_and_resumption() -> None:
    moves = _moves(Copies(replicas=1, warmups=True)).set_index("task")
    p0 = moves.loc["0_0"]
    assert (p0.from_member, p0.to_member, p0.phase, p0.episode_id) == ("a", "b", "running", 1)
    assert (p0.last_old_ms, p0.assigned_ms, p0.restored_ms, p0.first_new_ms) == (900, 1050, 1200, 1300)
    assert (p0.assignment_wait_ms, p0.restoration_ms, p0.resumption_ms, p0.pause_ms) == (150, 150, 100, 400)
    assert (p0.restored_records, p0.held_as) == (50, "standby")
    p1 = moves.loc["0_1"]
    assert (p1.assignment_wait_ms, p1.restoration_ms, p1.resumption_ms, p1.pause_ms) == (10, 0, 100, 110)
    # b's copy of 0_1 came while d held the one configured standby: a warm-up, promoted
    assert (p1.restored_records, p1.held_as) == (0, "warm-up")
    p2 = moves.loc["0_2"]  # the formation's move: the old owner never processed, so no wait and no pause
    assert p2.phase == "formation" and pd.isna(p2.assignment_wait_ms) and pd.isna(p2.pause_ms)


def test_warmups_are_standbys_beyond_the_configured_copies_and_only_where_the_protocol_places_them() -> None:
    spans = task_spans(EVENTS, LIVES)
    assert warmups(spans, Copies(replicas=1, warmups=True)) == 1
    assert warmups(spans, Copies(replicas=0, warmups=True)) == 3  # with none configured, every standby is one
    assert warmups(spans, Copies(replicas=1, warmups=False)) is None
    assert set(_moves(Copies(replicas=1, warmups=False))["held_as"]) == {"standby", "none"}


def test_the_figures_count_the_running_applications_moves() -> None:
    spans = task_spans(EVENTS, LIVES)
    found = StreamsFound(4, pd.DataFrame(columns=["records", "duration_ms", "ended", "unfinished"]), 0, spans=spans,
                         moves=_moves(Copies(replicas=1, warmups=True)), warmups=1)
    got = {k: v.value for k, v in CATALOGUE.measure(found).items() if k.startswith(("streams_task", "streams_standby",
                                                                                      "streams_warmups"))}
    assert got == {"streams_task_moves": 2, "streams_task_pause_max_ms": 400, "streams_task_assignment_wait_max_ms": 150,
                   "streams_task_restoration_max_ms": 150, "streams_standby_promotions": 2, "streams_warmups": 1}
    protocol = CATALOGUE.measure(StreamsFound(4, found.restorations, 0, spans=spans, moves=found.moves, warmups=None))
    assert protocol["streams_warmups"].value is None and "no warm-up" in protocol["streams_warmups"].unknown
