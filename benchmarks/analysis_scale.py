"""Scale benchmark of the analysis pipeline: Spark vs a plain single-process pandas computation.

Writes synthetic run directories of N processed records (batch events of 100 records, 50 members,
100 partitions, one ack line per record, a re-delivered batch and a lost tail so that duplicates and
loss are not trivially zero), times ``analyse`` on ``local[*]`` (on a session started for that size, as an
analysis in a new process starts one: ``spark_first_s`` is the cold JVM's first analysis, ``spark_warm_s`` the
later ones' median) and a pandas computation of the same record-level metrics back to back (``--repeat`` pairs,
medians reported), and checks that both agree. Then it starts a Spark standalone cluster (a master and ``--cluster-workers``
workers of one core each, on loopback) and times the same analysis there (``cluster_s``); ``cluster_agree``:
every figure of the cluster's analysis equals the ``local[*]`` one and the compared ones equal pandas'.

pandas runs in a child process bounded by ``--pandas-memory-mb`` (resident memory) and ``--pandas-timeout-s``;
a size it cannot finish within them is reported as failed (``pandas_s`` null, ``pandas_failed`` says why).

    .venv/bin/python benchmarks/analysis_scale.py --sizes 1000000 10000000 100000000 --repeat 3 \\
        --data /var/tmp/analysis-scale

``--data DIR`` keeps the generated histories in DIR and reuses them on the next call (100M records take
about 16 GB); without it they are written to a temporary directory and removed.

Last line: one JSON object for the largest size, with the largest size each engine finished.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil

from testbed.history.events import Action

from machine_speed import reference

MEMBERS, BATCH = 50, 100
PARTITIONS = 2 * MEMBERS  # of the default run (``write_history``: two a member)
T0 = 1_790_000_000_000
COMPARED = ("records_processed", "records_unique_processed", "records_acked", "lost_records", "duplicates_total",
            "duplicate_records", "e2e_latency_p50_ms", "e2e_latency_p99_ms", "e2e_latency_max_ms")


def write_history(root: Path, records: int, members: int = MEMBERS) -> None:
    """``members`` members and twice as many partitions: partition p is owned by member p // 2 all run long;
    batch k of p holds offsets [100k, 100k+99]."""
    partitions = 2 * members
    per_part = records // partitions
    batches = per_part // BATCH
    (root / "history" / "members").mkdir(parents=True)
    (root / "history" / "acks").mkdir(parents=True)
    end = T0 + batches * 100 + 10_000
    with open(root / "history" / "harness.jsonl", "w") as f:
        for kind, ts in ((Action.RUN_START, T0 - 2000), (Action.DRAIN_END, end - 1000), (Action.RUN_END, end)):
            f.write(json.dumps({"name": "action", "ts_ms": ts, "source": "harness", "kind": kind}) + "\n")
    for m in range(members):
        name = f"m{m:02d}"
        lines = [json.dumps({"name": "started", "ts_ms": T0 - 1500, "source": name, "client": "kafka-python",
                             "client_version": "3.0", "group_id": "g", "topics": ["t"], "assignors": ["range"],
                             "commit_mode": "auto", "pid": m}),
                 json.dumps({"name": "assigned", "ts_ms": T0 - 1000, "source": name,
                             "partitions": [["t", 2 * m], ["t", 2 * m + 1]]})]
        for k in range(batches):
            for p in (2 * m, 2 * m + 1):
                if p == partitions - 1 and k == batches - 1:
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
        for p in range(partitions):
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


def tree_rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process (default: this one) and its children (the Spark JVM), in MiB; 0 once gone."""
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


class PeakRss:
    """Peak RSS of a process (default: this one) and its children, sampled every 200 ms."""

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, tree_rss_mb(self.pid))

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def history(records: int, workdir: Path) -> tuple[Path, float]:
    """The run directory of ``records`` records in ``workdir``: written once, reused while it is complete."""
    root = workdir / f"run-{records}"
    done = root / "generated"
    if done.exists():
        return root, 0.0
    shutil.rmtree(root, ignore_errors=True)
    t = time.perf_counter()
    write_history(root, records)
    done.write_text(str(records))
    return root, time.perf_counter() - t


def time_spark(root: Path) -> tuple[dict, float, float]:
    """(metrics, seconds, peak RSS in MB of this process and its children) of one ``analyse``."""
    from testbed.analysis import analyse, get_spark

    get_spark()  # the session's start is not the analysis'
    with PeakRss() as rss:
        t = time.perf_counter()
        metrics = analyse(root)
        elapsed = time.perf_counter() - t
    return {k: m.value for k, m in metrics.metrics.items()}, elapsed, rss.peak


def time_pandas(root: Path, memory_mb: int, timeout_s: float) -> tuple[dict | None, float | None, float, str | None]:
    """pandas in a child process, ended when its resident memory passes ``memory_mb`` or it runs past
    ``timeout_s``: (figures, seconds, peak MB, why it failed)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=pandas_metrics, args=(str(root), queue))
    start = time.perf_counter()
    proc.start()
    child = psutil.Process(proc.pid)
    peak, failed = 0.0, None
    while True:
        try:
            out, elapsed, peak_mb = queue.get(timeout=0.5)
            proc.join()
            return out, elapsed, peak_mb, None
        except Exception:  # queue.Empty: still running
            pass
        try:
            peak = max(peak, child.memory_info().rss / 2**20)
        except psutil.Error:
            pass
        if not proc.is_alive():
            failed = f"exited with code {proc.exitcode}"
        elif peak > memory_mb:
            failed = f"resident memory passed {memory_mb} MB"
        elif time.perf_counter() - start > timeout_s:
            failed = f"not done in {timeout_s:.0f} s"
        if failed:
            proc.kill()
            proc.join()
            return None, None, peak, failed


def disagreements(spark: dict, pandas: dict | None) -> dict:
    if pandas is None:
        return {}
    return {k: (spark[k], pandas[k]) for k in COMPARED if spark[k] != pandas[k]}


def run_size(root: Path, records: int, gen_s: float, repeat: int, memory_mb: int, timeout_s: float) -> dict:
    """``repeat`` pairs of Spark then pandas, back to back; medians. pandas is not run again once it failed."""
    spark_s, pandas_s, spark_peak, pandas_peak = [], [], [], []
    spark_metrics, pandas_out, failed = {}, None, None
    for _ in range(repeat):
        spark_metrics, elapsed, peak = time_spark(root)
        spark_s.append(elapsed)
        spark_peak.append(peak)
        if failed is None:
            out, elapsed, peak, failed = time_pandas(root, memory_mb, timeout_s)
            pandas_peak.append(peak)
            if failed is None:
                pandas_out = out
                pandas_s.append(elapsed)
    disagree = disagreements(spark_metrics, pandas_out)
    result = {"records": records, "spark_s": round(statistics.median(spark_s), 1),
              # the first analysis on the size's new session (a cold JVM), and the later ones' median
              "spark_first_s": round(spark_s[0], 1),
              "spark_warm_s": round(statistics.median(spark_s[1:]), 1) if len(spark_s) > 1 else None,
              "pandas_s": round(statistics.median(pandas_s), 1) if failed is None else None,
              "spark_runs_s": [round(x, 1) for x in spark_s], "pandas_runs_s": [round(x, 1) for x in pandas_s],
              "spark_peak_mb": round(max(spark_peak)), "pandas_peak_mb": round(max(pandas_peak)),
              "generate_s": round(gen_s, 1),
              "agree": not disagree if pandas_out is not None else None,  # null: pandas gave nothing to compare
              "spark_metrics": spark_metrics, "pandas_out": pandas_out}
    if failed:
        result["pandas_failed"] = failed
    if disagree:
        result["disagreements"] = disagree
    return result


def shown(result: dict) -> str:
    return json.dumps({k: v for k, v in result.items() if k not in ("spark_metrics", "pandas_out")})


def run_cluster(roots: dict[int, Path], results: dict[int, dict], workers: int) -> None:
    """The same analysis on a standalone cluster of ``workers`` one-core workers, smallest size first."""
    from testbed.analysis.spark.session import spark_master
    from testbed.spark_cluster import SparkStandalone

    memory = os.environ["TESTBED_SPARK_EXECUTOR_MEMORY"]
    worker_mb = int(memory.removesuffix("g")) * 1024 + 512 if memory.endswith("g") else 2560
    with SparkStandalone(workers=workers, cores_per_worker=1, memory_per_worker=f"{worker_mb}m") as cluster, \
            spark_master(cluster.master_url):
        for records, root in sorted(roots.items()):
            metrics, elapsed, _ = time_spark(root)
            local = results[records]["spark_metrics"]
            differ = {k: (metrics[k], local.get(k)) for k in metrics if metrics[k] != local.get(k)}
            differ.update({f"pandas:{k}": v for k, v in disagreements(metrics, results[records].get("pandas_out")).items()})
            results[records].update(cluster_s=round(elapsed, 1), cluster_agree=not differ)
            if differ:
                results[records]["cluster_disagreements"] = differ
            print(shown(results[records]), file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--data", type=Path, default=None, help="keep the generated histories here and reuse them")
    parser.add_argument("--repeat", type=int, default=1, help="Spark-then-pandas pairs per size (medians)")
    parser.add_argument("--pandas-memory-mb", type=int, default=16_384)
    parser.add_argument("--pandas-timeout-s", type=float, default=600.0)
    parser.add_argument("--cluster-workers", type=int, default=2, help="0: no standalone cluster")
    parser.add_argument("--cluster-executor-memory", default="2g")
    args = parser.parse_args()
    if any(s < PARTITIONS * BATCH for s in args.sizes):
        parser.error(f"--sizes: each size must be at least {PARTITIONS * BATCH} records")
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    os.environ.setdefault("TESTBED_SPARK_EXECUTOR_MEMORY", args.cluster_executor_memory)  # read once, at first use
    from testbed.analysis import get_spark, stop_spark
    from testbed.run.layout import RunDir

    machine = reference()
    workdir = args.data or Path(tempfile.mkdtemp(prefix="analysis-scale-"))
    results: dict[int, dict] = {}
    roots: dict[int, Path] = {}
    try:
        for size in sorted(args.sizes):
            roots[size], gen_s = history(size, workdir)
            # A session of its own per size, started for that size as an analysis in a new process starts it (its
            # driver's compiler depends on the histories' size): the first analysis of each size is a cold one.
            stop_spark()
            t = time.perf_counter()
            get_spark(RunDir(roots[size]).history_bytes())
            print(f"spark session started in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            results[size] = run_size(roots[size], size, gen_s, args.repeat, args.pandas_memory_mb, args.pandas_timeout_s)
            print(shown(results[size]), file=sys.stderr)
        stop_spark()
        if args.cluster_workers:
            run_cluster(roots, results, args.cluster_workers)
    finally:
        stop_spark()
        if args.data is None:
            shutil.rmtree(workdir, ignore_errors=True)
    last = results[max(results)]
    largest = {"spark": max((n for n in results), default=None),
               "pandas": max((n for n, r in results.items() if r["pandas_s"] is not None), default=None)}
    if args.cluster_workers:
        largest["cluster"] = max((n for n, r in results.items() if "cluster_s" in r), default=None)
    keys = ("records", "spark_s", "spark_first_s", "spark_warm_s", "pandas_s", "agree", "cluster_s", "cluster_agree", "spark_peak_mb", "pandas_failed")
    print(json.dumps({**{k: last[k] for k in keys if k in last}, "largest_finished": largest, "machine": machine}))


if __name__ == "__main__":
    main()
