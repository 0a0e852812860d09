"""analyse() on small hand-built histories with known answers (see tests/unit/histories/scenarios.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from histories import scenarios
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis import analyse
from testbed.checkers import Evidence, allowed_anomalies, load_evidence, run_checkers
from testbed import errors
from testbed.analysis.catalog import TABLES


@pytest.fixture(scope="module")
def analysed(tmp_path_factory, spark):  # noqa: F811
    cache: dict[str, tuple] = {}

    def get(name: str, **kw):
        key = name + repr(sorted(kw.items()))
        if key not in cache:
            root = scenarios.__dict__[name](tmp_path_factory.mktemp(name), **kw)
            cache[key] = (root, analyse(root, spark=spark))
        return cache[key]

    return get


def v(metrics, name):
    return metrics[name].value


def table(root, name) -> pd.DataFrame:
    return pd.read_parquet(root / "analysis" / "tables" / f"{name}.parquet")


def test_eager_rolling_bounce_counts_needless_revocations_and_stop_the_world(analysed):
    root, m = analysed("eager_rolling_bounce")
    assert v(m, "needless_revocations") == 4
    assert v(m, "revocations_live") == 6
    assert v(m, "revocations_shutdown") == 6
    assert v(m, "rebalance_episodes") == 2  # B joins, B leaves (the initial join is formation, A's exit teardown)
    # Each partition waits 3000 ms in each of the two bounce episodes: two single pauses of 3000 each.
    assert v(m, "max_partition_pause_ms") == 3000
    assert v(m, "max_partition_pause_total_ms") == 6000
    assert v(m, "partition_pauses") == 8
    assert v(m, "p50_partition_pause_ms") == 3000
    assert v(m, "max_rebalance_pause_ms") == 3000
    assert v(m, "stop_the_world_ms") == 6000
    assert v(m, "max_stop_the_world_ms") == 3000
    assert v(m, "max_member_pause_ms") == 1000
    assert v(m, "duplicate_ownership_ms") == 0
    assert v(m, "lost_records") == 0
    assert v(m, "duplicates_total") == 0
    assert v(m, "e2e_latency_max_ms") == 3000
    assert m.config.protocol == "eager"
    episodes = table(root, "rebalance_episodes")
    assert episodes["teardown"].tolist() == [False, False, False, True]
    assert episodes.loc[1, "trigger"] == "started:B"
    on_disk = json.loads((root / "analysis" / "metrics.json").read_text())
    assert on_disk["metrics"]["needless_revocations"] == {"value": 4, "unit": "partitions", "unknown": None}
    assert all((root / "analysis" / "tables" / f"{t}.parquet").exists() for t in TABLES)


def test_cooperative_join_pauses_only_moved_partitions(analysed):
    root, m = analysed("cooperative_join")
    pauses = table(root, "partition_pauses")
    pauses = pauses[pauses["kind"] == "pause"]
    assert sorted(pauses["partition"]) == [1, 3]
    assert pauses["pause_ms"].tolist() == [1000, 1000]
    assert set(pauses["cause"]) == {"rebalance"}
    assert v(m, "needless_revocations") == 0
    assert v(m, "revocations_live") == 2
    assert v(m, "stop_the_world_ms") == 0
    assert v(m, "max_partition_pause_ms") == 1000
    assert v(m, "p50_partition_pause_ms") == 1000
    assert v(m, "rebalance_episodes") == 1  # C's join, both cooperative rounds (the start is formation)
    episodes = table(root, "rebalance_episodes")
    assert episodes.loc[1, ["start_ms", "end_ms"]].tolist() == [10500, 11500]
    assert m.config.protocol == "cooperative"
    statuses = {c.checker: c.status for c in run_checkers(load_evidence(root))}
    # No member ever committed successfully here: what the commit invariants judge is unknown, never valid.
    assert statuses.pop("commits_ahead_of_processing") == "unknown"
    assert statuses.pop("redelivery_below_commit") == "unknown"
    # 5 of them not applicable: the 4 share-group checkers, and effects (this run read no store)
    assert set(statuses.values()) == {"valid"} and len(statuses) == 17
    effects = next(c for c in run_checkers(load_evidence(root)) if c.checker == "effects")
    assert effects.message.startswith("not applicable")


def test_paused_member_shows_duplicate_ownership_and_concurrent_duplicates(analysed):
    root, m = analysed("paused_zombie")
    assert v(m, "duplicate_ownership_ms") == 11000
    assert v(m, "duplicate_ownership_longest_ms") == 11000
    shared = table(root, "duplicate_ownership")
    assert shared[["partition", "start_ms", "end_ms", "members"]].values.tolist() == [[0, 15000, 26000, "A,B"]]
    assert v(m, "duplicates_concurrent") == 20
    assert v(m, "duplicates_redelivered") == 0
    assert v(m, "lost_records") == 0
    assert v(m, "partitions_lost") == 1
    # The real stall: A last processed p0 at 4000 and froze; records produced at 5000 waited until B's first
    # processing of p0 at 15500. Callback-based pauses saw none of it.
    frozen = table(root, "partition_pauses").query("kind == 'pause' and partition == 0")
    assert frozen[["start_ms", "end_ms", "pause_ms", "cause", "cause_target"]].values.tolist() == [
        [5000, 15500, 10500, "member_freeze", "A"]]
    assert v(m, "max_freeze_pause_ms") == 10500
    verdicts = {x.checker: x for x in run_checkers(load_evidence(root))}
    assert verdicts["concurrent_duplicates"].status == "valid"  # a pause fault allows them
    assert verdicts["expected_duplicate_ownership"].status == "valid"
    assert verdicts["duplicates_redelivered"].status == "valid"


def test_hard_kill_with_auto_commit_redelivers_without_concurrent_duplicates(analysed):
    root, m = analysed("hard_kill_auto_commit")
    assert v(m, "duplicates_redelivered") == 80
    # A died after processing 40-79 and before its next auto-commit: the death, not the auto-commit window, is the
    # cause (docs/metrics.md, "Causes of duplicate processing")
    assert v(m, "duplicates_died_before_commit") == 80 and v(m, "duplicates_auto_commit_window") == 0
    assert v(m, "duplicate_records") == 80
    assert v(m, "duplicates_concurrent") == 0
    assert v(m, "duplicate_ownership_ms") == 0
    assert v(m, "lost_records") == 0
    intervals = table(root, "ownership_intervals")
    a = intervals[intervals["member"] == "A"]
    assert set(a["end_reason"]) == {"killed"} and set(a["end_ms"]) == {9500}
    verdicts = {x.checker: x.status for x in run_checkers(load_evidence(root))}
    assert verdicts["duplicates_redelivered"] == "valid" and verdicts["concurrent_duplicates"] == "valid"


def test_one_acked_record_never_processed_is_lost(analysed):
    root, m = analysed("one_record_lost")  # its logs end with torn lines, which must be skipped
    assert v(m, "lost_records") == 1
    assert v(m, "records_acked") == 11
    assert v(m, "records_processed") == 10
    assert m.examples["lost_records"][0]["offset"] == 10
    verdicts = {x.checker: x for x in run_checkers(load_evidence(root))}
    assert verdicts["no_loss"].status == "invalid"
    assert verdicts["no_loss"].count == 1
    assert verdicts["no_loss"].examples[0]["offset"] == 10


def test_a_run_stopped_before_its_drain_does_not_call_its_unprocessed_records_lost(analysed):
    root, m = analysed("one_record_lost", drained=False)
    assert m["lost_records"].value is None
    assert "stopped before its final drain" in m["lost_records"].unknown
    assert "1 acknowledged records not processed" in m["lost_records"].unknown
    assert v(m, "records_acked") == 11
    verdicts = {x.checker: x for x in run_checkers(load_evidence(root))}
    assert verdicts["no_loss"].status == "unknown"


def test_acks_without_an_offset_are_counted_apart_and_left_out_of_lost(analysed):
    root, m = analysed("one_record_lost", unlocated=2)
    assert v(m, "acks_without_offset") == 2
    assert v(m, "lost_records") == 1 and v(m, "records_acked") == 11
    assert any("2 acks carry no offset" in note for note in m.notes)
    _, plain = analysed("one_record_lost")
    assert v(plain, "acks_without_offset") == 0


def test_records_the_producer_gave_up_on_are_counted_apart_from_lost_ones(analysed):
    root, m = analysed("one_record_lost", undelivered=3)
    assert v(m, "records_undelivered") == 3 and v(m, "lost_records") == 1
    note = next(n for n in m.notes if "gave up on" in n)
    assert "3 records (3 _MSG_TIMED_OUT)" in note and "from 6.0 s into the run to 6.2 s" in note
    _, none_failed = analysed("one_record_lost", undelivered=0)
    assert v(none_failed, "records_undelivered") == 0 and not any("gave up on" in n for n in none_failed.notes)
    _, no_load = analysed("one_record_lost")
    assert v(no_load, "records_undelivered") is None and "no load ran" in no_load["records_undelivered"].unknown


def test_without_ack_log_lost_records_is_unknown_not_zero(analysed):
    root, m = analysed("one_record_lost", acks=False)
    assert m["lost_records"].value is None
    assert "ack log" in m["lost_records"].unknown
    assert m["lag_max_records"].value is None
    assert m.latency_source == "batch_bounds"
    assert v(m, "e2e_latency_max_ms") == 50
    verdicts = {x.checker: x.status for x in run_checkers(load_evidence(root))}
    assert verdicts["no_loss"] == "unknown"


def test_missing_member_histories_is_a_clear_error(tmp_path, spark):  # noqa: F811
    with pytest.raises(FileNotFoundError, match="history/members"):
        analyse(tmp_path, spark=spark)


def test_member_histories_without_any_event_are_a_clear_error(tmp_path, spark):  # noqa: F811
    (tmp_path / "history" / "members").mkdir(parents=True)
    (tmp_path / "history" / "members" / "m0.jsonl").write_text('{"name": "started"}\n{"ts_ms": 5, "source": "m0"\n')
    (tmp_path / "history" / "harness.jsonl").write_text("")
    with pytest.raises(errors.TestbedError, match="hold no event with a name and a timestamp"):
        analyse(tmp_path, spark=spark)


def test_failed_commits_and_client_errors_are_counted_and_allow_redelivery(analysed):
    root, m = analysed("cooperative_join", failed_commit=True)
    assert v(m, "commit_failures") == 1
    assert v(m, "client_errors") == 1
    assert m.config.commit_failures == 1
    assert allowed_anomalies(m.config).duplicates_redelivered is True
    revs = table(root, "revocations")
    # A kept partition 0 after revoking 1 and stopped only at the end: a live member's revocation
    assert set(revs[revs["member"] == "A"]["category"]) == {"live"}
    assert v(m, "revocations_live") == 2 and v(m, "revocations_shutdown") == 0


def test_a_batch_the_handler_raised_on_is_counted_and_listed(analysed):
    root, m = analysed("cooperative_join", handler_error=True)
    assert v(m, "handler_errors") == 1 and v(m, "handler_error_records") == 7
    errors = table(root, "handler_errors")
    assert errors[["member", "ts_ms", "error_type", "records", "action"]].values.tolist() == [
        ["B", 13200, "sqlite3.OperationalError", 7, "skip"]]
    assert '"first_offset":130' in errors["ranges"][0]
    _, plain = analysed("cooperative_join")  # no member wrote one: nothing queried, nothing counted
    assert v(plain, "handler_errors") == 0 and v(plain, "handler_error_records") == 0
    assert v(plain, "commit_failures") == 0 and v(plain, "client_errors") == 0


def test_sigkill_after_stop_timeout_ends_ownership_at_the_exit(analysed):
    root, m = analysed("stop_timeout_kill")
    intervals = table(root, "ownership_intervals")
    a = intervals[intervals["member"] == "A"]
    assert a[["end_ms", "end_reason"]].values.tolist() == [[8000, "stop_timeout"]]
    assert v(m, "duplicate_ownership_ms") == 0
    assert v(m, "duplicates_concurrent") == 0
    # p0 waited from A's last processing at 5000 (records produced at 6000 came later) to B's at 10000.
    p0 = table(root, "partition_pauses").query("kind == 'pause' and partition == 0")
    assert p0[["start_ms", "end_ms", "cause", "cause_target"]].values.tolist() == [[6000, 10000, "member_death", "A"]]


def test_broker_restart_stall_is_a_pause_with_its_cause(analysed):
    root, m = analysed("broker_restart_stall")
    pauses = table(root, "partition_pauses").query("kind == 'pause'")
    assert pauses[["partition", "start_ms", "end_ms", "cause", "cause_target"]].values.tolist() == [
        [0, 5050, 7500, "broker_fault", "broker-1"]]
    assert v(m, "max_broker_fault_pause_ms") == 2450
    assert v(m, "max_partition_pause_ms") == 2450
    assert v(m, "stop_the_world_ms") == 0


def test_a_run_saved_before_the_host_sampler_has_its_host_unknown(analysed):
    root, m = analysed("broker_restart_stall")
    assert m["host_samples"].value is None and "no host samples" in m["host_samples"].unknown
    assert m["pauses_on_saturated_host"].value is None and m["max_host_saturated_pause_ms"].value is None
    assert table(root, "partition_pauses")["host_saturated"].isna().all()
    assert table(root, "host_samples").empty


def test_a_stall_on_a_saturated_host_is_the_hosts_and_the_samples_are_a_table(analysed):
    root, m = analysed("host_saturated_stall")
    pauses = table(root, "partition_pauses").query("kind == 'pause'")
    assert pauses[["partition", "start_ms", "end_ms", "cause", "host_saturated"]].values.tolist() == [
        [0, 5050, 7500, "host_saturated", True]]
    assert v(m, "max_host_saturated_pause_ms") == 2450 and v(m, "pauses_on_saturated_host") == 1
    assert v(m, "max_unexplained_pause_ms") == 0
    samples = table(root, "host_samples")
    assert len(samples) == 48 == v(m, "host_samples")  # the torn last line is dropped
    assert int(samples["saturated"].sum()) == 14 and set(samples["saturated_by"].dropna()) == {"cpu_busy"}
    assert v(m, "host_saturated_ms") == 3_500  # 4500-8000, inside the run's 0-12000
    assert v(m, "host_saturated_pct") == round(100 * 3_500 / 12_000, 1)
    assert any("host was saturated" in n for n in m.notes)


def test_open_pause_at_the_end_of_the_drain_is_kept_open(analysed):
    root, m = analysed("one_record_lost")
    pauses = table(root, "partition_pauses").query("kind == 'pause'")
    # offset 10 acked at 5000 (produced at 5000), never processed: open from 5000 to the drain's end at 8000.
    assert pauses[["start_ms", "end_ms", "pause_ms", "open"]].values.tolist() == [[5000, 8000, 3000, True]]
    assert v(m, "partition_pauses_open") == 1
    assert v(m, "max_partition_pause_ms") == 3000


def test_empty_ack_log_leaves_loss_unknown(analysed):
    _, m = analysed("ack_files", empty=True)
    assert m["lost_records"].value is None and "no complete acknowledgement" in m["lost_records"].unknown
    assert m["records_acked"].value is None


def test_missing_producer_ack_log_leaves_loss_unknown(analysed):
    _, m = analysed("ack_files", missing=True)
    assert m["lost_records"].value is None and "producer-1" in m["lost_records"].unknown


def test_torn_ack_line_is_dropped_not_read_with_a_cut_produce_time(analysed):
    _, m = analysed("ack_files", torn_produce_ts=True)
    assert v(m, "records_acked") == 10
    assert v(m, "lost_records") == 0


def test_a_wall_clock_step_is_noted(analysed):
    _, m = analysed("clock_step")
    assert any("member A: wall clock moved 5000 ms" in n for n in m.notes)
    _, steady = analysed("cooperative_join")
    assert not any("wall clock" in n for n in steady.notes)


def test_the_analysis_returns_what_it_wrote_so_the_checkers_judge_it_without_reading_it_back(tmp_path, spark):  # noqa: F811
    from testbed.analysis import analyse_run

    root = scenarios.cooperative_join(tmp_path / "run")
    analysis = analyse_run(root, spark=spark)
    on_disk = load_evidence(root)
    assert analysis.metrics == on_disk.metrics
    assert sorted(analysis.tables) == sorted(on_disk.tables) == sorted(TABLES)
    for name, frame in analysis.tables.items():
        pd.testing.assert_frame_equal(frame, on_disk.tables[name], obj=name)
    assert run_checkers(Evidence(analysis.metrics, analysis.tables)) == run_checkers(on_disk)


def test_a_member_on_a_node_whose_clock_runs_ahead_is_put_on_the_harness_clock(analysed):
    _, here = analysed("cooperative_join")
    root, ahead = analysed("cooperative_join", c_ahead_ms=3000)
    assert {k: m.value for k, m in ahead.metrics.items()} == {k: m.value for k, m in here.metrics.items()}
    assert v(ahead, "max_partition_pause_ms") == 1000
    pauses = table(root, "partition_pauses")
    assert sorted(pauses[pauses["kind"] == "pause"]["pause_ms"]) == [1000, 1000]
    (note,) = [n for n in ahead.notes if "Ray cluster" in n]
    assert "at most 3000.1 ms" in note and "within 0.7 ms" in note  # 0.4 measured, start and end 0.25 from their mean
    assert not any("Ray cluster" in n for n in here.notes)
    assert not pauses["within_clock_uncertainty"].any()  # 1000 ms pauses, clocks known within 0.7 ms
    assert any(n.startswith("0 pause(s) and 0 duplicate ownership span(s) are shorter") for n in ahead.notes)


def test_a_pause_shorter_than_the_clocks_uncertainty_is_marked(analysed):
    root, _ = analysed("cooperative_join", c_ahead_ms=3000, c_uncertainty_ms=1500)
    pauses = table(root, "partition_pauses")
    real = pauses[pauses["kind"] == "pause"]
    # A (this machine's clock) last processed partitions 1 and 3, C (a node known within 1500.5 ms) next
    assert list(real["resumed_member"]) == ["C", "C"] and real["within_clock_uncertainty"].all()
    assert not table(root, "duplicate_ownership")["within_clock_uncertainty"].any()  # on one clock: none
