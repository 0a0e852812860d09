"""What each configuration is allowed to show: the one place in the code that says so (docs/metrics.md tells it)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from testbed.analysis.group.config import CUT_OFF_ENDS
from testbed.analysis.view.started import reports_lost
from testbed.history.events import BROKER_FAULTS, Action
from testbed.run.metrics import RunConfig

# Broker faults after which a share-partition may have a new leader, which knows nothing of the old one's locks.
LEADER_MOVES = frozenset({Action.BROKER_STOP, Action.BROKER_KILL, Action.BROKER_RESTART, Action.BROKER_PAUSE,
                          Action.BROKER_PARTITION})

# True = may happen in this configuration, False = must not, None = cannot tell (a checker that finds such
# anomalies is then ``unknown``, never valid).
Allowance = bool | None


class AllowedAnomalies(BaseModel):
    """Tri-state allowances; ``duplicate_ownership_expected`` = must happen (the testbed must find it)."""

    model_config = ConfigDict(frozen=True)
    lost_records: Allowance
    concurrent_duplicates: Allowance
    # named as its metric and checker; redelivered_duplicates, its earlier name, still loads (deprecated)
    duplicates_redelivered: Allowance = Field(
        validation_alias=AliasChoices("duplicates_redelivered", "redelivered_duplicates"))
    duplicate_ownership: Allowance
    needless_revocations: Allowance
    duplicate_ownership_expected: Allowance
    processing_outside_ownership: Allowance = False
    redelivery_below_commit: Allowance = False
    offset_skips: Allowance = False
    offset_steps_back: Allowance = False
    commits_ahead_of_processing: Allowance = False
    close_hangs: Allowance = False
    # share groups (KIP-932)
    share_concurrent_acquisitions: Allowance = False
    share_late_acks_accepted: Allowance = False
    share_redelivered_after_completion: Allowance = False
    share_records_lost: Allowance = False
    effects_missing: Allowance = False
    member_crashes: Allowance = False
    partitions_lost: Allowance = False
    reasons: dict[str, str]


def allowed_anomalies(config: RunConfig) -> AllowedAnomalies:
    """The table of allowances, row by row:

    - loss: never, in any configuration.
    - a crash of the user's program: only where the scenario allows it (``allow_crashes``); a crash re-delivers
      what the program processed and had not committed, like a kill.
    - duplicate ownership, concurrent duplicates and processing outside ownership: only with a zombie, i.e.
      a member cut off from its group (paused, or partitioned from the brokers) for longer than its effective
      session timeout (``config.cut_off_past_session_timeout``); unknown (None) when whether a cut-off
      outlasted it is unknown. Broker faults (a broker partition included) do not allow them, and a killed
      member's ownership ends at the kill, so a hard kill allows none of them.
    - re-delivery: after a crash (a kill, a node lost), a member pause, partition or poll-loop stall, or a broker
      fault (the last batch's commit may be missing),
      after any commit the client reported as failed, or unless every member commits on revoke: auto-commit
      lags the processing, and a commit after each batch fails while a rebalance is in progress (seen:
      VerifiableConsumer's commitSync during an eager bounce); never for a clean bounce whose members commit
      on revoke.
    - re-delivery below a successful commit, offset skips and steps back within an ownership interval:
      never (Kafka's promises, whatever the faults).
    - commits ahead of processing: only with auto-commit (librdkafka stores the offset when consume()
      returns, before the processing ends, and auto-commits it from its own thread).
    - a close that hangs past the stop timeout: never, for every client (the kafka-python hangs once allowed
      here were testbed's own runner deadlocking in its SIGTERM handler: docs/metrics.md, ``close_hangs``).
    - needless revocations: eager protocols (revoke everything, give most of it back); never for
      cooperative, KIP-848 consumer or KIP-1071 streams groups. Unknown there when a fault that can fence a
      member came with a member whose history cannot tell a loss from a revocation (``reports_lost``: Java
      consumers, aiokafka, kafka-python 2.x, Streams instances recorded before they wrote ``lost``): a fenced
      member drops every partition and gets them back at its rejoin, which such a history shows as a revocation
      given back (docs/streams-fencing.md).
    - lost partitions (taken from a member without a revoke: its session expired, it was fenced, a Streams
      instance lost all its tasks): only after a fault that can fence a member: a broker fault (the coordinator
      moves, a request or an exactly-once transaction times out), a member cut off (pause, partition) or a
      poll-loop stall past max.poll.interval.ms. A clean bounce, a scale-out or a kill loses nothing so.
    - share groups: a record acquired by a second member while the first still held it under a valid lock
      (concurrent acquisition) only after a broker fault that can move a share-partition's leadership (stop,
      kill, restart, pause, partition): the new leader does not know the old one's acquisition locks (they
      are not persisted), so what was acquired there is available again at once. A late acknowledgement (sent
      after its lock expired) the broker took while no later delivery had completed the record
      (``share_late_acks_accepted``: the broker still tracked the record, AVAILABLE again or acquired by
      another member, and refuses such an acknowledgement with INVALID_RECORD_STATE), a record acquired
      again after an accept or reject the broker took, and a record acknowledged to a producer never accepted
      nor archived: never. A late acknowledgement the broker took after a later delivery's accept or reject
      had completed the record (answered no later than it; ``share_late_acks_noop``) is allowed, and not
      checked: Kafka's SharePartition.acknowledge skips offsets below the share-partition start offset and
      answers success, changing nothing.
    - duplicate ownership is *expected* when a member was paused past its session timeout; unknown when
      whether it was is unknown, and whenever a member was partitioned: a client that times its own session
      out (librdkafka does) gives its partitions up about when the coordinator does, so an overlap may or
      may not show.
    """
    faults = set(config.faults)
    cut_off = bool(faults & set(CUT_OFF_ENDS))
    broker = bool(faults & BROKER_FAULTS)
    zombie: Allowance = config.cut_off_past_session_timeout if cut_off else False
    crash = bool(faults & {Action.MEMBER_KILL, Action.NODE_LOST}) or bool(config.members_crashed)
    # A member stalled past max.poll.interval leaves the group with its last batches uncommitted.
    stalled = Action.MEMBER_STALL in faults
    auto_commit = "auto" in config.commit_modes or not config.commit_modes
    # A commit the client reported as failed (e.g. REBALANCE_IN_PROGRESS racing a cooperative revoke) leaves
    # its records to be delivered again: Kafka promises no re-delivery only for commits that succeeded.
    commit_can_lag = (auto_commit or any(mode != "on_revoke" for mode in config.commit_modes)
                      or config.commit_failures > 0)
    eager = config.protocol in ("eager", "mixed", "unknown")
    fencing = sorted(faults & (BROKER_FAULTS | set(CUT_OFF_ENDS) | {Action.MEMBER_STALL}))
    lost_as_revoked = sorted(m for m, s in config.members.items() if not reports_lost(s))
    needless: Allowance = True if eager else (None if fencing and lost_as_revoked else False)
    streams_group = any(s.get("group_protocol") == "streams" for s in config.members.values())
    protocol = f"{config.protocol} (streams group, KIP-1071)" if streams_group else config.protocol
    if eager or not (fencing and lost_as_revoked):
        needless_reason = f"protocol {protocol}"
    else:
        needless_reason = (f"protocol {protocol}, but faults that can fence a member ({', '.join(fencing)}) and "
                           f"members whose history records a loss as a revocation ({', '.join(lost_as_revoked)}): "
                           "a fenced member's partitions given back at its rejoin cannot be told from a needless "
                           "revocation")
    if not cut_off:
        zombie_reason = "no member pause or partition"
    elif zombie is None:
        zombie_reason = (f"member pause or partition whose length against the session timeout is unknown "
                         f"(members {config.members_cut_off_timeout_unknown or '?'})")
    else:
        zombie_reason = (f"member paused or partitioned past its session timeout: {zombie}"
                         + (f" ({', '.join(config.members_cut_off_past_timeout)})" if config.members_cut_off_past_timeout else ""))
    if zombie is not False and Action.MEMBER_PARTITION in faults and {"kafka-python", "aiokafka"} & set(config.clients):
        # Past the heal too, for as long as their coordinator connection's TCP backoff (upstream, not ours); a cut
        # shorter than the session makes no zombie to prolong.
        zombie_reason += ("; kafka-python and aiokafka members cut past their session process on after the heal "
                          "(docs/upstream/kafka-python-coordinator-connection-kept-after-session-expiry.md, "
                          "docs/upstream/aiokafka-heartbeat-waits-out-the-tcp-backoff.md)")
    never = "never allowed: Kafka promises it whatever the faults"
    return AllowedAnomalies(
        lost_records=False,
        concurrent_duplicates=zombie,
        duplicates_redelivered=cut_off or stalled or broker or crash or commit_can_lag,
        duplicate_ownership=zombie,
        needless_revocations=needless,
        duplicate_ownership_expected=None if Action.MEMBER_PARTITION in faults else zombie,
        processing_outside_ownership=zombie,
        redelivery_below_commit=False,
        offset_skips=False,
        offset_steps_back=False,
        commits_ahead_of_processing=auto_commit,
        close_hangs=False,
        share_concurrent_acquisitions=bool(faults & LEADER_MOVES),
        share_late_acks_accepted=False,
        share_redelivered_after_completion=False,
        share_records_lost=False,
        member_crashes=config.crashes_allowed,
        partitions_lost=bool(fencing),
        reasons={
            "partitions_lost": (f"faults that can fence a member: {', '.join(fencing)}" if fencing else
                                "no fault that can fence a member (broker fault, member pause, partition or stall): "
                                "a member loses partitions only when its session expires or it is fenced"),
            "member_crashes": ("the scenario allows its programs to crash (allow_crashes: true)" if config.crashes_allowed
                               else "a program that crashes is a finding unless the scenario allows it "
                                    "(allow_crashes: true)"),
            "share_concurrent_acquisitions": (f"broker faults that can move a share-partition's leader: "
                                              f"{sorted(faults & LEADER_MOVES) or 'none'} (acquisition locks are "
                                              "not persisted)"),
            "share_late_acks_accepted": ("never allowed: while it still tracks the record (no later delivery "
                                         "completed it) the broker must refuse an acknowledgement after the lock "
                                         "expired; one after another delivery completed the record is a no-op "
                                         "(share_late_acks_noop), allowed"),
            "share_redelivered_after_completion": "never allowed: an accepted or rejected record is never delivered again",
            "share_records_lost": "no configuration may lose acknowledged records",
            "lost_records": "no configuration may lose acknowledged records",
            "effects_missing": "no configuration may lose an acknowledged record's effect in the store",
            "concurrent_duplicates": f"{zombie_reason}; broker faults do not allow them (faults: {sorted(faults) or 'none'})",
            "duplicates_redelivered": f"crash={crash}, member pause or partition={cut_off}, stall={stalled}, "
                                      f"broker fault={broker}, "
                                      "commit modes "
                                      f"{sorted(config.commit_modes)}, failed commits {config.commit_failures}",
            "duplicate_ownership": zombie_reason,
            "processing_outside_ownership": zombie_reason,
            "redelivery_below_commit": never,
            "offset_skips": never,
            "offset_steps_back": never,
            "commits_ahead_of_processing": f"auto-commit: {auto_commit} (commit modes {sorted(config.commit_modes)})",
            "needless_revocations": needless_reason,
            "duplicate_ownership_expected": (f"{zombie_reason}; a partitioned member may give its partitions up "
                                             "on its own session timeout, in time or not"
                                             if Action.MEMBER_PARTITION in faults else zombie_reason),
            "close_hangs": "a member asked to stop must close and leave the group",
        },
    )
