"""Hand-built histories whose answers are worked out in the comments (times in ms, topic ``t``)."""

from __future__ import annotations

from pathlib import Path

from testbed.history.events import Ack, Action, ProduceFailed, ClientError, Committed, CommittedOffset, HandlerError, HandlerRange

from .builder import TOPIC, HistoryBuilder


def eager_rolling_bounce(root: Path) -> Path:
    """A alone with 4 partitions; B joins (eager: A gives back all, keeps 0,1), then B leaves.

    Needless revocations: 0,1 at 6000 and 0,1 at 12500 (4). Live revocations: 4 + 2; shutdown: B's 2
    at 11900 and A's 4 in teardown. Every partition pauses 3000 ms in each of the two bounce episodes
    (last processing before the revoke is older than the produce time of the next batch), so each
    partition's total is 6000 and the group stops the world for 3000 ms twice.
    """
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100)
    h.assigned("A", 1000, [0, 1, 2, 3])
    for ts in (2000, 3000, 4000):
        for p in range(4):
            h.produce_and_process("A", ts, p)
    h.harness(Action.BOUNCE_START, 4500, "B")
    h.started("B", 5000)
    h.revoked("A", 6000, [0, 1, 2, 3])
    h.assigned("A", 7000, [0, 1])
    h.assigned("B", 7000, [2, 3])
    for p, m in ((0, "A"), (1, "A"), (2, "B"), (3, "B")):
        h.produce_and_process(m, 8000, p, latency=3000)  # produced at 5000, waited for the rebalance
        for ts in (9000, 10000, 11000):
            h.produce_and_process(m, ts, p)
    h.revoked("B", 11900, [2, 3])
    h.stopped("B", 12000)
    h.revoked("A", 12500, [0, 1])
    h.assigned("A", 13500, [0, 1, 2, 3])
    h.harness(Action.BOUNCE_END, 14000, "B")
    for p in range(4):
        h.produce_and_process("A", 15000, p, latency=3000)  # produced at 12000
    h.harness(Action.DRAIN_START, 16000)
    h.harness(Action.DRAIN_END, 17000)
    h.revoked("A", 18000, [0, 1, 2, 3])
    h.stopped("A", 18100)
    h.harness(Action.RUN_END, 19000)
    h.close()
    return root


def cooperative_join(root: Path, *, failed_commit: bool = False, handler_error: bool = False,
                     c_ahead_ms: int = 0, c_uncertainty_ms: float = 0.4) -> Path:
    """A has 0,1 and B has 2,3 (cooperative-sticky); C joins and takes 1 and 3. Only 1 and 3 pause,
    each for 1000 ms (produced at 11000, processed by C at 12000; last processing before was 10000).

    With ``failed_commit``, A's commit on revoking 1 is refused, C logs a join error, and A stops at the
    end of the run without another assignment (its revoke of 1 is still a live member's: it kept 0). With
    ``handler_error``, B's handler raises on a batch of 7 records of partition 2 at 13200 and B skips it. With
    ``c_ahead_ms``, C ran on a node of a Ray cluster whose clock is that far ahead of the harness's, as measured at
    the start and the end (within ``c_uncertainty_ms``): C's events carry timestamps that much later, and put back
    on the harness's clock every figure is the same."""
    h = HistoryBuilder(root)
    coop = ("cooperative-sticky",)
    h.harness(Action.RUN_START, 0)
    if c_ahead_ms:
        h.ahead_ms["C"] = c_ahead_ms
        for ts, moment, measured in ((50, "start", c_ahead_ms + 0.3), (14900, "end", c_ahead_ms - 0.2)):
            h.harness(Action.NODE_CLOCK, ts, "node-2/abcdef01", moment=moment, offset_ms=measured,
                      uncertainty_ms=c_uncertainty_ms, exchanges=8)
        h.harness(Action.MEMBER_START, 10450, "C", slot=2, node="node-2/abcdef01")
    h.started("A", 100, assignors=coop)
    h.started("B", 200, assignors=coop)
    h.assigned("A", 1000, [0, 1])
    h.assigned("B", 1000, [2, 3])
    for ts in range(2000, 10001, 1000):
        for p, m in ((0, "A"), (1, "A"), (2, "B"), (3, "B")):
            h.produce_and_process(m, ts, p)
    h.harness(Action.BOUNCE_START, 10400, "C")
    h.started("C", 10500, assignors=coop)
    if failed_commit:
        h.member("A", Committed(ts_ms=10990, source="A", trigger="revoke", error="REBALANCE_IN_PROGRESS",
                                offsets=[CommittedOffset(topic=TOPIC, partition=1, offset=90)]))
        h.member("C", ClientError(ts_ms=10600, source="C", code="REBALANCE_IN_PROGRESS", message="rejoin"))
    h.revoked("A", 11000, [1])
    h.revoked("B", 11000, [3])
    h.assigned("C", 11500, [1, 3])
    for ts in (11000, 11500, 12000, 13000):  # the partitions that stay keep going: no stop-the-world
        h.produce_and_process("A", ts, 0)
        h.produce_and_process("B", ts, 2)
    for p in (1, 3):
        h.produce_and_process("C", 12000, p, latency=1000)
        h.produce_and_process("C", 13000, p)
    if handler_error:
        h.member("B", HandlerError(ts_ms=13200, source="B", error_type="sqlite3.OperationalError",
                                   message="database is locked", records=7, action="skip",
                                   ranges=[HandlerRange(topic=TOPIC, partition=2, first_offset=130, last_offset=136,
                                                        count=7)]))
    h.harness(Action.BOUNCE_END, 13500, "C")
    h.harness(Action.DRAIN_END, 14000)
    if failed_commit:
        h.stopped("A", 14500)
    h.harness(Action.RUN_END, 15000)
    h.close()
    return root


def paused_zombie(root: Path) -> Path:
    """A (p0) is paused past its session timeout; B takes p0 at 15000 while A still holds it until its
    lost callback at 26000: duplicate ownership 11000 ms (A,B). B re-processes 20-29 (A processed them
    before the pause, committed only up to 20) inside that span, and A, resumed, processes its in-flight
    30-39 that B already did: 20 concurrent duplicates, no re-delivery, nothing lost."""
    h = HistoryBuilder(root)
    coop = ("cooperative-sticky",)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100, assignors=coop, commit_mode="sync")
    h.started("B", 200, assignors=coop, commit_mode="sync")
    h.assigned("A", 1000, [0])
    h.assigned("B", 1000, [1])
    h.produce_and_process("A", 2000, 0)  # 0-9
    h.produce_and_process("A", 3000, 0)  # 10-19
    h.committed("A", 3001, 0, 20, trigger="batch")
    h.produce_and_process("A", 4000, 0)  # 20-29, its commit never happens
    h.harness(Action.MEMBER_PAUSE, 4500, "A", session_timeout_ms=10000)
    first, last = h.produce(0, 10, 5000)  # 30-39
    for ts in range(2000, 28001, 1000):
        h.produce_and_process("B", ts, 1)
    h.assigned("B", 15000, [0])
    h.processed("B", 15500, 0, 20, 29, 3950)
    h.processed("B", 16000, 0, first, last, 5000)
    h.harness(Action.MEMBER_RESUME, 25000, "A")
    h.processed("A", 25100, 0, first, last, 5000)
    h.lost("A", 26000, [0])
    h.harness(Action.DRAIN_END, 28500)
    h.harness(Action.RUN_END, 29000)
    h.close()
    return root


def hard_kill_auto_commit(root: Path) -> Path:
    """A (0,1) is SIGKILLed at 9500 after auto-committing offset 40 at 5000 and processing to 79;
    after the session timeout B (2,3) takes everything and re-processes 40-79 of p0 and p1: 80
    re-deliveries, no concurrent duplicates, no duplicate ownership, nothing lost."""
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100, commit_mode="auto")
    h.started("B", 200, commit_mode="auto")
    h.assigned("A", 1000, [0, 1])
    h.assigned("B", 1000, [2, 3])
    produced: dict[int, list[tuple[int, int, int]]] = {0: [], 1: []}
    for ts in range(2000, 9001, 1000):
        for p, m in ((0, "A"), (1, "A"), (2, "B"), (3, "B")):
            first, last = h.produce_and_process(m, ts, p)
            if m == "A":
                produced[p].append((first, last, ts - 50))
        if ts == 5000:
            h.committed("A", 5001, 0, 40)
            h.committed("A", 5001, 1, 40)
    h.harness(Action.MEMBER_KILL, 9500, "A")
    h.revoked("B", 19500, [2, 3])
    h.assigned("B", 20000, [0, 1, 2, 3])
    for p in (0, 1):
        for first, last, pts in produced[p][4:]:  # 40-79 again
            h.processed("B", 20100, p, first, last, pts)
    h.harness(Action.DRAIN_END, 22000)
    h.harness(Action.RUN_END, 23000)
    h.close()
    return root


def one_record_lost(root: Path, *, acks: bool = True, torn: bool = True, unlocated: int = 0,
                    drained: bool = True, undelivered: int | None = None) -> Path:
    """A processes 0-9 of p0; offset 10 is acked at 5000 and never processed before the drain ends.
    ``torn``: the ack log and A's log end with a half-written line (a writer killed mid-write).
    ``unlocated``: that many further acks delivered without an offset (an idempotent producer's retry).
    ``drained=False``: the run stops (an error, an interruption) before its drain.
    ``undelivered``: the load's start names producer-0, whose log of the records it gave up on holds that many
    (produced from 6000 on, every 100 ms; a torn last line after them); None: no load_start (a hand-made run)."""
    h = HistoryBuilder(root, acks=acks)
    h.harness(Action.RUN_START, 0)
    if undelivered is not None:
        h.harness(Action.LOAD_START, 50, "producer", producers=["producer-0"])
        log = h.run.produce_failure_log("producer-0")
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(ProduceFailed(ts_ms=14_000, source="producer-0", topic="t", key="k", seq=200 + i,
                                             produce_ts_ms=6_000 + 100 * i, error="_MSG_TIMED_OUT").model_dump_json()
                               + "\n" for i in range(undelivered)) + '{"ts_ms":14001,"name":"produce_fa')
    h.started("A", 100)
    h.assigned("A", 1000, [0])
    h.produce_and_process("A", 2000, 0)
    h.produce(0, 1, 5000)
    if drained:
        h.harness(Action.DRAIN_END, 8000)
    h.stopped("A", 8500)
    h.harness(Action.RUN_END, 9000)
    run = h.close()
    for seq in range(unlocated):
        with run.ack_log("producer-0").open("a") as f:
            f.write(Ack(ts_ms=6000, source="producer-0", topic="t", partition=0, offset=None, key="k", seq=100 + seq,
                        produce_ts_ms=6000).model_dump_json() + "\n")
    if torn:
        for path in (run.member_log("A"), *([run.ack_log("producer-0")] if acks else [])):
            with path.open("ab") as f:
                f.write(b'{"ts_ms":9999,"source":"A","name":"processed","topic":"t","partition":0,"first_off')
    return root


def stop_timeout_kill(root: Path) -> Path:
    """A (p0) is asked to stop at 5000, hangs and is SIGKILLed at 8000 (harness ``member_exit`` with cause
    ``stop_timeout``; A never writes ``stopped``); B takes p0 at 9000. Without the exit record A would own p0
    to the run's end (30000) and overlap B for 21000 ms."""
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100)
    h.started("B", 200)
    h.assigned("A", 1000, [0])
    h.assigned("B", 1000, [1])
    for ts in range(2000, 5001, 1000):
        h.produce_and_process("A", ts, 0)
    h.harness(Action.MEMBER_STOP, 5000, "A")
    h.harness(Action.MEMBER_EXIT, 8000, "A", cause="stop_timeout", exit_code=-9, signal="SIGKILL")
    h.revoked("B", 8500, [1])
    h.assigned("B", 9000, [0, 1])
    h.produce_and_process("B", 10000, 0, latency=4000)  # produced at 6000, waited through the hang
    for ts in range(2000, 12001, 1000):
        h.produce_and_process("B", ts, 1)
    h.harness(Action.DRAIN_END, 28000)
    h.harness(Action.RUN_END, 30000)
    h.close()
    return root


def _p0_stalls_from_5050_to_7500(h: HistoryBuilder) -> None:
    """One member, steady traffic every 250 ms on p0 and p1; p0 is not processed from 5000 to 7500 although a
    record produced at 5050 waits; p1 keeps going, so the group never stops."""
    h.harness(Action.RUN_START, 0)
    h.started("A", 100)
    h.assigned("A", 1000, [0, 1])
    for ts in range(2000, 10001, 250):
        h.produce_and_process("A", ts, 1, n=2)
        if ts <= 5000 or ts >= 7500:
            h.produce_and_process("A", ts, 0, n=2, latency=ts - 5050 if ts == 7500 else 50)


def broker_restart_stall(root: Path) -> Path:
    """p0's stall (``_p0_stalls_from_5050_to_7500``) while broker-1 (its leader) is stopped at 5000 and started
    at 6000: one 2450 ms pause of cause broker_fault."""
    h = HistoryBuilder(root)
    _p0_stalls_from_5050_to_7500(h)
    h.harness(Action.BROKER_STOP, 5000, "broker-1")
    h.harness(Action.BROKER_START, 6000, "broker-1")
    h.harness(Action.DRAIN_END, 11000)
    h.harness(Action.RUN_END, 12000)
    h.close()
    return root


def host_saturated_stall(root: Path) -> Path:
    """p0's stall without any fault, while the host is saturated (CPU 99 % busy) from 4500 to 8000 and quiet
    (30 %) otherwise, sampled every 250 ms from 250 to 12000; the host file ends with a torn line (a kill
    mid-write). One 2450 ms pause of cause host_saturated."""
    h = HistoryBuilder(root)
    _p0_stalls_from_5050_to_7500(h)
    for ts in range(250, 12001, 250):
        h.host_sample(ts, 99.0 if 4_500 < ts <= 8_000 else 30.0)
    h.harness(Action.DRAIN_END, 11000)
    h.harness(Action.RUN_END, 12000)
    h.close()
    with h.run.host_log.open("a") as f:
        f.write('{"ts_ms":12250,"name":"host_sample","interval_ms":250,"cores":2,"cpu_busy_pct":9')
    return root


def ack_files(root: Path, *, empty: bool = False, missing: bool = False, torn_produce_ts: bool = False) -> Path:
    """A processes 0-9 of p0. ``empty``: the only ack log exists but holds nothing. ``missing``: the load
    names two producers and producer-1 has no ack log. ``torn_produce_ts``: the ack log ends with an ack
    of offset 10 cut in the middle of its produce time (a kill mid-write): it must not count."""
    h = HistoryBuilder(root, acks=not empty)
    h.harness(Action.RUN_START, 0)
    h.harness(Action.LOAD_START, 50, "producer", producers=["producer-0", "producer-1"] if missing else ["producer-0"])
    h.started("A", 100)
    h.assigned("A", 1000, [0])
    h.produce_and_process("A", 2000, 0)
    h.harness(Action.DRAIN_END, 8000)
    h.stopped("A", 8500)
    h.harness(Action.RUN_END, 9000)
    run = h.close()
    if empty:
        run.ack_log("producer-0").write_bytes(b"")
    if torn_produce_ts:
        with run.ack_log("producer-0").open("ab") as f:
            f.write(b'{"ts_ms":3001,"source":"producer-0","name":"ack","topic":"t","partition":0,"offset":10,'
                    b'"key":"k0","seq":10,"produce_ts_ms":30')
    return root


def clock_step(root: Path) -> Path:
    """A's wall clock jumps 5 s forward between its second and third batch while its monotonic clock runs on."""
    from testbed.history.events import Processed

    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100)
    h.assigned("A", 1000, [0])
    for wall, mono in [(2000, 2000), (3000, 3000), (9000, 4000)]:
        first, last = h.produce(0, 10, wall - 50)
        h._w(h.run.member_log("A")).write(Processed(ts_ms=wall, mono_ms=mono, source="A", topic=TOPIC, partition=0,
                                                    first_offset=first, last_offset=last, count=10))
    h.harness(Action.DRAIN_END, 10000)
    h.harness(Action.RUN_END, 11000)
    h.close()
    return root


def latency_over_time(root: Path) -> Path:
    """A alone on 0 and 1. Second 2 processes four batches 10, 20, 30 and 40 ms after their produce time
    (p50 25, p99 30 + 0.97 * 10 = 39.7, max 40); second 3 one batch without a produce time (left out);
    second 4 one batch 100 ms after it. The harness paused and resumed A in between."""
    h = HistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.started("A", 100)
    h.assigned("A", 1000, [0, 1])
    for ts, partition, latency in ((2000, 0, 10), (2100, 1, 20), (2500, 0, 30), (2999, 1, 40)):
        first, last = h.produce(partition, 5, ts - latency)
        h.processed("A", ts, partition, first, last, ts - latency)
    h.harness(Action.MEMBER_PAUSE, 3000, "A", session_timeout_ms=45000)
    first, last = h.produce(0, 5, 2900)
    h.processed("A", 3500, 0, first, last, None)
    h.harness(Action.MEMBER_RESUME, 3600, "A")
    h.produce_and_process("A", 4000, 1, latency=100)
    h.harness(Action.DRAIN_END, 5000)
    h.stopped("A", 5100)
    h.harness(Action.RUN_END, 6000)
    h.close()
    return root
