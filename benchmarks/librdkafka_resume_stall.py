"""Does librdkafka still stall the partitions a cooperative consumer keeps through an incremental rebalance?

docs/upstream/librdkafka-resume-without-wakeup.md: at every incremental assign or revoke, librdkafka pauses the
fetchers of *all* assigned partitions until the application's rebalance callback has run, then resumes them;
the resume does not wake the broker thread, which, having seen nothing to fetch, sleeps up to 1 s
(``rd_kafka_max_block_ms``). The partitions a member keeps then deliver nothing for up to a second although
KIP-429 promises they keep flowing; when every live member of a group hits it in the same rebalance, the group
stops (the 1-2 s stop-the-world of cooperative-sticky bounces in docs/findings.md).

This check needs no testbed runner: one program (run by ``--python``, so any confluent-kafka version in any
virtualenv can be checked, e.g. a testbed client venv under ``~/.cache/testbed``) holds consumer A on
cooperative-sticky, a producer writing to every partition all the time, and, each round, a consumer B that joins
(A revokes half its partitions: an incremental revoke) and leaves again (A gets them back: an incremental
assign). A short ``consume(timeout=0.05)`` loop keeps the program's own batching out of the figures. For each
rebalance event on A it measures the stall of the partitions A kept: from A's last delivery of one of them
before the callback to its first delivery of any of them after it (never, by the end: an open stall, counted).

Run: .venv/bin/python benchmarks/librdkafka_resume_stall.py [--rounds 10] [--python PATH] [--bootstrap HOST:PORT]
Prints each event; the last line is one JSON object {"client_version", "librdkafka_version", "events",
"stalled_events", "open_events", "stall_ms": [...], "max_stall_ms", "threshold_ms"}: ``stalled_events`` counts the rebalances
whose kept partitions delivered nothing for ``--threshold-ms`` (default 300 ms) or more while records waited (the
producer writes every partition every 20 ms, so a normal gap is 20-50 ms). With the bug, some rebalances stall
0.5 s or 1 s: the broker thread wakes at the answer of a fetch it had in flight (the broker holds it up to
``fetch.wait.max.ms``, 500 ms) or at its own 1 s timeout, whichever comes first; without it, none should.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import uuid

PARTITIONS = 12

# The probe, run by the interpreter under test: it imports only confluent_kafka and the standard library.
PROBE = r'''
import json, sys, threading, time, uuid
from confluent_kafka import Consumer, Producer, libversion, version
bootstrap, topic, rounds, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
group = "resume-stall-" + uuid.uuid4().hex[:8]
stop = threading.Event()

def produce():
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    while not stop.is_set():
        for p in range(partitions):
            producer.produce(topic, b"x", partition=p)
        producer.poll(0)
        time.sleep(0.02)
    producer.flush(10)

def settings():
    return {"bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": "cooperative-sticky",
            "auto.offset.reset": "latest", "enable.auto.commit": True, "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 500}

class Member:
    def __init__(self, name):
        self.name, self.owned, self.last, self.events, self.lock = name, set(), {}, [], threading.Lock()
        self.consumer = Consumer(settings())
        self.consumer.subscribe([topic], on_assign=self.on_assign, on_revoke=self.on_revoke)
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.running = True
        self.thread.start()

    def _rebalanced(self, kind, tps):
        """A callback: note when the partitions A keeps through it last delivered (the stall runs from there)."""
        with self.lock:
            changed = {tp.partition for tp in tps}
            kept = self.owned - changed if kind == "revoke" else set(self.owned)
            if kind == "revoke":
                self.owned -= changed
            else:
                self.owned |= changed
            delivered = [self.last[p] for p in kept if p in self.last]
            if kept and delivered:
                self.events.append({"kind": kind, "kept": sorted(kept), "last_before": max(delivered),
                                    "callback_at": time.monotonic(), "first_after": None})

    def on_assign(self, consumer, tps):
        self._rebalanced("assign", tps)

    def on_revoke(self, consumer, tps):
        self._rebalanced("revoke", tps)

    def loop(self):
        while self.running:
            for msg in self.consumer.consume(100, 0.05):
                if msg.error() is None:
                    now = time.monotonic()
                    with self.lock:
                        self.last[msg.partition()] = now
                        for event in self.events:
                            if event["first_after"] is None and msg.partition() in event["kept"] \
                                    and now > event["callback_at"]:
                                event["first_after"] = now
        self.consumer.close()

    def close(self):
        self.running = False
        self.thread.join(30)

def wait_until(check, timeout, what):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"probe: timed out waiting for {what}")
        time.sleep(0.05)

threading.Thread(target=produce, daemon=True).start()
a = Member("A")
wait_until(lambda: len(a.owned) == partitions and len(a.last) == partitions, 60, "A to consume every partition")
for r in range(rounds):
    time.sleep(2)
    b = Member("B")
    wait_until(lambda: len(a.owned) < partitions and len(b.owned) > 0, 60, f"round {r + 1}: B to join")
    time.sleep(3)
    b.close()
    wait_until(lambda: len(a.owned) == partitions, 60, f"round {r + 1}: A to get every partition back")
time.sleep(3)
stop.set()
a.close()
out, seen = [], set()
for e in a.events:
    # A join's revoke and the assign of its second round share their last delivery: one rebalance, counted once.
    if e["last_before"] in seen:
        continue
    seen.add(e["last_before"])
    # Kept partitions that never delivered again before the end are the longest stall of all: open, not dropped.
    stall = None if e["first_after"] is None else round((e["first_after"] - e["last_before"]) * 1000, 1)
    out.append({"kind": e["kind"], "kept": len(e["kept"]), "stall_ms": stall})
v = version()
print(json.dumps({"client_version": v[0] if isinstance(v, tuple) else v, "librdkafka_version": libversion()[0],
                  "events": out}))
'''



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="joins and leaves of consumer B")
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose confluent-kafka is checked")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--threshold-ms", type=float, default=300.0, help="a stall at least this long counts")
    args = parser.parse_args()
    from confluent_kafka.admin import AdminClient, NewTopic

    from testbed.brokers.cluster import given_or_started
    from testbed.children import terminate_as_interrupt

    terminate_as_interrupt()
    with given_or_started(args.bootstrap) as bootstrap:
        topic = f"resume-stall-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        out = subprocess.run([args.python, "-c", PROBE, bootstrap, topic, str(args.rounds), str(PARTITIONS)],
                             capture_output=True, text=True, timeout=120 + 15 * args.rounds)
        if out.returncode != 0:
            raise SystemExit(f"the probe failed:\n{out.stderr[-3000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
    events = result["events"]
    stalls = [e["stall_ms"] for e in events if e["stall_ms"] is not None]
    still_open = sum(e["stall_ms"] is None for e in events)
    for e in events:
        took = "until the end (open)" if e["stall_ms"] is None else f"for {e['stall_ms']:7.1f} ms"
        print(f"{e['kind']:6} kept {e['kept']:2} partitions: nothing delivered {took}")
    stalled = [s for s in stalls if s >= args.threshold_ms]
    print(f"confluent-kafka {result['client_version']} (librdkafka {result['librdkafka_version']}): "
          f"{len(stalled) + still_open} of {len(events)} incremental rebalances stalled the kept partitions "
          f">= {args.threshold_ms:.0f} ms ({still_open} of them until the end; longest closed stall: "
          f"{'none measured' if not stalls else f'{max(stalls):.0f} ms'})")
    print(json.dumps({"client_version": result["client_version"], "librdkafka_version": result["librdkafka_version"],
                      "events": len(events), "stalled_events": len(stalled) + still_open,
                      "open_events": still_open, "stall_ms": stalls,
                      "max_stall_ms": max(stalls, default=None), "threshold_ms": args.threshold_ms}))


if __name__ == "__main__":
    main()
