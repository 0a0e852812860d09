"""What each metric means, in one place, for the report's metric tables (text from docs/metrics.md).

The analysis package's catalogue (``testbed.analysis.catalog.CATALOG``) holds names and units only;
a unit test keeps this dict covering every name in it.
"""

from __future__ import annotations

from ..analysis.records.duplicate_causes import MEANINGS as CAUSE_MEANINGS
from ..analysis.records.duplicate_causes import metric_name

_LATENCY = "per record (first processing): processing time − produce time"

METRIC_DEFINITIONS: dict[str, str] = {
    "run_duration_ms": "run_end − run_start (harness); falls back to first/last event of the history",
    "members": "member processes that wrote a `started` event",
    "partitions": "distinct partitions ever assigned",
    "records_processed": "sum of `count` over `processed` events, duplicates included",
    "records_unique_processed": "distinct (topic, partition, offset) processed by anyone",
    "records_acked": "distinct (topic, partition, offset) in the ack logs",
    "lost_records": "acked records never processed by the end of the final drain",
    "acks_without_offset": "acks delivered without an offset (idempotent retry of a record already written): not matched, not in lost_records",
    "duplicates_total": "processings of a record beyond its first (same or another member)",
    "duplicate_records": "distinct records processed more than once",
    "duplicates_concurrent": "duplicate processings inside a duplicate-ownership episode of that partition, or by a member that did not own the partition while another did (zombie)",
    "batches_outside_ownership": "processed batches written while their member held no ownership interval of the partition",
    "records_outside_ownership": "records of the batches processed outside ownership",
    "records_outside_ownership_while_owned": "records processed outside ownership while another member owned the partition",
    "offset_skips": "batches inside one ownership interval that start above the next expected offset",
    "offset_skipped_records": "records jumped over by those skips",
    "offset_steps_back": "batches inside one ownership interval that start at or below the previous batch's last offset",
    "offset_repeated_records": "records repeated by those steps back",
    "commits_ahead_of_processing": "successful commits of an offset beyond what the committing member had processed",
    "records_redelivered_below_commit": "records processed again below an offset successfully committed before their owner's assignment",
    "member_closes": "stops the harness asked for (stop steps, clean bounces and scale-ins, the fleet's teardown)",
    "close_p50_ms": "median time from the harness's stop request to the member's own `stopped` event (close() returned)",
    "close_max_ms": "longest of those close times; a hung close is not among them",
    "close_hangs": "closes still unfinished at the fleet's stop timeout (30 s), ended by SIGKILL: a hang",
    "streams_restorations": "Kafka Streams store partitions restored with at least one record from their changelogs",
    "streams_restored_records": "records the Streams instances restored into their stores, in all",
    "streams_restore_max_ms": "the longest restoration of one store partition, start to end",
    "streams_restorations_unfinished": "restorations that never finished: their store partition stayed unrestored and its task processed nothing to the end of the run",
    "streams_unfinished_restore_max_ms": "the longest of those, from its start to the instance's close or end",
    "streams_rebalancing_ms": "time with live Streams instances and none RUNNING: the whole application stood still",
    "streams_task_moves": "active tasks that moved to another instance while the application ran (formation and teardown left out)",
    "streams_task_pause_max_ms": "the longest pause of a moved task: its old owner's last processing to its new owner's first",
    "streams_task_assignment_wait_max_ms": "the longest wait of a moved task for its new owner's assignment, from its old owner's last processing",
    "streams_task_restoration_max_ms": "the longest time a moved task's new owner took from its assignment to a restored store",
    "streams_standby_promotions": "moved tasks whose new owner held them as a standby (or a warm-up) replica",
    "streams_warmups": "standby copies placed beyond the configured num_standby_replicas: KIP-441 warm-ups (classic protocol)",
    "streams_output_records": "records of the Streams application's output topic, read committed after the run",
    "streams_output_duplicates": "output records repeating a result already in the output",
    "streams_output_missing": "results owed by acknowledged input records and absent from the output",
    "streams_output_extra": "output records whose result no acknowledged input owes (a stateful count above its key's records)",
    "closes_during_rebalance": "stops asked for while a rebalance that began before them was under way",
    "duplicates_redelivered": "the other duplicate processings: re-deliveries, each with its cause (the duplicates_<cause> figures)",
    "duplicates_commit_gap_max": "the largest gap (record offset + 1 − committed offset) of a re-delivery below its previous processor's commit; 1: commits of the last processed offset, not the next",
    "duplicate_ownership_ms": "total time, summed over partitions, during which ≥2 members each held the same partition",
    "duplicate_ownership_episodes": "maximal spans (per partition) of duplicate ownership",
    "duplicate_ownership_longest_ms": "longest span of duplicate ownership",
    "revocations_live": "partitions taken by a revoke callback from members that stay alive",
    "revocations_shutdown": "partitions revoked from a member that then stops without a new assignment",
    "needless_revocations": "revoked from m and given back to m in the same rebalance episode, nobody else owning it meanwhile",
    "partitions_lost": "partitions taken by a `lost` callback",
    "rebalance_episodes": "rebalance episodes of the running group (not its formation or teardown): first trigger to the last member's assignment",
    "rebalance_total_ms": "sum of the rebalance episodes' durations",
    "rebalance_max_ms": "longest rebalance episode",
    "partitions_moved": "partitions whose owner after a rebalance episode differs from their owner before it, summed",
    "partitions_moved_min": "the fewest moves a balanced assignment needed in each episode, summed (a perfectly sticky assignor)",
    "assignment_spread_max": "largest max - min partitions per live member after any rebalance episode",
    "partition_pauses": "availability gaps of at least min_pause_ms: records of the partition wait and nobody processes it",
    "partition_pauses_open": "gaps still open when the drain ended (counted with their length so far)",
    "partition_pause_total_ms": "sum of every partition pause, over partitions",
    "p50_partition_pause_ms": "median single partition pause",
    "p99_partition_pause_ms": "99th percentile of single partition pauses",
    "max_partition_pause_ms": "longest single partition pause (from the later of the last processing and the first waiting record's produce time to the next processing)",
    "max_partition_pause_total_ms": "largest per-partition sum of pauses",
    "p50_rebalance_pause_ms": "median single pause caused by a rebalance episode",
    "max_rebalance_pause_ms": "longest single pause caused by a rebalance episode",
    "max_freeze_pause_ms": "longest single pause caused by a frozen (SIGSTOP) member",
    "max_member_partition_pause_ms": "longest single pause caused by a member cut off from the brokers (partition step)",
    "hung_members": "members that kept a partition with records waiting and processed nothing for at least hang_ms, "
                    "with no rebalance, fault, stop or saturated host to explain it",
    "max_hang_ms": "longest such hang",
    "max_death_pause_ms": "longest single pause caused by a member's death (kill, crash, SIGKILL after a stop timeout)",
    "max_stop_pause_ms": "longest single pause whose partition's last owner stopped cleanly (a stop, clean bounce or scale-in): the wait for its replacement or for the rebalance its leaving starts",
    "max_broker_fault_pause_ms": "longest single pause during a broker fault (stop, kill, pause, partition, latency) or within 5 s of its recovery, no member fault or stop explaining it first",
    "max_host_saturated_pause_ms": "longest single pause no fault, death, stop or rebalance explains, across which the host was saturated",
    "pauses_on_saturated_host": "single pauses across which the host was saturated (saturated intervals covering at least 90 % of the pause), whatever their cause",
    "host_samples": "host samples recorded (CPU, run queue, memory pressure, per-role CPU; 4 a second)",
    "host_saturated_ms": "time in the run during which the host was saturated (CPU busy ≥ 95 % of all cores, or a task waiting for a CPU ≥ 50 % of the time, or memory stalls ≥ 10 %)",
    "host_saturated_pct": "share of the sampled run time during which the host was saturated",
    "host_cpu_busy_mean_pct": "mean CPU busy over the run, share of all cores (steal counted as busy)",
    "host_cpu_steal_max_pct": "highest share of CPU time the hypervisor took in one sample interval",
    "pauses_with_contributing_causes": "single pauses with more than one cause: besides the primary, another cause held across them too (e.g. a bounce while a broker was slowed)",
    "max_unexplained_pause_ms": "longest single pause that no fault, death, stop, rebalance or saturated host explains",
    "startup_wait_max_ms": "longest wait before a partition's first processing (kept out of the pause figures)",
    "max_stop_the_world_ms": "longest span during which no partition was processed although records waited",
    "member_pause_total_ms": "sum over live members' revocations: from the revoke to the member's next assignment",
    "max_member_pause_ms": "longest member pause: from a live member's revoke to its next assignment",
    "stop_the_world_ms": "total time during which no partition is processed although records wait",
    "throughput_mean_rps": "records_processed / seconds between the first and last processed event",
    "throughput_max_rps": "busiest one-second bucket",
    "lag_max_records": "max over seconds of cumulative acked − cumulative uniquely processed",
    "broker_rebalances": "classic `Preparing to rebalance` → `Stabilized` pairs of the run's own group, inside the run's time window",
    "broker_rebalance_total_ms": "sum of those broker-side pairs' durations",
    "broker_rebalance_max_ms": "longest of those broker-side pairs",
    "broker_epoch_bumps": "consumer-protocol `Bumped group epoch` lines in broker logs",
    "members_fenced": "consumer-protocol `Member .. fenced` lines in broker logs",
    "broker_assignment_max_ms": "longest consumer-protocol target assignment computation the coordinator logged",
    "commit_failures": "offset commits the clients reported as failed (committed events with an error)",
    "client_errors": "error events in member histories (e.g. INCONSISTENT_GROUP_PROTOCOL, fencing)",
    "effects_stored": "distinct records whose effect the user's store holds after the run (the scenario's effects command)",
    "effects_missing": "acknowledged records whose effect is not in the user's store after the run",
    "effects_duplicated": "effects stored more than once (lines beyond the first per record)",
    "handler_errors": "batches the user's handler raised on (not processed; the member skipped them or stopped)",
    "handler_error_records": "records in the batches the user's handler raised on",
    "member_crashes": "processes of the user's program that ended by themselves with a failure (exit code or signal)",
    "member_restarts": "new incarnations the restart policy started after a crash",
    "crash_loops": "partitions the program died on at least twice in a row with nothing of them processed in between",
    # share groups (KIP-932): a delivery = one record acquired by one member in one poll
    "share_members": "share-group members (group_protocol share)",
    "share_members_acquiring": "share members that acquired at least one record",
    "share_acquisitions": "deliveries: records acquired, one per record per poll, redeliveries included",
    "share_records_acquired": "distinct records delivered at least once",
    "share_redeliveries": "deliveries after a record's first",
    "share_redeliveries_released": "redeliveries after the previous holder released the record",
    "share_redeliveries_lock_expired": "redeliveries after the previous holder, alive and not cut off, let its lock run out",
    "share_redeliveries_member_frozen": "redeliveries after the previous holder was cut off (SIGSTOP, stall, partition) while its lock ran",
    "share_redeliveries_member_left": "redeliveries after the previous holder closed while holding the record",
    "share_redeliveries_member_killed": "redeliveries after the previous holder died while holding the record",
    "share_redeliveries_unjudged": "redeliveries whose cause cannot be judged (lock duration unknown)",
    "share_redelivery_latency_p50_ms": "median, over redeliveries after a holder was killed or frozen, of the time from its acquisition to the next",
    "share_redelivery_latency_max_ms": "longest such time from a killed or frozen holder's acquisition to the next (about the lock duration)",
    "share_redelivery_after_fault_max_ms": "longest time from the holder's kill or freeze to the record's next acquisition",
    "share_delivery_count_max": "highest delivery count the broker gave",
    "share_concurrent_acquisitions": "records acquired while the previous delivery's lock was still valid (anomaly)",
    "share_redelivered_after_completion": "records acquired again after the broker took their accept or reject (anomaly)",
    "share_late_acks_accepted": ("acknowledgements sent after their lock expired that the broker took while no "
                                 "later delivery had completed the record (anomaly: it still tracked the record "
                                 "and must refuse)"),
    "share_late_acks_noop": ("acknowledgements sent after their lock expired that the broker took after a later "
                             "delivery's accept or reject had completed the record (Kafka answers success and "
                             "changes nothing)"),
    "share_late_acks_rejected": "acknowledgements sent after their lock expired that the broker refused",
    "share_ack_failures": "acknowledgements the broker refused",
    "share_acks_without_acquisition": "acknowledgements of a record their member had not acquired before",
    "share_records_accepted": "distinct records with an accept the broker took",
    "share_records_archived": "distinct records rejected, or at the delivery-count limit when released or expired, not accepted",
    "share_records_acked": "records the brokers acknowledged to a producer on a share group's topics",
    "share_records_lost": ("of those, neither accepted nor archived by the end of the final drain, nor completed "
                           "by an acknowledgement its killed member never heard back about"),
    "share_records_unanswered": ("records whose accept or reject a member sent just before it was killed, with no "
                                 "answer, never delivered again"),
    "share_records_completed_unanswered": ("of those, the ones below the share group's start offset at the drain's "
                                           "end: the broker took the acknowledgement (not lost)"),
    "share_throughput_rps": "share_records_accepted / seconds from the first acquisition to the last accept",
    "share_client_errors": "error events of share members",
}

_PHASES = {"": "all records", "_steady": "records outside bounces and rebalances", "_bounce": "records inside bounces and rebalances"}
_STATS = {"p50": "median", "p99": "99th percentile", "max": "maximum"}
for _phase, _over in _PHASES.items():
    for _stat, _word in _STATS.items():
        METRIC_DEFINITIONS[f"e2e_latency{_phase}_{_stat}_ms"] = f"{_word} end-to-end latency over {_over}: {_LATENCY}"

for _cause, _meaning in CAUSE_MEANINGS.items():
    if _cause != "concurrent":  # duplicates_concurrent has its own words above
        METRIC_DEFINITIONS[metric_name(_cause)] = f"duplicate processings of cause {_cause}: {_meaning}"


def definition(name: str) -> str:
    """The definition of a metric, or a plain statement that none is recorded (a newer analysis)."""
    return METRIC_DEFINITIONS.get(name, "no definition recorded in testbed.report.definitions")


# Metrics shown side by side in comparisons, the answer first (what a bounce costs: ANSWER_METRICS);
# True when a larger value is better.
KEY_METRICS: dict[str, bool] = {
    "max_partition_pause_ms": False,
    "stop_the_world_ms": False,
    "duplicates_concurrent": False,
    "duplicates_redelivered": False,
    "lost_records": False,
    "revocations_live": False,
    "duplicates_total": False,
    "duplicate_ownership_ms": False,
    "needless_revocations": False,
    "rebalance_episodes": False,
    "rebalance_total_ms": False,
    "p50_partition_pause_ms": False,
    "max_rebalance_pause_ms": False,
    "e2e_latency_p99_ms": False,
    "e2e_latency_bounce_p99_ms": False,
    "throughput_mean_rps": True,
    "lag_max_records": False,
}
ANSWER_METRICS: tuple[str, ...] = tuple(KEY_METRICS)[:6]
# A Kafka Streams application's answers, key rows of a comparison whose runs have Streams instances.
STREAMS_KEY_METRICS: dict[str, bool] = {
    "streams_task_pause_max_ms": False,
    "streams_task_assignment_wait_max_ms": False,
    "streams_task_restoration_max_ms": False,
    "streams_restored_records": False,
    "streams_task_moves": False,
    "streams_standby_promotions": True,
    "streams_rebalancing_ms": False,
    "streams_output_duplicates": False,
    "streams_output_missing": False,
    "streams_restorations_unfinished": False,
}
