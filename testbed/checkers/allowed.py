"""What each configuration is allowed to show: the one place that says so (GUIDE §3, §4.7)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from testbed.analysis.metrics import RunConfig

BROKER_FAULTS = {"broker_stop", "broker_kill", "broker_pause", "broker_restart"}


class AllowedAnomalies(BaseModel):
    """``True`` = may happen in this configuration; ``*_expected`` = must happen (the testbed must find it)."""

    model_config = ConfigDict(frozen=True)
    lost_records: bool
    concurrent_duplicates: bool
    redelivered_duplicates: bool
    duplicate_ownership: bool
    needless_revocations: bool
    duplicate_ownership_expected: bool
    reasons: dict[str, str]


def allowed_anomalies(config: RunConfig) -> AllowedAnomalies:
    """The table of allowances, row by row:

    - loss: never, in any configuration.
    - duplicate ownership and concurrent duplicates: only with a zombie, i.e. a member paused (past its
      session timeout) or a broker fault that can split the group's view; a killed member's ownership
      ends at the kill, so a hard kill alone allows neither.
    - re-delivery: after a crash or zombie (the last batch's commit may be missing), after any commit the
      client reported as failed, or unless every member commits on revoke: auto-commit lags the processing, and a commit after each batch fails
      while a rebalance is in progress (seen: VerifiableConsumer's commitSync during an eager bounce);
      never for a clean bounce whose members commit on revoke.
    - needless revocations: eager protocols (revoke everything, give most of it back); never for
      cooperative or KIP-848 consumer groups.
    - duplicate ownership is *expected* when a member was paused past its session timeout.
    """
    faults = set(config.faults)
    zombie = "member_pause" in faults or bool(faults & BROKER_FAULTS)
    crash = "member_kill" in faults
    auto_commit = "auto" in config.commit_modes or not config.commit_modes
    # A commit the client reported as failed (e.g. REBALANCE_IN_PROGRESS racing a cooperative revoke) leaves
    # its records to be delivered again: Kafka promises no re-delivery only for commits that succeeded.
    commit_can_lag = (auto_commit or any(mode != "on_revoke" for mode in config.commit_modes)
                      or config.commit_failures > 0)
    eager = config.protocol in ("eager", "mixed", "unknown")
    expected = "member_pause" in faults and config.pause_past_session_timeout is True
    return AllowedAnomalies(
        lost_records=False,
        concurrent_duplicates=zombie,
        redelivered_duplicates=zombie or crash or commit_can_lag,
        duplicate_ownership=zombie,
        needless_revocations=eager,
        duplicate_ownership_expected=expected,
        reasons={
            "lost_records": "no configuration may lose acknowledged records",
            "concurrent_duplicates": f"zombie fault present: {zombie} (faults: {sorted(faults) or 'none'})",
            "redelivered_duplicates": f"crash={crash}, zombie={zombie}, commit modes {sorted(config.commit_modes)}, "
                                      f"failed commits {config.commit_failures}",
            "duplicate_ownership": f"zombie fault present: {zombie}",
            "needless_revocations": f"protocol {config.protocol}",
            "duplicate_ownership_expected": f"member paused past session timeout: {config.pause_past_session_timeout}",
        },
    )
