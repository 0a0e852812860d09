"""The run report's answer: figures from metrics.json in sentences, the longest pause's cause from its table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_fixtures import materialise

from testbed.report import render_run
from testbed.report.headline import duration, headlines
from testbed.report.inputs import load_run


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    return materialise(tmp_path)


def _set_metric(run_dir: Path, name: str, value: float | None, unknown: str | None = None) -> None:
    path = run_dir / "analysis/metrics.json"
    data = json.loads(path.read_text())
    data["metrics"][name] = {"value": value, "unit": "ms", **({"unknown": unknown} if unknown else {})}
    path.write_text(json.dumps(data))


def _said(run_dir: Path) -> dict[str, str]:
    return {h.key: h.sentence for h in headlines(load_run(run_dir))}


def test_sentences_carry_the_metrics_figures_and_the_longest_pauses_cause(run_dir: Path) -> None:
    said = _said(run_dir)
    # max_partition_pause_ms is 11400: the partition_pauses row of that length is t-5's freeze of m3 at 35 s
    assert said["headline-longest-pause"] == ("The longest partition pause was 11.4 s, on t-5 from 35.0 s, caused by "
                                              "a frozen member (m3: stopped by SIGSTOP or its poll loop stalled).")
    assert said["headline-stop-the-world"].startswith("The group never stopped as a whole")
    assert said["headline-duplicates"].startswith("20 processing(s) repeated a record: 20 concurrent")
    assert "0 re-delivered" in said["headline-duplicates"] and "8.4 s in total, in 2 episode(s)" in said["headline-duplicates"]
    assert said["headline-lost"] == ("No record was lost: every one of the 6,000 acknowledged was processed by the end "
                                     "of the final drain.")
    assert said["headline-revocations"].startswith("6 partition(s) were taken from members that stayed alive, over 4 "
                                                   "rebalance episode(s); 1 of them needless")


def test_unknown_figures_are_said_unknown_with_their_reason_never_zero(run_dir: Path) -> None:
    _set_metric(run_dir, "lost_records", None, "no ack log")
    _set_metric(run_dir, "duplicates_redelivered", None, "no ack log")
    _set_metric(run_dir, "max_partition_pause_ms", None, "no processed batch")
    cards = {h.key: h for h in headlines(load_run(run_dir))}
    assert cards["headline-lost"].figure == "unknown" and cards["headline-lost"].tone == "unknown"
    assert cards["headline-lost"].sentence == "Lost records are unknown: no ack log."
    assert "0 re-delivered" not in cards["headline-duplicates"].sentence
    assert "unknown (no ack log) re-delivered" in cards["headline-duplicates"].sentence
    assert cards["headline-longest-pause"].sentence == "The longest partition pause is unknown: no processed batch."


def test_a_figure_absent_from_metrics_json_is_unknown(run_dir: Path) -> None:
    path = run_dir / "analysis/metrics.json"
    data = json.loads(path.read_text())
    del data["metrics"]["stop_the_world_ms"]
    path.write_text(json.dumps(data))
    assert _said(run_dir)["headline-stop-the-world"] == ("Stop-the-world is unknown: stop_the_world_ms is not in "
                                                         "metrics.json (an older analysis).")


def test_the_cause_is_unknown_when_no_pause_of_that_length_is_in_the_table(run_dir: Path) -> None:
    _set_metric(run_dir, "max_partition_pause_ms", 12000)  # the report does not look for a nearest pause
    assert _said(run_dir)["headline-longest-pause"] == ("The longest partition pause was 12.0 s; its cause is unknown "
                                                        "(no pause of that length in the partition_pauses table).")
    (run_dir / "analysis/tables/partition_pauses.parquet").unlink()
    assert "its cause is unknown (no analysis/tables/partition_pauses.parquet" in _said(run_dir)["headline-longest-pause"]


def test_stop_the_world_gives_its_total_and_longest_span(run_dir: Path) -> None:
    _set_metric(run_dir, "stop_the_world_ms", 4500)
    _set_metric(run_dir, "max_stop_the_world_ms", 3000)
    assert _said(run_dir)["headline-stop-the-world"] == ("The whole group stopped (no partition processed while records "
                                                         "waited) for 4.5 s in total, the longest span 3.0 s.")


def test_the_report_opens_with_the_answer_and_keeps_the_metrics_table_collapsed(run_dir: Path) -> None:
    html = render_run(run_dir).read_text()
    body = html[html.index("<body>"):]
    order = [body.index(marker) for marker in ('id="verdict"', 'id="answer"', 'id="ownership"', 'id="pauses"',
                                               'id="over-time"', '<details id="metrics">')]
    assert order == sorted(order), "verdict, answer, charts, then the metrics table"
    assert "<details id=\"metrics\" open" not in body
    answer = body[body.index('id="answer"'):body.index("</section>")]
    cards = re.findall(r'<a class="headline-card tone-(\w+) must-see" id="([\w-]+)" href="(#[\w-]+)">', answer)
    assert [c[1] for c in cards] == ["headline-longest-pause", "headline-stop-the-world", "headline-duplicates",
                                     "headline-lost", "headline-revocations"]
    assert dict((c[1], c[0]) for c in cards)["headline-duplicates"] == "bad"  # its expectation failed
    for _, _, link in cards:  # every link lands on something on the page
        assert f'id="{link[1:]}"' in body


def test_duration_wording() -> None:
    assert duration(400) == "400 ms" and duration(11400) == "11.4 s" and duration(125_000) == "125.0 s"


def _rewrite_table(run_dir: Path, name: str, edit, *, schema: bool = True) -> None:
    """``schema=False``: written as the frame is, as an older analysis left it (without today's columns)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from testbed.analysis.outputs import to_table

    path = run_dir / f"analysis/tables/{name}.parquet"
    frame = edit(pq.read_table(path).to_pandas())
    pq.write_table(to_table(name, frame) if schema else pa.Table.from_pandas(frame), path)


def test_the_longest_pause_says_every_cause_the_bounce_first_then_the_slowed_broker(run_dir: Path) -> None:
    """The issue's case: m2 bounced while broker-1 had added latency; a reader sees both, the bounce first."""
    def stop_with_latency(frame):
        longest = frame["pause_ms"] == 11400
        frame.loc[longest, ["cause", "cause_target", "contributing"]] = ["member_stop", "m2", "broker_fault:broker-1, rebalance:3"]
        return frame

    def latency(frame):
        import pandas as pd
        return pd.concat([frame, pd.DataFrame([
            {"ts_ms": 1763800010000, "kind": "broker_latency", "target": "broker-1", "detail": "{}"},
            {"ts_ms": 1763800055000, "kind": "broker_latency_end", "target": "broker-1", "detail": "{}"}])])

    _rewrite_table(run_dir, "partition_pauses", stop_with_latency)
    _rewrite_table(run_dir, "harness_actions", latency)
    assert _said(run_dir)["headline-longest-pause"] == (
        "The longest partition pause was 11.4 s, on t-5 from 35.0 s, caused by the bounce of m2 (the partition waited "
        "for the rebalance its leaving started), while broker-1 was slowed, during rebalance episode 3.")
    # A static member's bounce: no rebalance follows, the partition waits for the replacement.
    _rewrite_table(run_dir, "partition_pauses", lambda f: f.assign(contributing=f["contributing"].where(
        f["pause_ms"] != 11400, "broker_fault:broker-1")))
    assert "caused by the bounce of m2 (the partition waited for its replacement), while broker-1 was slowed." \
        in _said(run_dir)["headline-longest-pause"]
    # Two overlapping episodes read as one clause; a broker named by its id alone reads "broker 2".
    _rewrite_table(run_dir, "partition_pauses", lambda f: f.assign(contributing=f["contributing"].where(
        f["pause_ms"] != 11400, "broker_fault:2, rebalance:3, rebalance:4")))
    assert _said(run_dir)["headline-longest-pause"].endswith(
        "while broker 2 had a fault, during rebalance episodes 3, 4.")


def test_a_stop_outside_a_bounce_reads_as_a_clean_stop_and_an_older_table_has_no_contributing_column(run_dir: Path) -> None:
    def stop_of_m3(frame):
        frame.loc[frame["pause_ms"] == 11400, ["cause", "cause_target"]] = ["member_stop", "m3"]
        return frame.drop(columns=["contributing"])

    _rewrite_table(run_dir, "partition_pauses", stop_of_m3, schema=False)
    assert _said(run_dir)["headline-longest-pause"].endswith(
        "caused by the clean stop of m3 (the partition waited for its next owner).")


def test_the_streams_card_splits_the_longest_running_moves_pause_and_the_task_timeline_draws_it(run_dir: Path) -> None:
    import pandas as pd

    from testbed.report.streams_charts import task_timeline

    for name, value in (("streams_restorations", 1), ("streams_task_moves", 1), ("streams_task_pause_max_ms", 4000),
                        ("streams_standby_promotions", 1)):
        _set_metric(run_dir, name, value)
    tables = run_dir / "analysis/tables"
    base = {"topic": "t", "partition": 3, "held_as": "standby", "last_old_ms": 1_000, "assigned_ms": 3_000,
            "first_new_ms": 5_000, "pause_ms": 4_000, "restored_records": 9}
    pd.DataFrame([  # a formation move of the same length is not the one the figure counts
        {**base, "phase": "formation", "task": "0_1", "from_member": "m9", "to_member": "m8", "restored_ms": 3_000,
         "assignment_wait_ms": 2_000, "restoration_ms": 0, "resumption_ms": 2_000},
        {**base, "phase": "running", "task": "0_3", "from_member": "m1", "to_member": "m2", "restored_ms": 4_500,
         "assignment_wait_ms": 2_000, "restoration_ms": 1_500, "resumption_ms": 500}]).to_parquet(
        tables / "streams_task_moves.parquet")
    pd.DataFrame([{"member": "m1", "task": "0_3", "role": "active", "start_ms": 0, "end_ms": 1_100},
                  {"member": "m2", "task": "0_3", "role": "standby", "start_ms": 0, "end_ms": 3_000},
                  {"member": "m2", "task": "0_3", "role": "active", "start_ms": 4_600, "end_ms": 9_000}]).to_parquet(
        tables / "streams_task_spans.parquet")
    pd.DataFrame([{"member": "m2", "partition": 3, "start_ms": 3_100, "duration_ms": 1_400, "records": 9}]).to_parquet(
        tables / "streams_restorations.parquet")
    said = _said(run_dir)
    assert said["headline-streams-tasks"] == (
        "The longest pause of a moved task was 4.0 s (task 0_3, m1 to m2): 2.0 s waiting for its assignment, "
        "1.5 s restoring its store, 500 ms to its first record. 1 task(s) moved, 1 to an instance that held a standby.")
    fig = task_timeline(load_run(run_dir))
    names = [trace.name for trace in fig.data]
    assert names[0] == "waiting for its assignment" and "restoring its store" in names
    assert {"m1 active", "m2 active", "m2 standby"} <= set(names)


def test_a_task_that_stayed_on_its_instance_gives_the_task_pause_and_an_unfinished_restoration_is_named(
        run_dir: Path) -> None:
    """Issue 42's run: tasks lost and handed back to the same instance (no move), one restoration that never
    finished; the task card must not say "none" beside the partition pause it explains."""
    import pandas as pd

    path = run_dir / "analysis/metrics.json"
    data = json.loads(path.read_text())
    data["config"]["members"]["m3"]["streams"] = {"topology": "stateful", "processing_guarantee": "exactly_once_v2"}
    path.write_text(json.dumps(data))
    for name, value in (("streams_restorations", 2), ("streams_task_moves", 0), ("streams_restorations_unfinished", 1),
                        ("streams_standby_promotions", 0)):
        _set_metric(run_dir, name, value)
    _set_metric(run_dir, "streams_task_pause_max_ms", None, "no moved task was processed by both its old and its new owner")
    pd.DataFrame([{"member": "m3", "store": "counts", "changelog": "app-counts-changelog", "partition": 5,
                   "start_ms": 1763800036000, "end_ms": 1763800059000, "duration_ms": 23_000, "from_offset": 0,
                   "to_offset": 1183, "restored_to_offset": 1006, "last_stable_offset": 1006, "records": 1000,
                   "ended": "suspended",
                   "unfinished": True}]).to_parquet(run_dir / "analysis/tables/streams_restorations.parquet")
    cards = {h.key: h for h in headlines(load_run(run_dir))}
    tasks, restoration = cards["headline-streams-tasks"], cards["headline-streams"]
    assert tasks.figure == "11.4 s" and tasks.sentence.startswith(
        "The longest pause of a task was 11.4 s, of one that stayed on its instance, on t-5 from 35.0 s, caused by a "
        "frozen member (m3")
    assert tasks.sentence.endswith("No task moved to another instance while the application ran.")
    assert restoration.figure == "unfinished" and restoration.tone == "bad"
    assert restoration.sentence.startswith(
        "1 store partition(s) never finished restoring: the longest, store counts from app-counts-changelog-5 on m3, "
        "began at 36.0 s and restored up to offset 1,006 of the end offset 1,183 its changelog had when it began, "
        "against a last stable offset of 1,006 (a restoration reads committed records only: an open transaction "
        "held it back); its task was closed before it finished (suspended) 23.0 s later, and its task processed "
        "nothing meanwhile.")


def test_lost_partitions_are_said_beside_the_revocations_and_an_unjudged_needless_count_says_why(run_dir: Path) -> None:
    _set_metric(run_dir, "partitions_lost", 3)
    path = run_dir / "result.json"
    result = json.loads(path.read_text())
    result["checks"] = result.get("checks", []) + [
        {"checker": "needless_revocations", "status": "unknown", "message": "m", "count": 1, "examples": []}]
    path.write_text(json.dumps(result))
    said = _said(run_dir)["headline-revocations"]
    assert "1 of them needless (revoked and given back to the same member in one episode), or a fenced member's " \
           "partitions handed back at its rejoin: the history cannot tell which" in said
    assert said.endswith("3 partition(s) were lost (taken without a revoke: their member was fenced or its session "
                         "expired), their uncommitted work re-done by the next owner.")


def test_a_restoration_that_never_began_is_named_as_such(run_dir: Path) -> None:
    import pandas as pd

    path = run_dir / "analysis/metrics.json"
    data = json.loads(path.read_text())
    data["config"]["members"]["m3"]["streams"] = {"topology": "stateful"}
    path.write_text(json.dumps(data))
    _set_metric(run_dir, "streams_restorations_unfinished", 1)
    _set_metric(run_dir, "streams_restorations", 0)
    pd.DataFrame([{"member": "m3", "store": "counts", "changelog": "app-counts-changelog", "partition": 3,
                   "start_ms": 1763800037800, "end_ms": 1763800059000, "duration_ms": 21_200, "from_offset": None,
                   "to_offset": None, "restored_to_offset": None, "last_stable_offset": None, "records": 0,
                   "ended": "not_started", "unfinished": True}]).to_parquet(
        run_dir / "analysis/tables/streams_restorations.parquet")
    card = {h.key: h for h in headlines(load_run(run_dir))}["headline-streams"]
    assert card.tone == "bad" and card.sentence.startswith(
        "1 store partition(s) never finished restoring: the longest, store counts from app-counts-changelog-3 on m3, "
        "never began (assigned at 37.8 s and held 21.2 s without a restoration start: Streams reads its changelogs' "
        "end offsets before it restores, and could not, for example with the partition's only replica down); its "
        "task processed nothing meanwhile.")


def test_the_revocations_of_the_groups_formation_are_said_apart_from_its_episodes(run_dir: Path) -> None:
    import pandas as pd

    path = run_dir / "analysis/tables/rebalance_episodes.parquet"
    episodes = pd.read_parquet(path)
    assert "formation" in episodes and "and the group's formation" not in _said(run_dir)["headline-revocations"]
    forming = episodes.iloc[[0]].copy()
    forming[["formation", "revocations_live", "needless_revocations"]] = [True, 8, 3]
    pd.concat([forming, episodes]).to_parquet(path)
    assert " and the group's formation (8 of them, 3 needless, as its members joined one after another);" in \
        _said(run_dir)["headline-revocations"]
