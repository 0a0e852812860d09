"""Share-group (KIP-932) measures, anomalies and their unknowns on hand-built histories whose answers are worked
out in tests/unit/histories/share_scenarios.py; and the consumer-group analysis beside share members."""

from __future__ import annotations

import pandas as pd
import pytest

from histories import scenarios, share_scenarios
from histories.spark_fixture import spark  # noqa: F401 - the session-scoped fixture
from testbed.analysis import analyse
from testbed.analysis.group.consumer_group import ABSENT as NOT_CONSUMER
from testbed.analysis.share.measures import CATALOGUE as SHARE_CATALOGUE
from testbed.analysis.share.measures import NO_SHARE
from testbed.checkers import allowed_anomalies, load_evidence, run_checkers
from testbed.history.events import Action


@pytest.fixture(scope="module")
def analysed(tmp_path_factory, spark):  # noqa: F811
    cache: dict[str, tuple] = {}

    def get(module, name: str, **kw):
        key = name + repr(sorted(kw.items()))
        if key not in cache:
            root = module.__dict__[name](tmp_path_factory.mktemp(name), **kw)
            cache[key] = (root, analyse(root, spark=spark))
        return cache[key]

    return get


def values(m, prefix: str = "share_") -> dict:
    return {n: v.value for n, v in m.metrics.items() if n.startswith(prefix)}


def table(root, name) -> pd.DataFrame:
    return pd.read_parquet(root / "analysis" / "tables" / f"{name}.parquet")


def test_share_faults_every_measure(analysed):
    _, m = analysed(share_scenarios, "share_faults")
    assert values(m) == {
        "share_members": 5, "share_members_acquiring": 5, "share_acquisitions": 21, "share_records_acquired": 14,
        "share_redeliveries": 7, "share_redeliveries_released": 1, "share_redeliveries_lock_expired": 1,
        "share_redeliveries_member_frozen": 1, "share_redeliveries_member_left": 1,
        "share_redeliveries_member_killed": 1, "share_redeliveries_unjudged": 0,
        "share_concurrent_acquisitions": 1, "share_redelivered_after_completion": 1,
        "share_redelivery_latency_p50_ms": 30_350.0, "share_redelivery_latency_max_ms": 30_500,
        "share_redelivery_after_fault_max_ms": 30_000, "share_delivery_count_max": 3,
        "share_late_acks_accepted": 1, "share_late_acks_noop": 0, "share_late_acks_rejected": 1,
        "share_ack_failures": 1,
        "share_acks_without_acquisition": 0, "share_records_accepted": 11, "share_records_archived": 2,
        "share_records_acked": 15, "share_records_lost": 2, "share_records_unanswered": 0,
        "share_records_completed_unanswered": 0,
        "share_throughput_rps": round(11 / ((36_010 - 1000) / 1000), 3), "share_client_errors": 0,
    }


def test_share_faults_reasons_per_delivery(analysed):
    root, _ = analysed(share_scenarios, "share_faults")
    d = table(root, "share_deliveries").sort_values(["offset", "delivery"])
    again = d[d["delivery"] > 1].set_index("offset")
    assert again["reason"].to_dict() == {4: "after_completion", 5: "released", 6: "member_killed",
                                         7: "member_frozen", 8: "concurrent", 13: "lock_expired", 14: "member_left"}
    assert again.loc[8, "lock_left_ms"] == 24_000 and again.loc[8, "previous_member"] == "A"
    assert again.loc[6, "fault_ms"] == 2000 and again.loc[6, "since_previous_ms"] == 30_200
    assert again.loc[7, "fault_ms"] == 3500 and again.loc[14, "fault_ms"] == 21_000
    first_of_7 = d[(d["offset"] == 7) & (d["delivery"] == 1)].iloc[0]
    assert (first_of_7["ack_error"], bool(first_of_7["late_ack"]), first_of_7["lock_expires_ms"]) == (
        "INVALID_RECORD_STATE", True, 33_000)
    assert len(d) == 21 and set(d[d["delivery"] == 1]["reason"]) == {"first"}


def test_share_delivery_count_histogram_and_timeline(analysed):
    root, _ = analysed(share_scenarios, "share_faults")
    counts = table(root, "share_delivery_counts").set_index("delivery_count")
    assert counts.to_dict("index") == {1: {"records": 7, "acquisitions": 14, "records_by_deliveries": 7},
                                       2: {"records": 6, "acquisitions": 6, "records_by_deliveries": 7},
                                       3: {"records": 1, "acquisitions": 1, "records_by_deliveries": 0}}
    timeline = table(root, "share_timeline")
    assert timeline["acquisitions"].sum() == 21
    assert timeline[timeline["reason"] == "concurrent"][["second", "member"]].values.tolist() == [[10, "D"]]


def test_share_anomaly_examples_and_checkers(analysed):
    root, m = analysed(share_scenarios, "share_faults")
    assert [(e["offset"], e["member"]) for e in m.examples["share_concurrent_acquisitions"]] == [(8, "D")]
    assert [(e["offset"], e["sent_ms"]) for e in m.examples["share_late_acks_accepted"]] == [(9, 36_000)]
    assert [(e["offset"], e["acquired"]) for e in m.examples["share_lost_records"]] == [(10, False), (13, True)]
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    for name in ("share_concurrent_acquisitions", "share_late_acks", "share_redelivery_after_completion",
                 "share_no_loss"):
        assert verdicts[name].status == "invalid", verdicts[name]
    assert verdicts["share_no_loss"].count == 2
    # the consumer-group checkers have no member to judge
    assert verdicts["no_loss"].status == "valid" and "not applicable" in verdicts["no_loss"].message
    # a broker fault can move a share-partition's leader, which knows nothing of the old one's locks
    config = m.config.model_copy(update={"faults": [Action.BROKER_KILL]})
    assert allowed_anomalies(config).share_concurrent_acquisitions is True
    assert allowed_anomalies(m.config).share_concurrent_acquisitions is False


def test_share_late_acks_noop_after_completion_and_anomalies(analysed):
    """A late ack the broker took after a later delivery's accept or reject (answered no later, a race at equal
    answers included) is a no-op, allowed; one taken while no later delivery had completed the record is the
    anomaly; a late success never makes a record rejected by its completing delivery accepted."""
    root, m = analysed(share_scenarios, "share_late_acks")
    got = values(m)
    assert {n: got[n] for n in ("share_late_acks_accepted", "share_late_acks_noop", "share_late_acks_rejected",
                                "share_ack_failures")} == {
        "share_late_acks_accepted": 2, "share_late_acks_noop": 3, "share_late_acks_rejected": 1,
        "share_ack_failures": 1}
    assert {n: got[n] for n in ("share_acquisitions", "share_records_acquired", "share_redeliveries",
                                "share_redeliveries_member_frozen", "share_redelivered_after_completion",
                                "share_concurrent_acquisitions", "share_records_accepted", "share_records_archived",
                                "share_records_acked", "share_records_lost", "share_throughput_rps")} == {
        "share_acquisitions": 11, "share_records_acquired": 6, "share_redeliveries": 5,
        "share_redeliveries_member_frozen": 5, "share_redelivered_after_completion": 0,
        "share_concurrent_acquisitions": 0, "share_records_accepted": 5, "share_records_archived": 1,
        "share_records_acked": 6, "share_records_lost": 0, "share_throughput_rps": round(5 / 12.02, 3)}
    assert [(e["offset"], e["member"], e["ack_ms"]) for e in m.examples["share_late_acks_accepted"]] == [
        (4, "A", 13_010), (5, "A", 13_010)]
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    assert (verdicts["share_late_acks"].status, verdicts["share_late_acks"].count) == ("invalid", 2)
    assert verdicts["share_no_loss"].status == "valid"


def test_share_late_acks_only_noops_are_allowed(analysed):
    root, m = analysed(share_scenarios, "share_late_acks", anomalies=False)
    got = values(m)
    assert {n: got[n] for n in ("share_late_acks_accepted", "share_late_acks_noop", "share_late_acks_rejected",
                                "share_acquisitions", "share_records_accepted", "share_records_archived",
                                "share_records_lost", "share_throughput_rps")} == {
        "share_late_acks_accepted": 0, "share_late_acks_noop": 3, "share_late_acks_rejected": 1,
        "share_acquisitions": 8, "share_records_accepted": 3, "share_records_archived": 1, "share_records_lost": 0,
        "share_throughput_rps": round(3 / 12.01, 3)}
    assert m.examples["share_late_acks_accepted"] == []
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    assert (verdicts["share_late_acks"].status, verdicts["share_late_acks"].count) == ("valid", 0)


def test_share_only_run_leaves_consumer_group_figures_unknown(analysed):
    _, m = analysed(share_scenarios, "share_faults")
    for name in ("lost_records", "records_processed", "rebalance_episodes", "max_partition_pause_ms",
                 "member_closes", "throughput_mean_rps"):
        assert m[name].value is None and m[name].unknown == NOT_CONSUMER, name
    assert m["members"].value == 5 and m["run_duration_ms"].value == 46_000
    assert m.config.group_kinds == ["share"]  # decided once, read by the checkers and the report
    assert m.config.protocol == "share" and set(m.config.members) == set("ABCDE")
    assert m.config.faults == ["member_kill", "member_pause"]
    assert not any(n.startswith(("no ack log", "no member named its group")) for n in m.notes)


def test_share_figures_unknown_without_the_group_settings(analysed):
    """No share_group_config: whether a lock was still valid cannot be told. The holder that died or left and
    the release still explain their redeliveries; the frozen, concurrent and expired ones are unjudged."""
    _, m = analysed(share_scenarios, "share_faults", config=False)
    got = values(m)
    for name in ("share_redeliveries_lock_expired", "share_redeliveries_member_frozen",
                 "share_concurrent_acquisitions", "share_late_acks_accepted", "share_late_acks_noop",
                 "share_late_acks_rejected",
                 "share_records_archived", "share_records_acked", "share_records_lost"):
        assert got[name] is None and "unknown" in m[name].unknown, name
    assert (got["share_redeliveries_unjudged"], got["share_redeliveries_member_killed"],
            got["share_redeliveries_member_left"], got["share_redeliveries_released"]) == (3, 1, 1, 1)
    assert got["share_redelivery_latency_p50_ms"] == got["share_redelivery_latency_max_ms"] == 30_200
    assert got["share_records_accepted"] == 11


def test_consumer_group_run_has_no_share_figures(analysed):
    root, m = analysed(scenarios, "eager_rolling_bounce")
    assert m.config.group_kinds == ["consumer"]
    assert all(m[n].value is None and m[n].unknown == NO_SHARE for n in SHARE_CATALOGUE.units)
    assert table(root, "share_deliveries").empty and table(root, "share_delivery_counts").empty
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    assert verdicts["share_no_loss"].status == "valid" and "not applicable" in verdicts["share_no_loss"].message


def test_share_members_beside_a_consumer_group_change_none_of_its_figures(analysed):
    _, alone = analysed(scenarios, "eager_rolling_bounce")
    _, mixed = analysed(share_scenarios, "eager_bounce_beside_a_share_group")
    consumer = {n for n in alone.metrics if not n.startswith("share_") and n != "members"}
    assert {n: mixed[n].value for n in consumer} == {n: alone[n].value for n in consumer}
    assert mixed["members"].value == alone["members"].value + 2
    assert mixed.config.group_kinds == ["consumer", "share"]
    assert mixed.config.protocol == "eager" and "java" in mixed.config.clients
    got = values(mixed)
    assert (got["share_records_acked"], got["share_records_accepted"], got["share_records_lost"],
            got["share_records_archived"]) == (4, 3, 1, 0)
    assert any("auto_offset_reset latest" in n for n in mixed.notes)


def test_share_run_report_speaks_of_share_figures(analysed):
    from testbed.report import render_run
    from testbed.report.inputs import load_run
    from testbed.report.kind_reports import answer_headlines

    root, _ = analysed(share_scenarios, "share_faults")
    cards = {h.key: h for h in answer_headlines(load_run(root))}
    assert list(cards) == ["headline-share-redeliveries", "headline-share-fault-latency", "headline-share-concurrent",
                           "headline-share-late-acks", "headline-share-lost"]
    assert cards["headline-share-redeliveries"].figure == "7"
    assert "30.4 s" in cards["headline-share-fault-latency"].sentence and "lock lasts 30.0 s" in \
        cards["headline-share-fault-latency"].sentence
    assert cards["headline-share-late-acks"].sentence == (
        "Of the acknowledgements sent after their lock expired, the broker refused 1, took 0 as no-ops (another "
        "delivery had completed the record) and took 1 while it still tracked the record (it must refuse those).")
    assert cards["headline-share-lost"].figure == "2"
    page = render_run(root).read_text()
    assert 'id="share-timeline"' in page and 'id="share-delivery-counts"' in page
    assert 'id="ownership"' not in page  # a share-only run has no ownership to draw


def test_consumer_group_report_keeps_its_own_headline(analysed):
    from testbed.report.inputs import load_run
    from testbed.report.kind_reports import answer_headlines

    root, _ = analysed(scenarios, "eager_rolling_bounce")
    assert [h.key for h in answer_headlines(load_run(root))][0] == "headline-longest-pause"
    assert not any(h.key.startswith("headline-share") for h in answer_headlines(load_run(root)))


def test_a_delivery_handed_over_after_a_freeze_is_ordered_by_the_brokers_count(analysed):
    """Records fetched before a freeze and returned by poll() after it, with a lower broker count than another
    member's delivery meanwhile: the first delivery (its acknowledgement late, a no-op), not a delivery after
    completion."""
    root, m = analysed(share_scenarios, "share_handed_over_late")
    got = values(m)
    assert {n: got[n] for n in ("share_redelivered_after_completion", "share_concurrent_acquisitions",
                                "share_late_acks_noop", "share_late_acks_accepted", "share_redeliveries",
                                "share_redeliveries_member_frozen", "share_records_accepted",
                                "share_records_lost")} == {
        "share_redelivered_after_completion": 0, "share_concurrent_acquisitions": 0, "share_late_acks_noop": 2,
        "share_late_acks_accepted": 0, "share_redeliveries": 2, "share_redeliveries_member_frozen": 2,
        "share_records_accepted": 2, "share_records_lost": 0}
    d = table(root, "share_deliveries").sort_values(["offset", "delivery"])
    first = d[d["delivery"] == 1]
    assert list(first["member"]) == ["A", "A"] and list(first["acquired_by_ms"]) == [12_500, 12_500]
    assert list(first["lock_expires_ms"]) == [12_500, 12_500] and all(first["late_ack"])
    second = d[d["delivery"] == 2]
    assert list(second["reason"]) == ["member_frozen"] * 2 and list(second["since_previous_ms"]) == [10_000] * 2


def test_share_only_fleet_without_run_windows_is_analysed(tmp_path, spark):  # noqa: F811
    """A fleet run outside a scenario (no run start, drain or run end in the harness log) of share members only:
    no consumer-group event to end it, so the members' last event does."""
    root = share_scenarios.share_faults(tmp_path / "run")
    harness = root / "history" / "harness.jsonl"
    windows = (Action.RUN_START, Action.RUN_END, Action.DRAIN_END)
    harness.write_text("".join(line for line in harness.read_text().splitlines(keepends=True)
                               if not any(f'"kind":"{kind}"' in line.replace(" ", "") for kind in windows)))
    m = analyse(root, spark=spark)
    assert m["run_duration_ms"].value is None
    assert m["share_members"].value == 5 and m["share_acquisitions"].value > 0


@pytest.mark.parametrize("start, lost, completed", [(6, 0, 2), (2, 2, 0)])
def test_an_accept_a_killed_member_never_heard_back_about_is_judged_by_the_brokers_start_offset(
        analysed, start, lost, completed):
    """Issue 33: A sent its accept of 2 and 3 and was killed 2 ms later; they never came again. The brokers' start
    offset at the drain's end says whether the broker took it (above 3: completed, not lost) or not (2: lost). The
    analysis before share_ack_sent counted both lost whatever the broker did."""
    root, m = analysed(share_scenarios, "share_kill_unanswered", start=start)
    got = values(m)
    assert (got["share_records_lost"], got["share_records_completed_unanswered"]) == (lost, completed)
    assert got["share_records_unanswered"] == 2 and got["share_records_accepted"] == 4
    assert got["share_redeliveries_member_killed"] == 1  # 4: sent nothing for it, it came back to B
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    assert verdicts["share_no_loss"].status == ("valid" if lost == 0 else "invalid")


def test_without_the_brokers_start_offsets_an_unanswered_accept_leaves_loss_unknown(analysed):
    root, m = analysed(share_scenarios, "share_kill_unanswered", offsets=False)
    got = values(m)
    assert got["share_records_lost"] is None and "share_group_offsets" in m["share_records_lost"].unknown
    assert got["share_records_completed_unanswered"] is None and got["share_records_unanswered"] == 2
    verdicts = {v.checker: v for v in run_checkers(load_evidence(root))}
    assert verdicts["share_no_loss"].status == "unknown"
