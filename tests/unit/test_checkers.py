"""Checkers and the allowance table, on hand-made Metrics (no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest

from testbed.analysis.group.config import run_config
from testbed.checkers import Evidence, allowed_anomalies, combine, run_checkers
from testbed.checkers.checks import CHECKERS, check_close_hangs
from testbed.history.events import Action
from testbed.analysis.catalog import CATALOG
from testbed.run.metrics import Metrics, MetricValue, RunConfig, Windows
from testbed.run.result import MAX_EXAMPLES, Verdict


def metrics(config: RunConfig, examples: dict | None = None, **values) -> Metrics:
    ms = {n: MetricValue(value=0, unit=u) for n, u in CATALOG.items()}
    for name, val in values.items():
        ms[name] = MetricValue(value=None, unit=CATALOG[name], unknown=val[1]) if isinstance(val, tuple) else MetricValue(value=val, unit=CATALOG[name])
    if examples is None:
        examples = {"duplicates": [{"offset": i, "concurrent": True} for i in range(50)], "lost_records": [{"offset": 7}]}
    return Metrics(run_dir="r", metrics=ms, config=config, latency_source="acks", examples=examples,
                   windows=Windows(run_start_ms=0, run_end_ms=1, drain_end_ms=1, bounces=[]))


COOP_CLEAN = RunConfig(protocol="cooperative", commit_modes=["on_revoke"])
EAGER_KILL_AUTO = RunConfig(protocol="eager", commit_modes=["auto"], faults=[Action.MEMBER_KILL])
PAUSED = RunConfig(protocol="cooperative", commit_modes=["sync"], faults=[Action.MEMBER_PAUSE], cut_off_past_session_timeout=True)
# a member pause whose length against the session timeout cannot be told (timeout unknown)
PAUSED_UNKNOWN = RunConfig(protocol="cooperative", commit_modes=["sync"], faults=[Action.MEMBER_PAUSE],
                           cut_off_past_session_timeout=None, members_cut_off_timeout_unknown=["A"])
PAUSED_SHORT = RunConfig(protocol="cooperative", commit_modes=["on_revoke"], faults=[Action.MEMBER_PAUSE],
                         cut_off_past_session_timeout=False)
BROKER_KILL = RunConfig(protocol="consumer", commit_modes=["on_revoke"], faults=[Action.BROKER_KILL])


@pytest.mark.parametrize(
    ("config", "concurrent", "redelivered", "shared", "needless", "expected"),
    [
        (COOP_CLEAN, False, False, False, False, False),
        # a commit after each batch fails while a rebalance is in progress: re-delivery may follow
        (RunConfig(protocol="eager", commit_modes=["sync"]), False, True, False, True, False),
        (RunConfig(protocol="cooperative", commit_modes=["on_revoke", "sync"]), False, True, False, False, False),
        # commits on revoke that the client reported as failed leave their records to be delivered again
        (RunConfig(protocol="cooperative", commit_modes=["on_revoke"], commit_failures=3), False, True, False, False,
         False),
        (EAGER_KILL_AUTO, False, True, False, True, False),
        (PAUSED, True, True, True, False, True),
        # tri-state: whether the pause outlasted the session timeout is unknown, so are the zombie allowances
        (PAUSED_UNKNOWN, None, True, None, False, None),
        # a pause shorter than the session timeout makes no zombie, but may still cost a re-delivery
        (PAUSED_SHORT, False, True, False, False, False),
        # broker faults allow re-delivery only
        (BROKER_KILL, False, True, False, False, False),
    ],
)
def test_allowance_table(config, concurrent, redelivered, shared, needless, expected):
    a = allowed_anomalies(config)
    assert (a.concurrent_duplicates, a.duplicates_redelivered, a.duplicate_ownership, a.needless_revocations,
            a.duplicate_ownership_expected) == (concurrent, redelivered, shared, needless, expected)
    assert a.processing_outside_ownership is concurrent
    assert a.lost_records is False
    # nothing allows these
    assert (a.redelivery_below_commit, a.offset_skips, a.offset_steps_back) == (False, False, False)
    assert set(a.reasons) >= {"concurrent_duplicates", "processing_outside_ownership", "redelivery_below_commit",
                              "commits_ahead_of_processing", "duplicate_ownership_expected"}


@pytest.mark.parametrize(
    ("modes", "allowed"),
    [(["auto"], True), (["sync"], False), (["on_revoke"], False), (["auto", "on_revoke"], True)],
)
def test_commits_ahead_of_processing_only_with_auto_commit(modes, allowed):
    assert allowed_anomalies(RunConfig(protocol="cooperative", commit_modes=modes)).commits_ahead_of_processing is allowed


def by_name(verdicts):
    return {v.checker: v for v in verdicts}


def test_clean_cooperative_bounce_owes_no_duplicates_and_examples_are_bounded():
    vs = by_name(run_checkers(Evidence(metrics(COOP_CLEAN, duplicates_concurrent=50, duplicate_ownership_episodes=2))))
    assert vs["concurrent_duplicates"].status == "invalid"
    assert vs["concurrent_duplicates"].count == 50
    assert len(vs["concurrent_duplicates"].examples) == MAX_EXAMPLES
    assert vs["duplicate_ownership"].status == "invalid"
    assert vs["no_loss"].status == "valid"


def test_loss_is_never_allowed():
    vs = by_name(run_checkers(Evidence(metrics(PAUSED, lost_records=1))))
    assert vs["no_loss"].status == "invalid" and vs["no_loss"].examples == [{"offset": 7}]


def test_unknown_metric_gives_unknown_verdict_never_a_pass():
    vs = by_name(run_checkers(Evidence(metrics(COOP_CLEAN, lost_records=(None, "no ack log")))))
    assert vs["no_loss"].status == "unknown" and "no ack log" in vs["no_loss"].message
    assert combine(list(vs.values())) == "unknown"


def test_cut_off_past_session_timeout_without_duplicate_ownership_is_invalid():
    vs = by_name(run_checkers(Evidence(metrics(PAUSED, duplicate_ownership_episodes=0))))
    assert vs["expected_duplicate_ownership"].status == "invalid"


def test_hard_kill_with_auto_commit_allows_redelivery_but_not_concurrency():
    vs = by_name(run_checkers(Evidence(metrics(EAGER_KILL_AUTO, duplicates_redelivered=80, duplicates_concurrent=3))))
    assert vs["duplicates_redelivered"].status == "valid" and vs["duplicates_redelivered"].count == 80
    assert vs["concurrent_duplicates"].status == "invalid"


def test_crashing_checker_yields_unknown():
    def check_boom(ev, allowed):
        raise RuntimeError("table missing")

    (v,) = run_checkers(Evidence(metrics(COOP_CLEAN)), checkers=(check_boom,))
    assert v.status == "unknown" and "table missing" in v.message


def test_needless_revocation_examples_come_from_the_table():
    revs = pd.DataFrame({"member": ["A", "B"], "partition": [0, 1], "needless": [True, False]})
    vs = by_name(run_checkers(Evidence(metrics(COOP_CLEAN, needless_revocations=1), {"revocations": revs})))
    assert vs["needless_revocations"].status == "invalid"
    assert vs["needless_revocations"].examples == [{"member": "A", "partition": 0, "needless": True}]


def test_combine_prefers_invalid_then_unknown():
    ok = Verdict.of("a", "valid", "")
    assert combine([ok]) == "valid"
    assert combine([ok, Verdict.of("b", "unknown", "")]) == "unknown"
    assert combine([Verdict.of("b", "unknown", ""), Verdict.of("c", "invalid", "")]) == "invalid"
    assert combine([]) == "unknown"


INVARIANT_EXAMPLES = {
    "outside_ownership": [{"member": "A", "partition": 0, "records": 10 - i, "other_owner": "B"} for i in range(12)],
    "offset_skip": [{"member": "B", "partition": 0, "first_offset": 55, "expected_offset": 50, "records": 5}],
    "offset_step_back": [{"member": "A", "partition": 0, "first_offset": 35, "expected_offset": 40, "records": 5}],
    "commit_ahead": [{"member": "A", "partition": 0, "committed_offset": 30, "last_offset": 19, "records": 10}],
    "redelivered_below_commit": [{"member": "B", "partition": 0, "first_offset": 20, "committed_offset": 30, "records": 10}],
}
INVARIANT_CHECKERS = ("processing_outside_ownership", "offset_skips", "offset_steps_back", "commits_ahead_of_processing",
                      "redelivery_below_commit")


def test_invariant_checkers_are_registered_and_pass_on_a_clean_run():
    vs = by_name(run_checkers(Evidence(metrics(COOP_CLEAN))))
    assert set(INVARIANT_CHECKERS) <= set(vs)
    assert all(vs[c].status == "valid" and vs[c].count == 0 for c in INVARIANT_CHECKERS)


@pytest.mark.parametrize("config", [COOP_CLEAN, EAGER_KILL_AUTO, PAUSED, PAUSED_UNKNOWN, BROKER_KILL])
def test_redelivery_below_commit_skips_and_steps_back_are_never_allowed(config):
    ev = Evidence(metrics(config, INVARIANT_EXAMPLES, records_redelivered_below_commit=10, offset_skips=1,
                          offset_skipped_records=5, offset_steps_back=1, offset_repeated_records=5))
    vs = by_name(run_checkers(ev))
    for name in ("redelivery_below_commit", "offset_skips", "offset_steps_back"):
        assert vs[name].status == "invalid", name
    assert vs["redelivery_below_commit"].count == 10
    assert vs["redelivery_below_commit"].examples == INVARIANT_EXAMPLES["redelivered_below_commit"]
    assert vs["offset_skips"].count == 1 and "5 records skipped" in vs["offset_skips"].message
    assert vs["offset_steps_back"].examples == INVARIANT_EXAMPLES["offset_step_back"]


def test_commits_ahead_valid_with_auto_commit_invalid_otherwise():
    auto = by_name(run_checkers(Evidence(metrics(EAGER_KILL_AUTO, INVARIANT_EXAMPLES, commits_ahead_of_processing=2))))
    assert auto["commits_ahead_of_processing"].status == "valid" and auto["commits_ahead_of_processing"].count == 2
    sync = by_name(run_checkers(Evidence(metrics(PAUSED, INVARIANT_EXAMPLES, commits_ahead_of_processing=2))))
    assert sync["commits_ahead_of_processing"].status == "invalid"
    assert sync["commits_ahead_of_processing"].examples == INVARIANT_EXAMPLES["commit_ahead"]


def test_processing_outside_ownership_needs_a_pause_past_the_session_timeout():
    found = dict(batches_outside_ownership=12, records_outside_ownership=65, records_outside_ownership_while_owned=60)
    paused = by_name(run_checkers(Evidence(metrics(PAUSED, INVARIANT_EXAMPLES, **found))))
    assert paused["processing_outside_ownership"].status == "valid"
    clean = by_name(run_checkers(Evidence(metrics(COOP_CLEAN, INVARIANT_EXAMPLES, **found))))
    v = clean["processing_outside_ownership"]
    assert v.status == "invalid" and v.count == 12 and "65 records, 60 while another member owned it" in v.message
    assert len(v.examples) == MAX_EXAMPLES and v.examples[0]["records"] == 10  # most severe first, bounded
    broker = by_name(run_checkers(Evidence(metrics(BROKER_KILL, INVARIANT_EXAMPLES, **found))))
    assert broker["processing_outside_ownership"].status == "invalid"


def test_unknown_pause_length_makes_found_zombie_anomalies_unknown_never_valid():
    ev = Evidence(metrics(PAUSED_UNKNOWN, duplicates_concurrent=5, duplicate_ownership_episodes=1, batches_outside_ownership=2))
    vs = by_name(run_checkers(ev))
    for name, n in (("concurrent_duplicates", 5), ("duplicate_ownership", 1), ("processing_outside_ownership", 2)):
        assert vs[name].status == "unknown" and vs[name].count == n, name
        assert "unknown" in vs[name].message
    assert combine(list(vs.values())) == "unknown"
    # nothing found: nothing whose allowance matters
    quiet = by_name(run_checkers(Evidence(metrics(PAUSED_UNKNOWN, duplicate_ownership_episodes=1))))
    assert quiet["concurrent_duplicates"].status == "valid" and quiet["processing_outside_ownership"].status == "valid"


def test_expected_duplicate_ownership_is_unknown_when_the_pause_length_is():
    vs = by_name(run_checkers(Evidence(metrics(PAUSED_UNKNOWN, duplicate_ownership_episodes=0))))
    assert vs["expected_duplicate_ownership"].status == "unknown"
    # found: expected or not, nothing contradicts it
    vs = by_name(run_checkers(Evidence(metrics(PAUSED_UNKNOWN, duplicate_ownership_episodes=2))))
    assert vs["expected_duplicate_ownership"].status == "valid"
    vs = by_name(run_checkers(Evidence(metrics(PAUSED_SHORT, duplicate_ownership_episodes=0))))
    assert vs["expected_duplicate_ownership"].status == "valid"


def test_broker_faults_allow_redelivery_but_not_concurrency_nor_duplicate_ownership():
    vs = by_name(run_checkers(Evidence(metrics(BROKER_KILL, duplicates_redelivered=7, duplicates_concurrent=3,
                                               duplicate_ownership_episodes=1))))
    assert vs["duplicates_redelivered"].status == "valid"
    assert vs["concurrent_duplicates"].status == "invalid" and vs["duplicate_ownership"].status == "invalid"


def test_unknown_or_missing_invariant_metric_gives_unknown_verdict():
    ev = Evidence(metrics(COOP_CLEAN, commits_ahead_of_processing=(None, "no successful commit in the history"),
                          records_redelivered_below_commit=(None, "no successful commit in the history")))
    vs = by_name(run_checkers(ev))
    assert vs["commits_ahead_of_processing"].status == "unknown" and "no successful commit" in vs["commits_ahead_of_processing"].message
    assert vs["redelivery_below_commit"].status == "unknown"
    old = metrics(COOP_CLEAN)
    old = old.model_copy(update={"metrics": {n: m for n, m in old.metrics.items() if n != "offset_skips"}})
    assert by_name(run_checkers(Evidence(old)))["offset_skips"].status == "unknown"


def test_invariant_examples_fall_back_to_the_table():
    table = pd.DataFrame({"kind": ["offset_skip"] * 12 + ["commit_ahead"], "member": ["A"] * 13,
                          "records": list(range(12, 0, -1)) + [3]})
    vs = by_name(run_checkers(Evidence(metrics(COOP_CLEAN, {}, offset_skips=12, commits_ahead_of_processing=1),
                                       {"invariant_violations": table})))
    assert [e["records"] for e in vs["offset_skips"].examples] == list(range(12, 2, -1))
    assert vs["commits_ahead_of_processing"].examples == [{"kind": "commit_ahead", "member": "A", "records": 3}]


# ---- config: whether a member pause outlasted the member's effective session timeout ------------------

PAUSE, RESUME, RUN_END, STEP_END = Action.MEMBER_PAUSE, Action.MEMBER_RESUME, Action.RUN_END, Action.STEP_END


def pause_config(started_timeout, *actions):
    started = {"A": {"commit_mode": "sync", "session_timeout_ms": started_timeout}, "B": {"commit_mode": "sync"}}
    harness = [{"kind": k, "ts_ms": ts, "target": t, "detail": d} for k, ts, t, d in actions]
    return run_config(started, harness)


def test_pause_uses_the_effective_session_timeout_from_started():
    # the spec's 60000 in the pause detail is only a fallback: A runs with 10000, paused 15500 ms
    c = pause_config(10000, (PAUSE, 4500, "A", {"session_timeout_ms": 60000}), (RESUME, 20000, "A", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_past_timeout) == (True, ["A"])
    c = pause_config(None, (PAUSE, 4500, "A", {"session_timeout_ms": 60000}), (RESUME, 20000, "A", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_past_timeout) == (False, [])


def test_pause_without_resume_lasts_until_exit_kill_or_run_end():
    for end_kind in (Action.MEMBER_EXIT, Action.MEMBER_KILL):
        # the process ended 8000 ms into the pause: not past the timeout, although the run went on to 30000
        c = pause_config(10000, (PAUSE, 1000, "A", {}), (end_kind, 9000, "A", {}), (RUN_END, 30000, None, {}))
        assert c.cut_off_past_session_timeout is False, end_kind
        c = pause_config(10000, (PAUSE, 1000, "A", {}), (end_kind, 11500, "A", {}), (RUN_END, 30000, None, {}))
        assert c.cut_off_past_session_timeout is True, end_kind
        # another member's exit does not end A's pause
        c = pause_config(10000, (PAUSE, 1000, "A", {}), (end_kind, 9000, "B", {}), (RUN_END, 30000, None, {}))
        assert c.cut_off_past_session_timeout is True, end_kind
    assert pause_config(10000, (PAUSE, 1000, "A", {}), (RUN_END, 9000, None, {})).cut_off_past_session_timeout is False
    assert pause_config(10000, (PAUSE, 1000, "A", {}), (RUN_END, 11500, None, {})).cut_off_past_session_timeout is True


def test_pause_length_unknown_without_a_timeout_or_an_end():
    c = pause_config(None, (PAUSE, 1000, "A", {}), (RESUME, 90000, "A", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_timeout_unknown) == (None, ["A"])
    assert allowed_anomalies(c).concurrent_duplicates is None
    # no end recorded and the harness log stops before the timeout has passed
    c = pause_config(10000, (PAUSE, 1000, "A", {}), (STEP_END, 5000, None, {}))
    assert c.cut_off_past_session_timeout is None
    # ... or after it
    c = pause_config(10000, (PAUSE, 1000, "A", {}), (STEP_END, 15000, None, {}))
    assert c.cut_off_past_session_timeout is True
    # the harness's explicit word wins; one pause past the timeout settles it
    c = pause_config(None, (PAUSE, 1000, "A", {"past_session_timeout": True}), (PAUSE, 2000, "B", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_past_timeout, c.members_cut_off_timeout_unknown) == (True, ["A"], ["B"])
    assert pause_config(10000).cut_off_past_session_timeout is False


def test_a_hung_close_is_invalid_whatever_the_clients():
    hung = pd.DataFrame([{"member": "m0", "stop_ms": 1, "close_ms": None, "cause": "stop_timeout", "hung": True}])
    for clients, status in ((["confluent-kafka"], "invalid"), (["java", "kafka-python"], "invalid")):
        config = RunConfig(protocol="cooperative", commit_modes=["on_revoke"], clients=clients)
        ev = Evidence(metrics(config, close_hangs=1), {"member_closes": hung})
        verdict = check_close_hangs(ev, allowed_anomalies(config))
        assert (verdict.status, verdict.count, verdict.examples[0]["member"]) == (status, 1, "m0")
    config = RunConfig(protocol="cooperative", commit_modes=["on_revoke"], clients=["confluent-kafka"])
    assert check_close_hangs(Evidence(metrics(config, close_hangs=0)), allowed_anomalies(config)).status == "valid"


PARTITION, HEAL = Action.MEMBER_PARTITION, Action.MEMBER_HEAL


def test_member_partition_is_a_cut_off_like_a_pause_ended_by_its_heal():
    c = pause_config(10000, (PARTITION, 1000, "A", {"brokers": "all"}), (HEAL, 12000, "A", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_past_timeout) == (True, ["A"])
    # a resume does not end a partition; a heal does not end a pause
    c = pause_config(10000, (PARTITION, 1000, "A", {}), (RESUME, 5000, "A", {}), (HEAL, 9000, "A", {}))
    assert c.cut_off_past_session_timeout is False
    c = pause_config(10000, (PAUSE, 1000, "A", {}), (HEAL, 5000, "A", {}), (RESUME, 12000, "A", {}))
    assert c.cut_off_past_session_timeout is True


def test_lossy_partition_cannot_be_judged_against_the_session_timeout():
    c = pause_config(10000, (PARTITION, 1000, "A", {"loss": 0.3}), (HEAL, 60000, "A", {}))
    assert (c.cut_off_past_session_timeout, c.members_cut_off_timeout_unknown) == (None, ["A"])


def test_partitioned_member_allows_a_zombie_but_does_not_owe_duplicate_ownership():
    c = pause_config(10000, (PARTITION, 1000, "A", {}), (HEAL, 16000, "A", {}))
    allowed = allowed_anomalies(c)
    assert (allowed.concurrent_duplicates, allowed.duplicate_ownership, allowed.duplicates_redelivered) == (True, True, True)
    # librdkafka's classic member gives its partitions up on its own session timeout: no overlap is owed
    assert allowed.duplicate_ownership_expected is None
    short = allowed_anomalies(pause_config(10000, (PARTITION, 1000, "A", {}), (HEAL, 4000, "A", {})))
    assert (short.concurrent_duplicates, short.duplicate_ownership_expected) == (False, None)


def test_broker_partition_is_a_broker_fault():
    allowed = allowed_anomalies(RunConfig(protocol="cooperative", commit_modes=["on_revoke"],
                                          faults=[Action.BROKER_PARTITION]))
    assert (allowed.concurrent_duplicates, allowed.duplicates_redelivered) == (False, True)


@pytest.mark.parametrize(("kinds", "share_judged", "consumer_judged"), [
    (["consumer"], False, True), (["share"], True, False), (["consumer", "share"], True, True),
])
def test_which_checkers_apply_is_read_from_the_group_kinds_the_analysis_wrote(kinds, share_judged, consumer_judged):
    """Members' own group_protocol says share here; only config.group_kinds counts (decided once, by the analysis)."""
    config = RunConfig(protocol="cooperative", commit_modes=["on_revoke"], group_kinds=kinds,
                       members={"A": {"group_protocol": "share"}, "B": {"group_protocol": "share"}})
    verdicts = {v.checker: v for v in run_checkers(Evidence(metrics(config, examples={})))}
    applicable = {name: "not applicable" not in (v.message or "") for name, v in verdicts.items()}
    assert applicable["share_no_loss"] is share_judged
    assert applicable["no_loss"] is consumer_judged


def test_a_cut_kafka_python_or_aiokafka_member_names_its_upstream_page_in_the_zombie_reason():
    cut = ((PARTITION, 1000, "A", {}), (HEAL, 16000, "A", {}))
    for clients, named in ((["kafka-python"], True), (["aiokafka", "java"], True), (["confluent-kafka"], False)):
        c = pause_config(10000, *cut).model_copy(update={"clients": clients})
        reason = allowed_anomalies(c).reasons["duplicate_ownership"]
        assert ("docs/upstream/kafka-python-coordinator-connection-kept-after-session-expiry.md" in reason) is named
    short = pause_config(10000, (PARTITION, 1000, "A", {}), (HEAL, 4000, "A", {})).model_copy(
        update={"clients": ["kafka-python"]})
    assert "docs/upstream" not in allowed_anomalies(short).reasons["duplicate_ownership"]  # within the session
    paused = pause_config(10000, (PAUSE, 1000, "A", {}), (RESUME, 16000, "A", {})).model_copy(
        update={"clients": ["kafka-python"]})
    assert "docs/upstream" not in allowed_anomalies(paused).reasons["duplicate_ownership"]


STREAMS_EOS = {"client": "java", "group_protocol": "streams", "streams": {"processing_guarantee": "exactly_once_v2"}}


@pytest.mark.parametrize(("faults", "allowed"), [
    ([], False), ([Action.MEMBER_KILL], False), ([Action.BROKER_KILL], True), ([Action.BROKER_LATENCY], True),
    ([Action.MEMBER_PAUSE], True), ([Action.MEMBER_PARTITION], True), ([Action.MEMBER_STALL], True)])
def test_lost_partitions_need_a_fault_that_can_fence_a_member(faults, allowed):
    config = RunConfig(protocol="consumer", commit_modes=["on_revoke"], faults=faults)
    (v,) = run_checkers(Evidence(metrics(config, partitions_lost=4)),
                        checkers=[c for c in CHECKERS if c.__name__ == "check_lost_partitions"])
    assert v.status == ("valid" if allowed else "invalid") and v.count == 4
    assert "fence" in allowed_anomalies(config).reasons["partitions_lost"]


@pytest.mark.parametrize(("started", "needless"), [
    # a Streams instance recorded before it wrote `lost`: its lost-all reads as revoked and given back
    (STREAMS_EOS, None),
    ({**STREAMS_EOS, "reports_lost": True}, False),
    ({"client": "java", "group_protocol": "classic"}, None),  # VerifiableConsumer overrides no onPartitionsLost
    ({"client": "kafka-python", "client_version": "2.0.2"}, None),
    ({"client": "kafka-python", "client_version": "3.0.0"}, False),
    ({"client": "confluent-kafka"}, False),
])
def test_needless_revocations_are_unknown_under_a_fencing_fault_for_members_that_record_a_loss_as_revoked(
        started, needless):
    config = RunConfig(protocol="consumer", faults=[Action.BROKER_KILL], members={"m0": started})
    assert allowed_anomalies(config).needless_revocations is needless
    # without a fault that can fence, a revocation given back is needless whatever the client records
    assert allowed_anomalies(config.model_copy(update={"faults": []})).needless_revocations is False


def test_a_streams_group_is_named_in_the_needless_revocations_reason():
    config = RunConfig(protocol="consumer", members={"m0": {**STREAMS_EOS, "reports_lost": True}})
    assert allowed_anomalies(config).reasons["needless_revocations"] == "protocol consumer (streams group, KIP-1071)"


def test_the_redelivery_anomaly_has_one_name_and_its_earlier_names_still_load():
    from testbed.checkers import AllowedAnomalies
    from testbed.run.result import Verdict

    vs = by_name(run_checkers(Evidence(metrics(EAGER_KILL_AUTO, duplicates_redelivered=80))))
    assert vs["duplicates_redelivered"].count == 80 and "redelivery" not in vs
    earlier = Verdict.model_validate({"checker": "redelivery", "status": "valid", "message": "", "count": 0})
    assert earlier.checker == "duplicates_redelivered"
    fields = allowed_anomalies(EAGER_KILL_AUTO).model_dump()
    assert fields["duplicates_redelivered"] is True and "redelivered_duplicates" not in fields
    deprecated = {**fields, "redelivered_duplicates": False}
    del deprecated["duplicates_redelivered"]
    assert AllowedAnomalies.model_validate(deprecated).duplicates_redelivered is False
