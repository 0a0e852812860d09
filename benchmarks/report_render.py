"""Render time and page size of a run report for a large run: 50 members, 100 partitions, 10 minutes.

Builds synthetic saved outputs (the analysis tables with analysis's schemas, harness actions and latency
over time included, metrics.json, result.json) for an eager rolling bounce of every member:
100 rebalance episodes, each revoking all 100 partitions, so ~10,000 ownership intervals, revocations
and pauses. Then renders report.html and prints the figures; last line: {"render_s": .., "page_mb": ..}.

    .venv/bin/python benchmarks/report_render.py [--members 50 --partitions 100 --minutes 10 --keep DIR] [--open]
    .venv/bin/python benchmarks/report_render.py --run reports/<run> --open    # a real run's report instead
With --open the last line adds open_s (headless Chromium loading the page, scripts run, charts drawn).
With --index-runs N it adds index_s: the index of a reports folder of N copies of the run, which every run's end
renders again (``render_index``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from testbed.analysis.outputs import to_table
from testbed.analysis.run_wide import harness_frame
from testbed.history.events import Action
from testbed.run.layout import RunDir
from testbed.report import render_index, render_run
from testbed.report.browser import check_page

T0 = 1_763_800_000_000


def build_run(root: Path, members: int, partitions: int, minutes: float) -> RunDir:
    rng = np.random.default_rng(7)
    run = RunDir(root).create()
    names = [f"member-{i:02d}" for i in range(members)]
    end = T0 + int(minutes * 60_000)
    gap = (end - T0 - 20_000) // members  # one bounce per member, evenly spread
    owners, revs, pauses, episodes, actions = [], [], [], [], [_action(Action.RUN_START, T0)]
    current = {p: (names[p % members], T0 + 1000) for p in range(partitions)}
    episode_id = 0
    for i, victim in enumerate(names):
        down = T0 + 10_000 + i * gap
        actions += [_action(Action.BOUNCE_START, down, victim), _action(Action.MEMBER_STOP, down, victim),
                    _action(Action.MEMBER_START, down + gap // 2, victim),
                    _action(Action.BOUNCE_END, down + gap // 2 + 2000, victim)]
        for start in (down, down + gap // 2):  # leave, then rejoin: two eager episodes
            episode_id += 1
            alive = [m for m in names if m != victim] if start == down else names
            length = int(rng.integers(800, 3000))
            for p in range(partitions):
                owner, since = current[p]
                revoked_at = start + int(rng.integers(0, 200))
                owners.append(("t", p, owner, since, revoked_at, "revoked"))
                revs.append((revoked_at, owner, "t", p, "revoked", "live", bool(rng.random() < 0.3), episode_id, length))
                resumed = start + length + int(rng.integers(0, 300))
                pauses.append((episode_id, "t", p, owner, "revoked", revoked_at, resumed, resumed - revoked_at))
                current[p] = (alive[(p + episode_id) % len(alive)], start + length)
            episodes.append((episode_id, start, start + length, length, f"stopped:{victim}", False, True, len(alive),
                             partitions, partitions, 0, 0, partitions, 900.0, 2900.0, 3000.0, 0,
                             start + 100, start + length - 50, length - 150, episode_id + 1))
    for p, (owner, since) in current.items():
        owners.append(("t", p, owner, since, end, "run_end"))
    actions.append(_action(Action.RUN_END, end))
    seconds = np.arange(T0 // 1000, end // 1000)
    frames = {
        "ownership_intervals": pd.DataFrame(owners, columns=["topic", "partition", "member", "start_ms", "end_ms", "end_reason"]),
        "revocations": pd.DataFrame(revs, columns=["ts_ms", "member", "topic", "partition", "kind", "category", "needless",
                                                   "episode_id", "member_pause_ms"]),
        "partition_pauses": pd.DataFrame(pauses, columns=["episode_id", "topic", "partition", "member", "end_reason",
                                                          "waiting_since_ms", "resumed_ms", "pause_ms"]),
        "rebalance_episodes": pd.DataFrame(episodes, columns=[
            "episode_id", "start_ms", "end_ms", "duration_ms", "trigger", "teardown", "during_bounce", "members_assigned",
            "revocations", "revocations_live", "needless_revocations", "partitions_lost", "partitions_paused", "pause_p50_ms",
            "pause_p99_ms", "pause_max_ms", "stop_the_world_ms", "broker_prepare_ms", "broker_stabilized_ms",
            "broker_duration_ms", "broker_generation"]),
        "duplicate_ownership": pd.DataFrame({"topic": ["t"] * 20, "partition": range(20), "start_ms": T0 + 60_000,
                                             "end_ms": T0 + 61_000, "duration_ms": 1000, "members": "member-00,member-01"}),
        "timeseries": pd.DataFrame({"second": seconds, "processed": rng.integers(900, 1100, len(seconds)),
                                    "processed_unique": 1000, "produced": 1000, "lag": rng.integers(0, 5000, len(seconds)),
                                    "duplicates": 0}),
        "latency_timeseries": pd.DataFrame({"second": seconds, "width_s": 1, "batches": 2 * partitions,
                                            "p50_ms": rng.uniform(50, 200, len(seconds)),
                                            "p99_ms": rng.uniform(200, 390, len(seconds)), "max_ms": 399}),
        "harness_actions": harness_frame(actions),
        "broker_rebalances": pd.DataFrame([("1", e[1] + 100, "g", ev, e[0], members, None, None, None, None, None)
                                           for e in episodes for ev in ("prepare", "stabilized")],
                                          columns=["broker", "ts_ms", "group_id", "event", "generation", "members", "state",
                                                   "reason", "assignor", "compute_ms", "member"]),
    }
    frames["ownership_intervals"]["duration_ms"] = frames["ownership_intervals"].eval("end_ms - start_ms")
    for name, frame in frames.items():
        pq.write_table(to_table(name, frame), run.tables / f"{name}.parquet")
    metrics = {"members": {"value": members, "unit": "count"}, "partitions": {"value": partitions, "unit": "count"},
               "rebalance_episodes": {"value": episode_id, "unit": "count"},
               "lost_records": {"value": None, "unit": "records", "unknown": "synthetic run: no ack logs"}}
    run.metrics.write_text(json.dumps({"schema_version": 1, "run_dir": str(root), "metrics": metrics,
                                       "config": {"protocol": "eager", "assignors": ["range"], "members": {
                                           m: {"client": "confluent-kafka", "client_version": "2.16.1", "group_id": "g",
                                               "assignors": ["range"]} for m in names}},
                                       "windows": {"run_start_ms": T0, "run_end_ms": end, "drain_end_ms": None, "bounces": []}}))
    run.result.write_text(json.dumps({"scenario": "synthetic-rolling-bounce", "run_dir": str(root), "status": "pass",
                                      "started_ms": T0, "ended_ms": end}))
    return run


def _action(kind: Action, ts_ms: int, target: str | None = None) -> dict:
    return {"kind": kind, "ts_ms": ts_ms, "target": target, "detail": {}}


def open_in_browser(page: Path) -> dict:
    """Wall time for headless Chromium to load the page and run its scripts (every chart drawn), with its
    self-check; Chromium's own start-up (about a second) is included, so this is an upper bound."""
    started = time.perf_counter()
    check = check_page(page)
    return {"open_s": round(time.perf_counter() - started, 2), "charts": check.charts, "drawn": check.drawn,
            "script_errors": len(check.errors)}


def index_seconds(run: RunDir, copies: int, folder: Path) -> float:
    """Seconds to render the index of ``folder`` holding ``copies`` copies of ``run``."""
    for i in range(copies):
        shutil.copytree(run.root, folder / f"{run.root.name}-{i:04d}")
    started = time.perf_counter()
    render_index(folder)
    return round(time.perf_counter() - started, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=50)
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--keep", type=Path, default=None, help="build the run here and keep it")
    parser.add_argument("--run", type=Path, default=None,
                        help="render this saved run's report instead of a synthetic one (its analysis is kept)")
    parser.add_argument("--open", action="store_true", help="also time opening the page in headless Chromium")
    parser.add_argument("--index-runs", type=int, default=0,
                        help="also time the index of a folder of this many copies of the run")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="report-bench-"))
    try:
        run = RunDir(args.run) if args.run else build_run(work / "synthetic-run", args.members, args.partitions,
                                                          args.minutes)
        rows = len(pq.read_table(run.tables / "ownership_intervals.parquet"))
        started = time.perf_counter()
        page = render_run(run.root)
        render_s = time.perf_counter() - started
        page_mb = page.stat().st_size / 1e6
        what = args.run or f"{args.members} members, {args.partitions} partitions, {args.minutes:g} min"
        print(f"{what}: {rows} ownership intervals")
        print(f"rendered {page} in {render_s:.2f} s, {page_mb:.2f} MB")
        figures = {"render_s": round(render_s, 2), "page_mb": round(page_mb, 2)}
        if args.open:
            figures.update(open_in_browser(page))
        if args.index_runs:
            figures["index_s"] = index_seconds(run, args.index_runs, work / "index")
            print(f"index of {args.index_runs} runs in {figures['index_s']:.2f} s")
        print(json.dumps(figures))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
