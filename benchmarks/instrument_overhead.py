"""What testbed's instrumentation (testbed.instrument) costs a consumer program: records/s with and without it.

One topic of --records records and 10 % more (100-byte values, the 'ts' header testbed's producers write, no compression
so kafka-python reads it without codecs) is produced once, into a 1-broker KafkaCluster this script starts
(or --bootstrap). Then, for each case, the same small program consumes every record in a fresh group, once
plainly and once under the instrumentation (testbed.instrument.launch.instrumented_env), in pairs whose
order alternates (--repeat pairs), so slow drifts of the machine touch both alike. A program's rate is
records / seconds from its first record to its last (the join and the close are not counted); each
instrumented run's history must hold every record as processed exactly once.

Cases, each a loop as a user would write it, auto-commit on (both clients' default) unless said:
- confluent-poll (``consumer.poll()`` per record), confluent-consume (``consume(500)``),
  kafka-python-iter (``for msg in consumer``), kafka-python-poll (``poll(max_records=500)``): loops that do
  nothing with a record, the worst case for the instrumentation's share of the time;
- confluent-batch-commit (``consume(500)``), kafka-python-batch-commit (``poll(max_records=500)``): the
  at-least-once service loop docs/your-consumer.md recommends: decode each value (JSON), then a synchronous
  commit after each batch, auto-commit off;
- confluent-store, kafka-python-store: the same loop writing each batch to a store before the commit, as
  examples/orders-service does: one SQLite transaction (WAL journal, a file in the run's temporary directory) of
  one row per record (topic, partition, offset, the decoded order), then the synchronous commit.

The confluent programs set ``fetch.queue.backoff.ms`` to 10: with librdkafka's default (1,000 ms) a program
reading a backlog at full speed fills its local queue (``queued.min.messages``, 100,000), fetching stops for a
second, and the rate measured is that timer's (150,000 records/s against 960,000 with 10 ms, librdkafka 2.16),
not the program's: the instrumentation's cost would hide in the waits or not, by chance.

Run: .venv/bin/python benchmarks/instrument_overhead.py [--records 1000000] [--repeat 5]
     [--cases confluent-poll,kafka-python-iter] [--bootstrap HOST:PORT]
Prints each run and each case's medians; the last line is one JSON object
{"records", "repeat", "cases": {case: {"plain_rate", "instrumented_rate", "overhead_pct", "pairs_overhead_pct",
"cost_us_per_record", "plain_cpu_us_per_record", "instrumented_cpu_us_per_record", "cpu_overhead_pct"}}}
(rates in records/s; medians over the pairs; overhead_pct = 1 - instrumented / plain rate, in %;
cost_us_per_record = the time the instrumentation adds to each record, 1/instrumented - 1/plain rate, in µs:
what a program that does real work per record pays too; cpu_overhead_pct = the program's CPU time per record
(all its threads, ``time.process_time``), instrumented / plain - 1, in %).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from testbed.brokers.cluster import given_or_started
from testbed.children import terminate_as_interrupt
from testbed.history.events import Processed
from testbed.history.writer import read_events
from testbed.instrument.launch import instrumented_env

PARTITIONS = 6
VALUE = json.dumps({"order": 0, "note": "x" * 76}).encode()  # 100 bytes of JSON
CASES = ("confluent-poll", "confluent-consume", "confluent-batch-commit", "confluent-store", "kafka-python-iter",
         "kafka-python-poll", "kafka-python-batch-commit", "kafka-python-store")
PROGRAM_TIMEOUT_S = 600

# The consumer program, as a user would write it; it prints one JSON line: records and seconds.
PROGRAM = r'''
import json, os, sqlite3, sys, tempfile, time, uuid
case, bootstrap, topic, total = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
group = "bench-" + uuid.uuid4().hex[:8]
got, first = 0, None
committing = case.endswith(("batch-commit", "store"))
store = None
if case.endswith("store"):
    store = sqlite3.connect(os.path.join(tempfile.mkdtemp(prefix="bench-store-"), "orders.db"),
                            isolation_level=None)
    store.execute("PRAGMA journal_mode=WAL")
    store.execute("CREATE TABLE orders (topic TEXT, partition INTEGER, offset INTEGER, order_no INTEGER)")

def write(rows):
    store.execute("BEGIN")
    store.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)
    store.execute("COMMIT")

if case.startswith("confluent"):
    from confluent_kafka import Consumer
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "fetch.queue.backoff.ms": 10, "enable.auto.commit": not committing})
    consumer.subscribe([topic])
    if case == "confluent-poll":
        while got < total:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            if first is None:
                first, cpu = time.perf_counter(), time.process_time()
            got += 1
    elif case == "confluent-consume":
        while got < total:
            for msg in consumer.consume(500, 1.0):
                if msg.error():
                    continue
                if first is None:
                    first, cpu = time.perf_counter(), time.process_time()
                got += 1
    else:
        orders = 0
        while got < total:
            batch = consumer.consume(500, 1.0)
            rows = []
            for msg in batch:
                if msg.error():
                    continue
                if first is None:
                    first, cpu = time.perf_counter(), time.process_time()
                order = json.loads(msg.value())["order"]
                orders += order + 1
                if store is not None:
                    rows.append((msg.topic(), msg.partition(), msg.offset(), order))
                got += 1
            if rows:
                write(rows)
            if batch:
                consumer.commit(asynchronous=False)
else:
    from kafka import KafkaConsumer
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=not committing)
    consumer.subscribe([topic])
    if case == "kafka-python-iter":
        for msg in consumer:
            if first is None:
                first, cpu = time.perf_counter(), time.process_time()
            got += 1
            if got >= total:
                break
    elif case == "kafka-python-poll":
        while got < total:
            for records in consumer.poll(timeout_ms=1000, max_records=500).values():
                for msg in records:
                    if first is None:
                        first, cpu = time.perf_counter(), time.process_time()
                    got += 1
    else:
        orders = 0
        while got < total:
            batch = consumer.poll(timeout_ms=1000, max_records=500)
            rows = []
            for records in batch.values():
                for msg in records:
                    if first is None:
                        first, cpu = time.perf_counter(), time.process_time()
                    order = json.loads(msg.value)["order"]
                    orders += order + 1
                    if store is not None:
                        rows.append((msg.topic, msg.partition, msg.offset, order))
                    got += 1
            if rows:
                write(rows)
            if batch:
                consumer.commit()
seconds, cpu_seconds = time.perf_counter() - first, time.process_time() - cpu
consumer.close()
print(json.dumps({"records": got, "seconds": seconds, "cpu_seconds": cpu_seconds}), flush=True)
'''



def produce(bootstrap: str, records: int) -> str:
    topic = f"bench-instrument-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a client collected early fails its futures
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10000})
    started = time.monotonic()
    for i in range(records):
        stamp = (time.time_ns() // 1_000_000).to_bytes(8, "big")
        while True:
            try:
                producer.produce(topic, VALUE, key=str(i % 1000), partition=i % PARTITIONS, headers=[("ts", stamp)])
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(120) != 0:
        raise SystemExit("produce: records left unacknowledged after 120 s")
    print(f"produced {records} records into {topic} in {time.monotonic() - started:.1f} s", flush=True)
    return topic


def run_program(program: Path, case: str, bootstrap: str, topic: str, records: int,
                history: Path | None) -> tuple[float, float]:
    """One run: (records/s, CPU µs per record). With ``history`` it runs instrumented and its history is checked."""
    env = dict(os.environ)
    if history is not None:
        config = history.with_suffix(".config.json")
        config.write_text(json.dumps({"member_id": "bench", "history_path": str(history)}))
        env.update(instrumented_env(config, env))
    out = subprocess.run([sys.executable, str(program), case, bootstrap, topic, str(records)], env=env,
                         capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S)
    if out.returncode != 0:
        raise SystemExit(f"{case} ({'instrumented' if history else 'plain'}) failed:\n{out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if history is not None:
        check_history(history, records, case)
    return result["records"] / result["seconds"], result["cpu_seconds"] / result["records"] * 1e6


def check_history(history: Path, records: int, case: str) -> None:
    """Every record processed once: the instrumentation's figures are only worth anything if it is right."""
    ranges = [(e.partition, e.first_offset, e.last_offset, e.count) for e in read_events(history)
              if isinstance(e, Processed)]
    counted = sum(r[3] for r in ranges)
    offsets = {(p, o) for p, first, last, _ in ranges for o in range(first, last + 1)}
    if counted != len(offsets) or len(offsets) < records:
        raise SystemExit(f"{case}: the history of {history} holds {counted} processed records, {len(offsets)} "
                         f"distinct offsets; {records} were consumed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5, help="pairs (plain, instrumented) per case")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--bootstrap", default=None, help="use this broker instead of starting one")
    parser.add_argument("--topic", default=None, help="an existing topic of at least --records records")
    parser.add_argument("--history-dir", default=None,
                        help="where the instrumented runs write their histories (default: the temporary directory "
                             "that also holds the store cases' databases), e.g. a tmpfs to take the disk out")
    args = parser.parse_args()
    cases = [c for c in args.cases.split(",") if c]
    if unknown := sorted(set(cases) - set(CASES)):
        parser.error(f"--cases: unknown {', '.join(unknown)}; known: {', '.join(CASES)}")
    terminate_as_interrupt()
    figures: dict[str, dict] = {}
    with given_or_started(args.bootstrap) as bootstrap, tempfile.TemporaryDirectory(prefix="instrument-bench-") as tmp:
        root = Path(tmp)
        program = root / "program.py"
        program.write_text(PROGRAM)
        # 10 % more than is read: a program reading a topic to its very end times its last consume(500, 1.0)
        # waiting out its timeout for records that never come (a 1 s step in a 2-4 s run), not its speed.
        topic = args.topic or produce(bootstrap, args.records + args.records // 10)
        for case in cases:
            pairs = []
            for i in range(args.repeat):
                history = Path(args.history_dir or root) / f"{case}-{i}.jsonl"
                order = (None, history) if i % 2 == 0 else (history, None)  # alternate which goes first
                runs = {("instrumented" if h else "plain"): run_program(program, case, bootstrap, topic,
                                                                         args.records, h) for h in order}
                pairs.append(runs)
                (plain, plain_cpu), (instr, instr_cpu) = runs["plain"], runs["instrumented"]
                print(f"{case} pair {i + 1}: plain {plain:,.0f}/s ({plain_cpu:.2f} µs CPU/record), instrumented "
                      f"{instr:,.0f}/s ({instr_cpu:.2f} µs CPU/record): {100 * (1 - instr / plain):+.1f}% rate, "
                      f"{100 * (instr_cpu / plain_cpu - 1):+.1f}% CPU", flush=True)
            overheads = [100 * (1 - p["instrumented"][0] / p["plain"][0]) for p in pairs]
            cpu_overheads = [100 * (p["instrumented"][1] / p["plain"][1] - 1) for p in pairs]
            costs = [1e6 * (1 / p["instrumented"][0] - 1 / p["plain"][0]) for p in pairs]
            figures[case] = {
                "plain_rate": round(statistics.median(p["plain"][0] for p in pairs)),
                "instrumented_rate": round(statistics.median(p["instrumented"][0] for p in pairs)),
                "overhead_pct": round(statistics.median(overheads), 2),
                "pairs_overhead_pct": [round(o, 2) for o in overheads],
                "cost_us_per_record": round(statistics.median(costs), 3),
                "plain_cpu_us_per_record": round(statistics.median(p["plain"][1] for p in pairs), 3),
                "instrumented_cpu_us_per_record": round(statistics.median(p["instrumented"][1] for p in pairs), 3),
                "cpu_overhead_pct": round(statistics.median(cpu_overheads), 2),
            }
            f = figures[case]
            print(f"{case}: plain {f['plain_rate']:,}/s, instrumented {f['instrumented_rate']:,}/s, overhead "
                  f"{f['overhead_pct']:+.2f}% rate ({f['cost_us_per_record']:+.3f} µs per record), "
                  f"{f['cpu_overhead_pct']:+.2f}% CPU per record "
                  f"(medians of {args.repeat} pairs)", flush=True)
    print(json.dumps({"records": args.records, "repeat": args.repeat, "cases": figures}))


if __name__ == "__main__":
    main()
