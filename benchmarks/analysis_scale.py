"""Scale benchmark of the analysis pipeline: Spark vs a plain single-process pandas computation.

Writes synthetic run directories of N processed records (batch events of 100 records, 50 members,
100 partitions, one ack line per record, a re-delivered batch and a lost tail so that duplicates and
loss are not trivially zero), times ``analyse`` (session already started) and a pandas computation of
the same record-level metrics, and checks that both agree.

    .venv/bin/python benchmarks/analysis_scale.py --sizes 1000000 10000000

Last line: one JSON object for the largest size.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from testbed.history.events import Action

MEMBERS, PARTITIONS, BATCH = 50, 100, 100
T0 = 1_790_000_000_000
COMPARED = ("records_processed", "records_unique_processed", "records_acked", "lost_records", "duplicates_total",
            "duplicate_records", "e2e_latency_p50_ms", "e2e_latency_p99_ms", "e2e_latency_max_ms")


def write_history(root: Path, records: int) -> None:
    """Partition p is owned by member p // 2 all run long; batch k of p holds offsets [100k, 100k+99]."""
    per_part = records // PARTITIONS
    batches = per_part // BATCH
    (root / "history" / "members").mkdir(parents=True)
    (root / "history" / "acks").mkdir(parents=True)
    end = T0 + batches * 100 + 10_000
    with open(root / "history" / "harness.jsonl", "w") as f:
        for kind, ts in ((Action.RUN_START, T0 - 2000), (Action.DRAIN_END, end - 1000), (Action.RUN_END, end)):
            f.write(json.dumps({"name": "action", "ts_ms": ts, "source": "harness", "kind": kind}) + "\n")
    for m in range(MEMBERS):
        name = f"m{m:02d}"
        lines = [json.dumps({"name": "started", "ts_ms": T0 - 1500, "source": name, "client": "kafka-python",
                             "client_version": "3.0", "group_id": "g", "topics": ["t"], "assignors": ["range"],
                             "commit_mode": "auto", "pid": m}),
                 json.dumps({"name": "assigned", "ts_ms": T0 - 1000, "source": name,
                             "partitions": [["t", 2 * m], ["t", 2 * m + 1]]})]
        for k in range(batches):
            for p in (2 * m, 2 * m + 1):
                if p == PARTITIONS - 1 and k == batches - 1:
                    continue  # the last batch of the last partition is never processed: 100 lost records
                lat = 20 + (k * 7 + p) % 90
                pts = T0 + k * 100
                lines.append(f'{{"name":"processed","ts_ms":{pts + 99 + lat},"source":"{name}","topic":"t",'
                             f'"partition":{p},"first_offset":{k * BATCH},"last_offset":{k * BATCH + BATCH - 1},'
                             f'"count":{BATCH},"produce_ts_min_ms":{pts},"produce_ts_max_ms":{pts + 99}}}')
        if m == 0:  # one batch re-delivered after a (pretend) restart
            lines.append(f'{{"name":"processed","ts_ms":{end - 3000},"source":"{name}","topic":"t","partition":0,'
                         f'"first_offset":0,"last_offset":{BATCH - 1},"count":{BATCH},"produce_ts_min_ms":{T0},'
                         f'"produce_ts_max_ms":{T0 + 99}}}')
        lines.append(json.dumps({"name": "stopped", "ts_ms": end - 500, "source": name, "reason": "clean"}))
        (root / "history" / "members" / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    with open(root / "history" / "acks" / "producer-0.jsonl", "w") as f:
        offsets = np.arange(per_part)
        for p in range(PARTITIONS):
            produce = T0 + (offsets // BATCH) * 100 + offsets % BATCH
            f.write("".join(
                f'{{"name":"ack","ts_ms":{t + 1},"source":"producer-0","topic":"t","partition":{p},"offset":{o},'
                f'"key":"k{p}","seq":{o},"produce_ts_ms":{t}}}\n'
                for o, t in zip(offsets.tolist(), produce.tolist())
            ))


def pandas_metrics(root: str, queue) -> None:
    """The same record-level metrics in one process with pandas (run in a child to measure its memory)."""
    t = time.perf_counter()
    members = pd.concat(pd.read_json(p, lines=True) for p in sorted(Path(root, "history", "members").glob("*.jsonl")))
    harness = pd.read_json(Path(root, "history", "harness.jsonl"), lines=True)
    cutoff = int(harness.loc[harness["kind"] == Action.DRAIN_END, "ts_ms"].max())
    batches = members[members["name"] == "processed"]
    acks = pd.read_json(Path(root, "history", "acks", "producer-0.jsonl"), lines=True, engine="pyarrow")
    first = batches["first_offset"].to_numpy(np.int64)
    n = (batches["last_offset"].to_numpy(np.int64) - first + 1)
    starts = np.repeat(first - np.concatenate([[0], np.cumsum(n)[:-1]]), n)
    offsets = starts + np.arange(n.sum())
    key = np.repeat(batches["partition"].to_numpy(np.int64), n) * (1 << 40) + offsets
    ts = np.repeat(batches["ts_ms"].to_numpy(np.int64), n)
    rec = pd.DataFrame({"key": key, "ts": ts}).groupby("key")["ts"].agg(["size", "min"])
    ack_key = acks["partition"].to_numpy(np.int64) * (1 << 40) + acks["offset"].to_numpy(np.int64)
    produce = pd.Series(acks["produce_ts_ms"].to_numpy(np.int64), index=ack_key).groupby(level=0).min()
    first_ts = rec["min"].reindex(produce.index)
    lat = (rec["min"] - produce.reindex(rec.index)).dropna().to_numpy()
    out = {
        "records_processed": int(batches["count"].sum()),
        "records_unique_processed": int(len(rec)),
        "records_acked": int(len(produce)),
        "lost_records": int((first_ts.isna() | (first_ts > cutoff)).sum()),
        "duplicates_total": int((rec["size"] - 1).sum()),
        "duplicate_records": int((rec["size"] > 1).sum()),
        "e2e_latency_p50_ms": float(np.percentile(lat, 50)),
        "e2e_latency_p99_ms": float(np.percentile(lat, 99)),
        "e2e_latency_max_ms": float(lat.max()),
    }
    queue.put((out, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


class PeakRss:
    """Peak RSS of this process and its children (the Spark JVM), sampled every 200 ms."""

    def __init__(self) -> None:
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            procs = [me, *me.children(recursive=True)]
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total / 2**20)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def run_size(records: int, workdir: Path) -> dict:
    from testbed.analysis import analyse

    root = workdir / f"run-{records}"
    t = time.perf_counter()
    write_history(root, records)
    gen_s = time.perf_counter() - t
    with PeakRss() as rss:
        t = time.perf_counter()
        spark_metrics = analyse(root)
        spark_s = time.perf_counter() - t
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=pandas_metrics, args=(str(root), queue))
    proc.start()
    pandas_out, pandas_s, pandas_peak = queue.get()
    proc.join()
    disagree = {k: (spark_metrics[k].value, pandas_out[k]) for k in COMPARED if spark_metrics[k].value != pandas_out[k]}
    result = {"records": records, "spark_s": round(spark_s, 1), "pandas_s": round(pandas_s, 1),
              "spark_peak_mb": round(rss.peak), "pandas_peak_mb": round(pandas_peak), "generate_s": round(gen_s, 1),
              "agree": not disagree}
    if disagree:
        result["disagreements"] = disagree
    shutil.rmtree(root, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    if any(s < PARTITIONS * BATCH for s in args.sizes):
        parser.error(f"--sizes: each size must be at least {PARTITIONS * BATCH} records")
    from testbed.analysis import get_spark, stop_spark

    t = time.perf_counter()
    get_spark()
    print(f"spark session started in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="analysis-scale-"))
    results = []
    try:
        for size in sorted(args.sizes):
            results.append(run_size(size, workdir))
            print(json.dumps(results[-1]), file=sys.stderr)
    finally:
        stop_spark()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps({k: results[-1][k] for k in ("records", "spark_s", "pandas_s", "spark_peak_mb", "agree")}))


if __name__ == "__main__":
    main()
