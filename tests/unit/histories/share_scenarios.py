"""Hand-built share-group histories whose answers are worked out in the docstrings (times in ms, topic ``t``)."""

from __future__ import annotations

from pathlib import Path

from testbed.history.events import Ack, Action

from .share_builder import ShareHistoryBuilder


def share_faults(root: Path, *, config: bool = True) -> Path:
    """Five share members of group ``sg`` on partition 0; lock 30,000 ms, delivery-count limit 3, earliest.
    15 records, offsets 0-14, produced at 900.

    - 0-4: A at 1000, accepted (answer 1100). 4 again: D at 20,000 (broker count 2): after_completion.
    - 5: B at 1000, released (1200); A at 1300 (count 2): released, 300 ms later; A accepts it.
    - 6: B at 1000; B killed at 2000; E at 31,200 (count 2): member_killed, 30,200 ms after B's
      acquisition, 29,200 ms after the kill; E accepts it.
    - 7: C at 3000; C paused 3500-40,000; A at 33,500 (count 2): member_frozen, 30,500 ms after C's
      acquisition, 30,000 after the pause; A accepts it. C, resumed, accepts it sent at 40,100: late,
      refused (INVALID_RECORD_STATE).
    - 8: A at 4000 (lock to 34,000); D at 10,000 (count 2): concurrent, 24,000 ms of A's lock left; both
      accept it (A at 10,500, D at 10,600).
    - 9: A at 5000 (lock to 35,000), accepted sent at 36,000, answer 36,010: a late ack the broker took.
    - 10: never acquired: lost.
    - 11: A at 6000, broker count 3 (the limit), released (6100): archived.
    - 12: A at 6000, rejected (6100): archived.
    - 13: A at 7000, never acknowledged; E at 37,200 (count 2): lock_expired; E never acknowledges and
      its lock runs to 67,200, past the drain's end (45,000): lost.
    - 14: D at 20,500; D asked to stop at 21,000 (stopped 21,200); A at 21,500 (count 1: the broker gave
      the count back): member_left; A accepts it.

    21 acquisitions of 14 records, 7 redeliveries (one per reason); fault latencies 30,200 and 30,500
    (p50 30,350, max 30,500; after the fault at most 30,000); accepted 0-9 and 14 (11), archived 11 and 12,
    lost 10 and 13. With ``config=False`` the harness never says the group's settings.
    """
    h = ShareHistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    if config:
        h.share_config(0, lock_ms=30_000, limit=3)
    h.produce(0, 15, 900)
    for i, m in enumerate("ABCDE"):
        h.share_started(m, 100 + 10 * i)
    h.acquired("A", 1000, 0, [0, 1, 2, 3, 4])
    h.acked("A", 1100, 0, [0, 1, 2, 3, 4], sent=1095)
    h.acquired("B", 1000, 0, [5, 6])
    h.acked("B", 1200, 0, [5], "release", sent=1195)
    h.acquired("A", 1300, 0, [5], [2])
    h.acked("A", 1400, 0, [5], sent=1395)
    h.harness(Action.MEMBER_KILL, 2000, "B")
    h.harness(Action.MEMBER_EXIT, 2010, "B", cause="killed")
    h.acquired("C", 3000, 0, [7])
    h.harness(Action.MEMBER_PAUSE, 3500, "C")
    h.acquired("A", 4000, 0, [8])
    h.acquired("A", 5000, 0, [9])
    h.acquired("A", 6000, 0, [11, 12], [3, 1])
    h.acked("A", 6100, 0, [11], "release", sent=6095)
    h.acked("A", 6100, 0, [12], "reject", sent=6095)
    h.acquired("A", 7000, 0, [13])
    h.acquired("D", 10_000, 0, [8], [2])
    h.acked("A", 10_500, 0, [8], sent=10_495)
    h.acked("D", 10_600, 0, [8], sent=10_595)
    h.acquired("D", 20_000, 0, [4], [2])
    h.acquired("D", 20_500, 0, [14])
    h.harness(Action.MEMBER_STOP, 21_000, "D")
    h.stopped("D", 21_200)
    h.harness(Action.MEMBER_EXIT, 21_300, "D", cause="stopped")
    h.acquired("A", 21_500, 0, [14])
    h.acked("A", 21_600, 0, [14], sent=21_595)
    h.acquired("E", 31_200, 0, [6], [2])
    h.acked("E", 31_300, 0, [6], sent=31_295)
    h.acquired("A", 33_500, 0, [7], [2])
    h.acked("A", 33_600, 0, [7], sent=33_595)
    h.acked("A", 36_010, 0, [9], sent=36_000)
    h.acquired("E", 37_200, 0, [13], [2])
    h.harness(Action.MEMBER_RESUME, 40_000, "C")
    h.acked("C", 40_150, 0, [7], sent=40_100, error="INVALID_RECORD_STATE")
    h.harness(Action.DRAIN_START, 44_000)
    h.harness(Action.DRAIN_END, 45_000)
    h.harness(Action.RUN_END, 46_000)
    h.close()
    return root


def share_kill_unanswered(root: Path, *, start: int | None = 6, offsets: bool = True) -> Path:
    """Issue 33's share-kill loss: a member killed between sending acknowledgements and their answer. Share
    members A and B of group ``sg`` on partition 0; lock 3000 ms, limit 5, earliest; records 0-5 produced at 900.

    - 0-1: A acquires them at 1000, accepts them (answer 1030). Settled.
    - 2-3: A acquires them at 1100, sends their accept at 1120 (``share_ack_sent``), is killed at 1122: no answer.
      Never delivered again: the broker took the accept. Completed unanswered when the brokers' start offset
      (``start``, harness ``share_group_offsets`` at 20,000) is above 3, else lost; with ``offsets=False`` the
      harness never asked, so whether they were lost is unknown.
    - 4: A acquires it at 1100 too and sends nothing for it (its processing had not reached it); B acquires it at
      7200 (count 2: member_killed, after the 6 s share session) and accepts it (7300).
    - 5: B acquires it at 7200 and accepts it (7300).

    The analysis before share_ack_sent counted 2 and 3 lost (share_records_lost 2)."""
    h = ShareHistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.share_config(0, lock_ms=3000, limit=5)
    h.produce(0, 6, 900)
    h.share_started("A", 100)
    h.share_started("B", 110)
    h.acquired("A", 1000, 0, [0, 1])
    h.ack_sent("A", 1020, 0, [0, 1])
    h.acked("A", 1030, 0, [0, 1], sent=1020)
    h.acquired("A", 1100, 0, [2, 3, 4])
    h.ack_sent("A", 1120, 0, [2, 3])
    h.harness(Action.MEMBER_KILL, 1122, "A", when="acks_in_flight")
    h.harness(Action.MEMBER_EXIT, 1130, "A", cause="killed")
    h.acquired("B", 7200, 0, [4, 5], [2, 1])
    h.ack_sent("B", 7290, 0, [4, 5])
    h.acked("B", 7300, 0, [4, 5], sent=7290)
    h.harness(Action.DRAIN_START, 8000)
    h.harness(Action.DRAIN_END, 19_000)
    if offsets:
        h.share_offsets(20_000, {"t-0": start})
    h.harness(Action.RUN_END, 21_000)
    h.close()
    return root


def eager_bounce_beside_a_share_group(root: Path) -> Path:
    """scenarios.eager_rolling_bounce (consumer group g on topic t), and beside it share group ``sq`` on topic
    ``q``, started at the log's end (``auto_offset_reset`` latest), whose members the consumer-group figures
    must not see: S1 starts at 300, S2 at 5200 (inside B's bounce), S2 is killed at 12,200 (inside B's
    leaving). Records q-0 0-5 are produced at 500; S1 acquires 2-5 at 1000 (0 and 1 were written before the
    group's start: not expected of it), accepts 2-4 (1100) and never acknowledges 5, whose lock (30,000 ms)
    outlasts the drain (17,000): 4 records expected, 3 accepted, 1 lost, nothing archived."""
    from .scenarios import eager_rolling_bounce

    eager_rolling_bounce(root)
    h = ShareHistoryBuilder(root)
    h.share_config(0, lock_ms=30_000, limit=5, reset="latest", group="sq")
    w = h._w(h.run.ack_log("producer-1"))
    for off in range(6):
        w.write(Ack(ts_ms=501, source="producer-1", topic="q", partition=0, offset=off, key="kq", seq=off,
                    produce_ts_ms=500))
    h.share_started("S1", 300, group="sq", topics=("q",))
    h.share_started("S2", 5200, group="sq", topics=("q",))
    h.acquired("S1", 1000, 0, [2, 3, 4, 5], topic="q")
    h.acked("S1", 1100, 0, [2, 3, 4], topic="q")
    h.harness(Action.MEMBER_KILL, 12_200, "S2")
    h.harness(Action.MEMBER_EXIT, 12_210, "S2", cause="killed")
    h.close()
    return root


def share_late_acks(root: Path, *, anomalies: bool = True) -> Path:
    """Late acknowledgements the broker took: no-ops after another delivery completed the record, and
    anomalies. Share members A and B of group ``sg`` on partition 0; lock 10,000 ms, limit 5, earliest.
    A acquires 0-5 at 1000 (locks to 11,000) and is paused 2000-12,900; B acquires 0-4 at 12,000 (broker
    count 2: member_frozen, 11,000 ms after A's acquisition, 10,000 after the pause). Resumed, A accepts
    0, 1, 2, 4 and 5 sent at 13,000 (answer 13,010, error null: late, taken) and 3 (answer 13,010, refused).

    - 0: B accepts it first (answer 12,100): A's late accept is a no-op; the record is B's, accepted.
    - 1: B rejects it first (answer 12,100): A's late accept is a no-op; the record is archived, not
      accepted (a late success is not the record's acceptance).
    - 2: B's accept answered at 13,010 too: a race, either answer legitimate: a no-op.
    - 3: B accepts it (12,100); A's late accept refused (INVALID_RECORD_STATE): share_late_acks_rejected.
    - 4: B accepts it answered at 13,020, after A's late accept was taken: an anomaly (B held it).
    - 5: nobody else acquired it: A's late accept taken while the broker still tracked it: an anomaly.

    Late acks taken: 2 anomalies (4, 5), 3 no-ops (0, 1, 2); refused 1 (3). 11 acquisitions of 6 records;
    accepted 0, 2, 3, 4, 5 (5, the last accept taken answered at 13,020), archived 1, lost none. With
    ``anomalies=False`` only records 0-3 exist: 8 acquisitions of 4 records, 3 no-ops, 1 refused, no anomaly,
    accepted 0, 2, 3 (the last at 13,010), archived 1.
    """
    h = ShareHistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.share_config(0, lock_ms=10_000, limit=5)
    n = 6 if anomalies else 4
    h.produce(0, n, 900)
    h.share_started("A", 100)
    h.share_started("B", 110)
    h.acquired("A", 1000, 0, list(range(n)))
    h.harness(Action.MEMBER_PAUSE, 2000, "A")
    h.acquired("B", 12_000, 0, list(range(min(n, 5))), [2] * min(n, 5))
    h.acked("B", 12_100, 0, [0, 3], sent=12_095)
    h.acked("B", 12_100, 0, [1], "reject", sent=12_095)
    h.harness(Action.MEMBER_RESUME, 12_900, "A")
    h.acked("A", 13_010, 0, [0, 1, 2, 4, 5] if anomalies else [0, 1, 2], sent=13_000)
    h.acked("A", 13_010, 0, [3], sent=13_000, error="INVALID_RECORD_STATE")
    h.acked("B", 13_010, 0, [2], sent=13_000)
    if anomalies:
        h.acked("B", 13_020, 0, [4], sent=13_015)
    h.harness(Action.DRAIN_START, 20_000)
    h.harness(Action.DRAIN_END, 21_000)
    h.harness(Action.RUN_END, 22_000)
    h.close()
    return root


def share_handed_over_late(root: Path) -> Path:
    """A Java share member frozen between fetching records and poll() returning them. Members A and B of group
    ``sg``, lock 10,000 ms. A is paused 2000-15,000 with offsets 0 and 1 fetched (not yet returned by poll:
    no event). B acquires both at 12,500 with broker count 2 and accepts them (answer 12,600). Resumed, A's
    poll returns 0 and 1 at 15,010 with count 1, and A accepts them (sent 15,020, answer 15,030, taken).

    The lower count says A's delivery came first: acquired by 12,500 (its lock expired by then, so A's accept is
    late) and at the latest 2500 (one lock before). B's delivery is the second, reason member_frozen, 10,000 ms
    after A's latest acquisition; A's late accepts are no-ops after B's completion; nothing was delivered
    after completion, nothing is concurrent; both records accepted (by B)."""
    h = ShareHistoryBuilder(root)
    h.harness(Action.RUN_START, 0)
    h.share_config(0, lock_ms=10_000, limit=5)
    h.produce(0, 2, 900)
    h.share_started("A", 100)
    h.share_started("B", 110)
    h.harness(Action.MEMBER_PAUSE, 2000, "A")
    h.acquired("B", 12_500, 0, [0, 1], [2, 2])
    h.acked("B", 12_600, 0, [0, 1], sent=12_550)
    h.harness(Action.MEMBER_RESUME, 15_000, "A")
    h.acquired("A", 15_010, 0, [0, 1], [1, 1])
    h.acked("A", 15_030, 0, [0, 1], sent=15_020)
    h.harness(Action.DRAIN_START, 20_000)
    h.harness(Action.DRAIN_END, 21_000)
    h.harness(Action.RUN_END, 22_000)
    h.close()
    return root
