"""Pure checkers of an analysed run: tables and metrics in, verdicts out.

A checker that raises becomes ``unknown`` with the error, never a pass; a metric the analysis could
not make (``unknown``) makes the checker unknown too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import json

import pandas as pd

from testbed.analysis.records.duplicate_causes import CAUSES, metric_name
from testbed.analysis.records.effects import NO_EFFECTS
from testbed.run.layout import RunDir
from testbed.run.metrics import MetricValue, Metrics
from testbed.run.result import Verdict, VerdictStatus

from .allowed import AllowedAnomalies, allowed_anomalies


@dataclass(frozen=True)
class Evidence:
    """What checkers may look at: the analysis result and its tables."""

    metrics: Metrics
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    def metric(self, name: str) -> MetricValue:
        return self.metrics[name]


def load_evidence(run_dir: str | Path) -> Evidence:
    """A saved run's evidence, read back from its files (re-judging a saved run; the runner hands the checkers
    the analysis's result as it is)."""
    run = RunDir(Path(run_dir))
    metrics = Metrics.model_validate_json(run.metrics.read_text())
    tables = {}
    for name in metrics.tables:  # every table the analysis wrote
        path = run.table(name)
        if path.exists():
            tables[name] = pd.read_parquet(path)
    return Evidence(metrics, tables)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Plain-JSON rows (numpy scalars would not serialise with the verdict)."""
    return json.loads(frame.head(10).to_json(orient="records"))


def _count_check(ev: Evidence, checker: str, metric: str, allowed: bool | None, what: str,
                 examples: list[dict[str, Any]], reason: str | None = None, extra: str = "") -> Verdict:
    """Anomalies counted by ``metric`` against a tri-state allowance: found and allowed = valid, found and
    not allowed = invalid, found with the allowance unknown = unknown (never a pass)."""
    if metric not in ev.metrics.metrics:
        return Verdict.of(checker, "unknown", f"{metric} not measured by this analysis")
    m = ev.metric(metric)
    if not m.known:
        return Verdict.of(checker, "unknown", f"{metric} unknown: {m.unknown}")
    n = int(m.value or 0)
    if n == 0:
        return Verdict.of(checker, "valid", f"no {what}", 0)
    why = f" ({reason})" if reason else ""
    if allowed is True:
        return Verdict.of(checker, "valid", f"{n} {what}{extra}, allowed in this configuration{why}", n, examples)
    if allowed is None:
        return Verdict.of(checker, "unknown", f"{n} {what}{extra}; whether this configuration allows them is unknown{why}",
                          n, examples)
    return Verdict.of(checker, "invalid", f"{n} {what}{extra}, not allowed in this configuration{why}", n, examples)


def _invariant_examples(ev: Evidence, kind: str) -> list[dict[str, Any]]:
    """The analysis's bounded examples of one invariant (most severe first), else the head of its table."""
    if kind in ev.metrics.examples:
        return list(ev.metrics.examples[kind])
    table = ev.tables.get("invariant_violations")
    if table is None or not len(table):
        return []
    return _records(table[table["kind"] == kind])


def check_no_loss(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    return _count_check(ev, "no_loss", "lost_records", allowed.lost_records, "acknowledged records never processed",
                        ev.metrics.examples.get("lost_records", []))


def check_concurrent_duplicates(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    ex = [e for e in ev.metrics.examples.get("duplicates", []) if e.get("concurrent")]
    return _count_check(ev, "concurrent_duplicates", "duplicates_concurrent", allowed.concurrent_duplicates,
                        "records processed again while another member owned the partition", ex,
                        allowed.reasons.get("concurrent_duplicates"))


def check_duplicates_redelivered(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """Re-deliveries: named as their metric (``redelivery`` in result.json files written before)."""
    ex = [e for e in ev.metrics.examples.get("duplicates", []) if not e.get("concurrent")]
    return _count_check(ev, "duplicates_redelivered", "duplicates_redelivered", allowed.duplicates_redelivered,
                        "records re-delivered (processed again by a later owner)", ex,
                        allowed.reasons.get("duplicates_redelivered"), _redelivery_causes(ev))


def _redelivery_causes(ev: Evidence) -> str:
    """The re-deliveries' causes as metrics.json counts them, the most first; nothing when they are not known."""
    found = [(ev.metrics.metrics[metric_name(c)].value, c) for c in CAUSES
             if c != "concurrent" and metric_name(c) in ev.metrics.metrics]
    counted = sorted(((int(n), c) for n, c in found if n), key=lambda nc: -nc[0])
    return f", by cause: {', '.join(f'{n} {c}' for n, c in counted)}" if counted else ""


def check_duplicate_ownership(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    table = ev.tables.get("duplicate_ownership")
    ex = _records(table.sort_values("duration_ms", ascending=False)) if table is not None else []
    return _count_check(ev, "duplicate_ownership", "duplicate_ownership_episodes", allowed.duplicate_ownership,
                        "spans with two owners of one partition", ex, allowed.reasons.get("duplicate_ownership"))


def check_expected_duplicate_ownership(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A member paused past its session timeout must show up as duplicate ownership: if the testbed
    does not see it, the measurement (or the fault) is broken."""
    name = "expected_duplicate_ownership"
    expected = allowed.duplicate_ownership_expected
    if expected is False:
        return Verdict.of(name, "valid", "no duplicate ownership expected in this configuration")
    m = ev.metric("duplicate_ownership_episodes")
    if not m.known:
        return Verdict.of(name, "unknown", f"duplicate_ownership_episodes unknown: {m.unknown}")
    n = int(m.value or 0)
    if n and expected is None:
        # expected or not, it is there: nothing the unknown pause length could contradict
        return Verdict.of(name, "valid", f"{n} duplicate-ownership span(s) found after a member pause", n)
    if n:
        return Verdict.of(name, "valid", f"{n} duplicate-ownership span(s) found, as expected", n)
    if expected is None:
        return Verdict.of(name, "unknown", "no duplicate ownership found, and whether a member pause outlasted the "
                                           f"session timeout is unknown ({allowed.reasons.get('duplicate_ownership_expected', '')})", 0)
    return Verdict.of(name, "invalid", "a member was paused past its session timeout but no duplicate ownership was found", 0)


def check_needless_revocations(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    table = ev.tables.get("revocations")
    ex = _records(table[table["needless"].astype(bool)]) if table is not None and len(table) else []
    return _count_check(ev, "needless_revocations", "needless_revocations", allowed.needless_revocations,
                        "partitions revoked and given back to the same member", ex, allowed.reasons.get("needless_revocations"))


def check_lost_partitions(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """Partitions a member lost without a revoke (session expired, fenced, a Streams instance's tasks all lost):
    its uncommitted work is re-done by the next owner. The episodes that lost them are the examples."""
    table = ev.tables.get("rebalance_episodes")
    ex = _records(table[table["partitions_lost"] > 0]) if table is not None and "partitions_lost" in table else []
    return _count_check(ev, "lost_partitions", "partitions_lost", allowed.partitions_lost,
                        "partitions lost by a member without a revoke (session expired or fenced)", ex,
                        allowed.reasons.get("partitions_lost"))


def check_processing_outside_ownership(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """(a) batches processed by a member holding no ownership interval of the partition at that time."""
    extra = ""
    records, owned = (ev.metrics.metrics.get(n) for n in ("records_outside_ownership", "records_outside_ownership_while_owned"))
    if records is not None and records.known:
        extra = f" ({int(records.value or 0)} records"
        extra += f", {int(owned.value or 0)} while another member owned it)" if owned is not None and owned.known else ")"
    return _count_check(ev, "processing_outside_ownership", "batches_outside_ownership",
                        allowed.processing_outside_ownership, "batches processed by a member not owning the partition",
                        _invariant_examples(ev, "outside_ownership"), allowed.reasons.get("processing_outside_ownership"),
                        extra)


def _records_note(ev: Evidence, metric: str, what: str) -> str:
    m = ev.metrics.metrics.get(metric)
    return f" ({int(m.value or 0)} records {what})" if m is not None and m.known else ""


def check_offset_skips(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """(b) a batch inside an ownership interval starting past the previous batch's end (or, first in the
    interval, past the committed offset at assignment and everything processed before)."""
    return _count_check(ev, "offset_skips", "offset_skips", allowed.offset_skips,
                        "offset skips within an ownership interval", _invariant_examples(ev, "offset_skip"),
                        allowed.reasons.get("offset_skips"), _records_note(ev, "offset_skipped_records", "skipped"))


def check_offset_steps_back(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """(b) a batch inside an ownership interval starting at or below the previous batch's last offset."""
    return _count_check(ev, "offset_steps_back", "offset_steps_back", allowed.offset_steps_back,
                        "offset steps back within an ownership interval", _invariant_examples(ev, "offset_step_back"),
                        allowed.reasons.get("offset_steps_back"), _records_note(ev, "offset_repeated_records", "repeated"))


def check_commits_ahead_of_processing(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """(c) a successful commit of an offset beyond what the committing member had processed."""
    return _count_check(ev, "commits_ahead_of_processing", "commits_ahead_of_processing",
                        allowed.commits_ahead_of_processing, "successful commits ahead of the member's processing",
                        _invariant_examples(ev, "commit_ahead"), allowed.reasons.get("commits_ahead_of_processing"))


def check_redelivery_below_commit(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """(d) records below the committed offset at assignment processed again in that ownership interval."""
    return _count_check(ev, "redelivery_below_commit", "records_redelivered_below_commit", allowed.redelivery_below_commit,
                        "records re-delivered below a successful commit", _invariant_examples(ev, "redelivered_below_commit"),
                        allowed.reasons.get("redelivery_below_commit"))


def check_close_hangs(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A member asked to stop that had not closed by the fleet's stop timeout and was SIGKILLed."""
    table = ev.tables.get("member_closes")
    ex = _records(table[table["hung"].astype(bool)]) if table is not None and len(table) else []
    return _count_check(ev, "close_hangs", "close_hangs", allowed.close_hangs,
                        "closes that did not finish within the stop timeout (SIGKILLed)", ex,
                        allowed.reasons.get("close_hangs"))


def check_share_concurrent_acquisitions(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A share-group record acquired while another delivery of it still held a valid lock."""
    return _count_check(ev, "share_concurrent_acquisitions", "share_concurrent_acquisitions",
                        allowed.share_concurrent_acquisitions, "records acquired while another member held them "
                        "under a valid lock", ev.metrics.examples.get("share_concurrent_acquisitions", []),
                        allowed.reasons.get("share_concurrent_acquisitions"))


def check_share_late_acks(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A share-group acknowledgement sent after its lock expired that the broker took while no later delivery
    had completed the record (a late no-op after completion, ``share_late_acks_noop``, is allowed)."""
    return _count_check(ev, "share_late_acks", "share_late_acks_accepted", allowed.share_late_acks_accepted,
                        "acknowledgements sent after their lock expired that the broker took while no later "
                        "delivery had completed the record",
                        ev.metrics.examples.get("share_late_acks_accepted", []),
                        allowed.reasons.get("share_late_acks_accepted"))


def check_share_redelivery_after_completion(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """A share-group record acquired again after an accept or reject the broker took."""
    return _count_check(ev, "share_redelivery_after_completion", "share_redelivered_after_completion",
                        allowed.share_redelivered_after_completion,
                        "records acquired again after the broker took their accept or reject",
                        ev.metrics.examples.get("share_redelivered_after_completion", []),
                        allowed.reasons.get("share_redelivered_after_completion"))


def check_share_no_loss(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """Every record acknowledged to a producer on a share group's topics ends accepted or archived."""
    return _count_check(ev, "share_no_loss", "share_records_lost", allowed.share_records_lost,
                        "acknowledged records never accepted nor archived by a share group",
                        ev.metrics.examples.get("share_lost_records", []), allowed.reasons.get("share_records_lost"))


def check_effects(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    return _count_check(ev, "effects", "effects_missing", allowed.effects_missing,
                        "acknowledged records whose effect is missing from the store",
                        ev.metrics.examples.get("effects_missing", []),
                        "the store, read after the run, must hold every acknowledged record")


def check_member_crashes(ev: Evidence, allowed: AllowedAnomalies) -> Verdict:
    """Each crash of the user's program (it ended by itself with a failure), with its exception where its output
    showed one."""
    table = ev.tables.get("member_crashes")
    ex = _records(table.drop(columns=[c for c in ("log_tail",) if c in table.columns])) if table is not None else []
    return _count_check(ev, "member_crashes", "member_crashes", allowed.member_crashes,
                        "crash(es) of the program (it ended by itself with a failure)", ex,
                        allowed.reasons.get("member_crashes"))


CHECKERS: tuple[Callable[[Evidence, AllowedAnomalies], Verdict], ...] = (
    check_no_loss,
    check_effects,
    check_member_crashes,
    check_concurrent_duplicates,
    check_duplicates_redelivered,
    check_duplicate_ownership,
    check_expected_duplicate_ownership,
    check_needless_revocations,
    check_lost_partitions,
    check_processing_outside_ownership,
    check_offset_skips,
    check_offset_steps_back,
    check_commits_ahead_of_processing,
    check_redelivery_below_commit,
    check_close_hangs,
    check_share_concurrent_acquisitions,
    check_share_late_acks,
    check_share_redelivery_after_completion,
    check_share_no_loss,
)
SHARE_CHECKERS = frozenset({check_share_concurrent_acquisitions, check_share_late_acks,
                            check_share_redelivery_after_completion, check_share_no_loss})


def not_applicable(ev: Evidence, checker: Callable[[Evidence, AllowedAnomalies], Verdict]) -> str | None:
    """Why a checker has nothing to judge in this run: share checkers without a share group, consumer-group
    checkers without a consumer group (a property of no member holds vacuously; an unknown would mark every run
    of the other kind as not judged). The run's group kinds are the analysis's (metrics.json
    ``config.group_kinds``)."""
    if checker is check_effects:
        effects = ev.metrics.metrics.get("effects_missing")
        if effects is None or effects.unknown == NO_EFFECTS:
            return "not applicable: the scenario reads no store (no effects command)"
    kinds = ev.metrics.config.group_kinds
    if checker in SHARE_CHECKERS and "share" not in kinds:
        return "not applicable: no share-group member in this run"
    if checker not in SHARE_CHECKERS and kinds and "consumer" not in kinds:
        return "not applicable: no consumer-group member in this run (only share-group members)"
    return None


def combine(verdicts: list[Verdict]) -> VerdictStatus:
    """Invalid beats unknown beats valid: an unmeasured property is never a pass."""
    statuses = {v.status for v in verdicts}
    if "invalid" in statuses:
        return "invalid"
    if "unknown" in statuses or not verdicts:
        return "unknown"
    return "valid"


def run_checkers(ev: Evidence, allowed: AllowedAnomalies | None = None, checkers=CHECKERS) -> list[Verdict]:
    try:
        allowed = allowed or allowed_anomalies(ev.metrics.config)
    except Exception as exc:  # noqa: BLE001 - any failure to decide allowances leaves every verdict unknown
        return [Verdict.of(c.__name__.removeprefix("check_"), "unknown", f"allowances failed: {exc!r}") for c in checkers]
    out = []
    for checker in checkers:
        name = checker.__name__.removeprefix("check_")
        try:
            why = not_applicable(ev, checker)
            out.append(Verdict.of(name, "valid", why, 0) if why else checker(ev, allowed))
        except Exception as exc:  # noqa: BLE001 - a crashing checker must never pass
            out.append(Verdict.of(name, "unknown", f"checker crashed: {type(exc).__name__}: {exc}"))
    return out
