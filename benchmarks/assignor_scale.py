"""assign() time and peak memory of the seed assignor cores at 100x1k, 1,000x10k and 2,000x1M.

Usage: .venv/bin/python benchmarks/assignor_scale.py [--sizes 100x1000,1000x10000,2000x1000000] [--no-memory]

Partitions are spread over 4 topics that every member subscribes to. What is timed is the pure core
(no kafka-python encoding, no offset fetch), in the situation a leader meets most often, a rebalance
after churn:
- lag-aware: random lags (seeded), fresh per-topic assignment (it keeps no state);
- failover: random priorities in subscription user data;
- sticky-stream-join: previous ownership + epoch in every member's user data, one member gone.
Time: wall clock of one assign() (time.perf_counter), best of 1. Memory: tracemalloc peak of Python
allocations during a second, separate assign() call (so tracing does not slow the timed call); the
input is built before tracing starts and is not counted.

Prints one line per case, and as the last line one JSON object
{"<assignor>": {"<members>x<partitions>_s": seconds, ..., "peak_mb": peak of the largest size}}.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
import tracemalloc
from collections.abc import Callable

from testbed.assignors.failover import assign_failover, encode_priority
from testbed.assignors.lag_aware import assign_lag_aware
from testbed.assignors.model import GroupAssignment, MemberSubscription
from testbed.assignors.stream_join import assign_sticky_stream_join, encode_subscription_user_data

TOPICS = ("t0", "t1", "t2", "t3")
DEFAULT_SIZES = "100x1000,1000x10000,2000x1000000"
TARGETS_S = {"1000x10000": 1.0, "2000x1000000": 30.0}


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for item in text.split(","):
        members, sep, partitions = item.partition("x")
        if not sep or not members.isdigit() or not partitions.isdigit():
            raise SystemExit(f"--sizes: expected <members>x<partitions>[,...], got {item!r}")
        sizes.append((int(members), int(partitions)))
    return sizes


def partitions_per_topic(total: int) -> dict[str, int]:
    base, extra = divmod(total, len(TOPICS))
    return {t: base + (1 if i < extra else 0) for i, t in enumerate(TOPICS)}


def lag_aware_case(members: int, total: int, rng: random.Random) -> Callable[[], GroupAssignment]:
    counts = partitions_per_topic(total)
    subs = [MemberSubscription(f"member-{i:05d}", frozenset(TOPICS)) for i in range(members)]
    lags = {t: [rng.randrange(0, 1_000_000) for _ in range(n)] for t, n in counts.items()}
    return lambda: assign_lag_aware(counts, subs, lags)


def failover_case(members: int, total: int, rng: random.Random) -> Callable[[], GroupAssignment]:
    counts = partitions_per_topic(total)
    subs = [
        MemberSubscription(f"member-{i:05d}", frozenset(TOPICS), encode_priority(rng.randrange(0, 100)))
        for i in range(members)
    ]
    return lambda: assign_failover(counts, subs)


def stream_join_case(members: int, total: int, rng: random.Random) -> Callable[[], GroupAssignment]:
    per_topic = total // len(TOPICS)
    counts = {t: per_topic for t in TOPICS}
    fresh = [MemberSubscription(f"member-{i:05d}", frozenset(TOPICS)) for i in range(members + 1)]
    previous = assign_sticky_stream_join(counts, fresh)
    gone = fresh[rng.randrange(len(fresh))].member_id
    subs = [
        MemberSubscription(m.member_id, m.topics, encode_subscription_user_data(1, previous.partitions[m.member_id].get("t0", [])))
        for m in fresh
        if m.member_id != gone
    ]
    return lambda: assign_sticky_stream_join(counts, subs)


CASES: dict[str, Callable[[int, int, random.Random], Callable[[], GroupAssignment]]] = {
    "lag-aware": lag_aware_case,
    "failover": failover_case,
    "sticky-stream-join": stream_join_case,
}


def measure(run: Callable[[], GroupAssignment], with_memory: bool) -> tuple[float, float | None]:
    gc.collect()
    start = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - start
    del result
    if not with_memory:
        return elapsed, None
    gc.collect()
    tracemalloc.start()
    result = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return elapsed, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES)
    parser.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run (peak_mb: null)")
    args = parser.parse_args()
    summary: dict[str, dict[str, float | None]] = {}
    for name, build in CASES.items():
        row: dict[str, float | None] = {}
        last_peak: float | None = None
        for members, total in parse_sizes(args.sizes):
            run = build(members, total, random.Random(42))
            elapsed, peak_mb = measure(run, not args.no_memory)
            key = f"{members}x{total}"
            target = TARGETS_S.get(key)
            verdict = "" if target is None else (" ok" if elapsed <= target else f" OVER target {target}s")
            peak_text = "not measured" if peak_mb is None else f"{peak_mb:.1f} MB tracemalloc peak"
            print(f"{name:20s} {key:>14s}: {elapsed:8.3f} s, {peak_text}{verdict}", flush=True)
            row[f"{key}_s"] = round(elapsed, 3)
            last_peak = None if peak_mb is None else round(peak_mb, 1)
            del run
        row["peak_mb"] = last_peak
        summary[name] = row
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
