"""Cross-topic skew of the lag-aware assignor (KIP-169) against its group-scoped variant, on skewed backlogs.

KIP-169 balances partition counts and then lag *within each topic*; nothing balances across topics, and its
tie-break (least lag of that topic, then smallest member id) sends the first pick of every topic to the same
member. For groups reading many topics with a skewed backlog (a few hot partitions), this prints, per shape,
the median over --seeds random backlogs of: the lag spread (max - min total lag per member, in records), the
busiest member's share of the whole backlog, and the partition-count spread, for ``scope=topic`` (the KIP) and
``scope=group`` (ties broken by each member's lag over every topic; testbed's GroupLagAwareAssignor).

    .venv/bin/python benchmarks/lag_aware_skew.py [--seeds 50]

Backlogs: each partition's lag is Pareto-distributed (shape 1.2, scale 100 records: most small, a few hot),
rounded. Last line: {"shapes": [...]} with both scopes per shape.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics

from testbed.assignors.lag_aware import assign_lag_aware
from testbed.assignors.model import MemberSubscription

SHAPES = [  # (topics, partitions per topic, members)
    (3, 1, 3), (10, 1, 3), (10, 3, 3), (10, 4, 5), (20, 6, 8), (50, 2, 10), (5, 40, 8)]


def measure(topics: int, partitions: int, members: int, scope: str, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    names = [f"t{i:02d}" for i in range(topics)]
    lags = {t: [round(100 * rng.paretovariate(1.2)) for _ in range(partitions)] for t in names}
    subs = [MemberSubscription(f"m{i:02d}", frozenset(names)) for i in range(members)]
    result = assign_lag_aware(dict.fromkeys(names, partitions), subs, lags, scope)
    totals = [sum(lags[t][p] for t, parts in result.partitions[m.member_id].items() for p in parts) for m in subs]
    counts = [sum(len(parts) for parts in result.partitions[m.member_id].values()) for m in subs]
    return {"lag_spread": max(totals) - min(totals), "busiest_share": max(totals) / sum(totals),
            "count_spread": max(counts) - min(counts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=50)
    args = ap.parse_args()
    shapes = []
    print(f"{'topics x partitions, members':>30} | {'lag spread topic / group':>26} | {'busiest share':>15} | counts")
    for topics, partitions, members in SHAPES:
        row: dict = {"topics": topics, "partitions_per_topic": partitions, "members": members}
        for scope in ("topic", "group"):
            runs = [measure(topics, partitions, members, scope, seed) for seed in range(args.seeds)]
            row[scope] = {k: round(statistics.median(r[k] for r in runs), 3) for k in runs[0]}
        shapes.append(row)
        t, g = row["topic"], row["group"]
        print(f"{f'{topics} x {partitions}, {members}':>30} | {t['lag_spread']:>12,.0f} / {g['lag_spread']:<11,.0f} | "
              f"{t['busiest_share']:>6.0%} / {g['busiest_share']:<6.0%} | {t['count_spread']:.0f} / {g['count_spread']:.0f}")
    print(json.dumps({"seeds": args.seeds, "shapes": shapes}))


if __name__ == "__main__":
    main()
