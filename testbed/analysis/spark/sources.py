"""Reading a saved run directory with Spark, and writing analysis outputs, for local paths or any
Hadoop-compatible URI (``hdfs://``, ``s3a://``, ``file://``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ...run.layout import LAYOUT
from .event_schemas import HARNESS_SCHEMA, HOST_SCHEMA, MEMBER_SCHEMA
from .location import is_remote


def join(base: str, *parts: str) -> str:
    return "/".join([base.rstrip("/"), *parts])


@dataclass(frozen=True)
class RunFiles:
    """Which inputs of a run exist (globs usable by Spark)."""

    root: str
    members: str | None
    harness: str | None
    acks: str | None
    brokers: str | None
    host: str | None = None  # the host sampler's samples (runs saved before it existed have none)


def matches(spark: SparkSession, pattern: str) -> bool:
    if not is_remote(pattern):
        local = pattern.removeprefix("file://")
        base, _, glob = local.rpartition("/")
        return any(p.is_file() for p in Path(base).glob(glob))
    jvm = spark._jvm  # Hadoop FileSystem: the same resolution Spark itself uses for reading
    hpath = jvm.org.apache.hadoop.fs.Path(pattern)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    found = fs.globStatus(hpath)
    return found is not None and len(found) > 0


def input_bytes(spark: SparkSession, patterns: list[str]) -> int:
    """Total size of the files matched by the globs (decides the small-input settings)."""
    total = 0
    for pattern in patterns:
        if not is_remote(pattern):
            base, _, glob = pattern.removeprefix("file://").rpartition("/")
            total += sum(p.stat().st_size for p in Path(base).glob(glob) if p.is_file())
            continue
        jvm = spark._jvm
        hpath = jvm.org.apache.hadoop.fs.Path(pattern)
        fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
        total += sum(st.getLen() for st in (fs.globStatus(hpath) or []))
    return total


def locate(spark: SparkSession, run_dir: str) -> RunFiles:
    root = run_dir.rstrip("/")
    candidates = {
        "members": join(root, LAYOUT.member_log("*").as_posix()),
        "harness": join(root, LAYOUT.harness_log.as_posix()),
        "acks": join(root, LAYOUT.ack_log("*").as_posix()),
        "brokers": join(root, LAYOUT.broker_log("*").as_posix()),
        "host": join(root, LAYOUT.host_log.as_posix()),
    }
    found = {k: (v if matches(spark, v) else None) for k, v in candidates.items()}
    if found["members"] is None:
        raise FileNotFoundError(f"{run_dir}: no member histories at history/members/*.jsonl; is this a run directory?")
    return RunFiles(root=root, **found)


def read_member_events(spark: SparkSession, pattern: str) -> DataFrame:
    """Member events with ``member`` (the source, else the file name) and ``seq`` (file order)."""
    df = spark.read.schema(MEMBER_SCHEMA).option("mode", "PERMISSIVE").json(pattern)
    file_member = F.regexp_extract(F.input_file_name(), r"([^/]+)\.jsonl$", 1)
    return df.withColumn("member", F.coalesce(F.col("source"), file_member)).withColumn(
        "seq", F.monotonically_increasing_id()
    ).filter(F.col("name").isNotNull() & F.col("ts_ms").isNotNull())


def read_harness(spark: SparkSession, path: str) -> DataFrame:
    return spark.read.schema(HARNESS_SCHEMA).json(path).filter(F.col("name") == "action")


def read_host_samples(spark: SparkSession, path: str) -> DataFrame:
    """The host sampler's samples; a torn last line (the run was killed mid-write) is dropped."""
    return (spark.read.schema(HOST_SCHEMA).option("mode", "DROPMALFORMED").json(path)
            .filter((F.col("name") == "host_sample") & F.col("ts_ms").isNotNull() & F.col("interval_ms").isNotNull()))


# The fields of an ack line the analysis reads.
ACK_FIELDS = "name string, topic string, partition int, offset long, produce_ts_ms long"


def read_ack_lines(spark: SparkSession, pattern: str) -> DataFrame:
    """Every whole ack line: ``topic, partition, offset, produce_ts_ms``, any of them null (an ack without an
    offset: the broker had already written an idempotent producer's retry).

    They are the largest input (one line per record). Spark's JSON reader with only these fields is the
    cheapest parse measured: at 10M acks about half the time of extracting the fields with regular expressions
    (benchmarks/analysis_scale.py, docs/analysis.md), and it tokenises each line once. A torn line is dropped
    whole: a line that is not one whole JSON object (the writer was killed mid-write) is dropped by the
    reader, never read in part (Spark 4's permissive mode would keep the fields read before the tear)."""
    lines = spark.read.schema(ACK_FIELDS).option("mode", "DROPMALFORMED").json(pattern)
    return lines.filter(F.col("name") == "ack").select("topic", "partition", "offset", "produce_ts_ms")


def read_ack_keys(spark: SparkSession, pattern: str) -> DataFrame:
    """The key and per-key sequence number of every whole ack line: which records the load produced, by name."""
    lines = spark.read.schema("name string, key string, seq long").option("mode", "DROPMALFORMED").json(pattern)
    return lines.filter((F.col("name") == "ack") & F.col("key").isNotNull()).select("key", "seq")


def read_acks(spark: SparkSession, pattern: str) -> DataFrame:
    """The acks that name their record: a topic, an offset and a produce time."""
    acks = read_ack_lines(spark, pattern)
    return acks.filter(F.col("offset").isNotNull() & F.col("produce_ts_ms").isNotNull()
                       & F.col("topic").isNotNull() & (F.col("topic") != ""))


def read_broker_lines(spark: SparkSession, pattern: str, keep: str) -> list[tuple[str, str]]:
    """(broker, line) for the lines worth parsing, those the regular expression ``keep`` finds; the rest never
    leaves Spark."""
    df = spark.read.text(pattern).withColumn(
        "broker", F.regexp_extract(F.input_file_name(), r"broker-([^/]+)\.log$", 1)
    )
    kept = df.filter(F.col("value").rlike(keep)).select("broker", "value")
    return [(r["broker"], r["value"]) for r in kept.collect()]


def write_bytes(spark: SparkSession, uri: str, data: bytes) -> None:
    if not is_remote(uri):
        path = Path(uri.removeprefix("file://"))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return
    jvm = spark._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(uri)
    fs = hpath.getFileSystem(spark._jsc.hadoopConfiguration())
    out = fs.create(hpath, True)
    try:
        out.write(bytearray(data))
    finally:
        out.close()
