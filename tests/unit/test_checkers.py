"""Checkers and the allowance table, on hand-made Metrics (no Spark)."""

from __future__ import annotations

import pandas as pd
import pytest

from testbed.analysis.metrics import CATALOG, Metrics, MetricValue, RunConfig, Windows
from testbed.checkers import Evidence, allowed_anomalies, combine, run_checkers
from testbed.checkers.verdict import MAX_EXAMPLES, Verdict


def metrics(config: RunConfig, **values) -> Metrics:
    ms = {n: MetricValue(value=0, unit=u) for n, u in CATALOG.items()}
    for name, val in values.items():
        ms[name] = MetricValue(value=None, unit=CATALOG[name], unknown=val[1]) if isinstance(val, tuple) else MetricValue(value=val, unit=CATALOG[name])
    examples = {"duplicates": [{"offset": i, "concurrent": True} for i in range(50)], "lost_records": [{"offset": 7}]}
    return Metrics(run_dir="r", metrics=ms, config=config, latency_source="acks", examples=examples,
                   windows=Windows(run_start_ms=0, run_end_ms=1, drain_end_ms=1, bounces=[]))


COOP_CLEAN = RunConfig(protocol="cooperative", commit_modes=["on_revoke"])
EAGER_KILL_AUTO = RunConfig(protocol="eager", commit_modes=["auto"], faults=["member_kill"])
PAUSED = RunConfig(protocol="cooperative", commit_modes=["sync"], faults=["member_pause"], pause_past_session_timeout=True)


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
        (RunConfig(protocol="consumer", commit_modes=["on_revoke"], faults=["broker_kill"]), True, True, True, False, False),
    ],
)
def test_allowance_table(config, concurrent, redelivered, shared, needless, expected):
    a = allowed_anomalies(config)
    assert (a.concurrent_duplicates, a.redelivered_duplicates, a.duplicate_ownership, a.needless_revocations,
            a.duplicate_ownership_expected) == (concurrent, redelivered, shared, needless, expected)
    assert a.lost_records is False


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


def test_pause_past_session_timeout_without_duplicate_ownership_is_invalid():
    vs = by_name(run_checkers(Evidence(metrics(PAUSED, duplicate_ownership_episodes=0))))
    assert vs["expected_duplicate_ownership"].status == "invalid"


def test_hard_kill_with_auto_commit_allows_redelivery_but_not_concurrency():
    vs = by_name(run_checkers(Evidence(metrics(EAGER_KILL_AUTO, duplicates_redelivered=80, duplicates_concurrent=3))))
    assert vs["redelivery"].status == "valid" and vs["redelivery"].count == 80
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
