"""The one Spark session of this process, started on first use and reused.

Starting a session costs ~5 s on 2 cores, so every analysis in a process shares it. Its master, memory, driver
JVM options, shuffle partitions and log file are settings (``testbed.settings``: TESTBED_SPARK_MASTER,
TESTBED_SPARK_DRIVER_MEMORY, TESTBED_SPARK_DRIVER_JAVA_OPTS, TESTBED_SPARK_SHUFFLE_PARTITIONS, TESTBED_SPARK_LOG),
so that a cluster can be used without code changes.
"""

from __future__ import annotations

import os
import re
import socket
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import psutil
from pyspark import SparkContext
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from ...errors import ConfigError
from ...settings import MANY_ANALYSES_JAVA_OPTS, PARALLEL_GC, many_analyses_here, settings
from . import class_archive
from .location import LARGE_INPUT_BYTES, is_local, is_remote, master, override
from .static_lookups import keep_static_lookups

_LOG4J = Path(__file__).with_name("log4j2.properties")
_lock = threading.Lock()
_session: SparkSession | None = None


C1_ONLY = "-XX:TieredStopAtLevel=1"
# A session started for large histories keeps the JVM's collector: PARALLEL_GC was measured on small runs only.
SMALL_RUN_OPTIONS = (C1_ONLY, PARALLEL_GC)


def driver_java_opts(input_bytes: int | None = None) -> str:
    """The driver's JVM options: the setting; its default, for a session started for ``input_bytes`` of histories
    at least LARGE_INPUT_BYTES, without SMALL_RUN_OPTIONS (a large analysis is long enough for C2's code to pay
    back)."""
    config = settings()
    opts = config.spark_driver_java_opts
    chosen = "spark_driver_java_opts" in config.model_fields_set
    if not chosen and many_analyses_here():
        return MANY_ANALYSES_JAVA_OPTS
    if not chosen and input_bytes is not None and input_bytes >= LARGE_INPUT_BYTES:
        opts = " ".join(o for o in opts.split() if o not in SMALL_RUN_OPTIONS)
    return opts


def spark_settings(input_bytes: int | None = None, *, class_archive_options: str = "") -> dict[str, str]:
    """The Spark configuration the session is built with, from the settings; ``input_bytes``: the size of the
    histories it starts for, when known (``driver_java_opts``); ``class_archive_options``: the driver's options for
    its class-data archive (``class_archive.java_options``), before the settings' (which can override them)."""
    config = settings()
    shuffle = str(config.spark_shuffle_partitions)
    java_opts = f"-Dlog4j.configurationFile={_LOG4J.as_uri()} -Dlog4j2.configurationFile={_LOG4J.as_uri()}"
    log = spark_log_path()
    # A JVM that crashes (one given a damaged class-data archive, say) writes its report beside the Spark log, not
    # into the working directory (a user's repository).
    crash_report = f"-XX:ErrorFile={log.with_name(f'{log.stem}-crash-%p.log')}"
    return {
        "spark.master": master(),
        "spark.driver.memory": config.spark_driver_memory,
        "spark.executor.memory": config.spark_executor_memory,
        "spark.sql.shuffle.partitions": shuffle,
        "spark.default.parallelism": shuffle,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.adaptive.enabled": "true",
        # Queries of several threads share the cores (``scheduler_pool``): without it a small query waits
        # behind every task of a large one submitted before it.
        "spark.scheduler.mode": "FAIR",
        # PySpark's DataFrame debugging (4.0) records each API call's Python call site in the driver: several py4j
        # round trips per column function (the session, the conf, set and clear of the origin), most of the
        # analysis's round trips and seconds of a small run's. Errors then name the query, not the Python line.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.driver.extraJavaOptions": " ".join(
            o for o in (java_opts, crash_report, class_archive_options, driver_java_opts(input_bytes)) if o),
        "spark.executor.extraJavaOptions": java_opts,
        # Loopback by default: the driver must not advertise another interface unless told to.
        "spark.driver.host": config.spark_driver_host,
        "spark.driver.bindAddress": config.spark_driver_host,
    }


SPARK_LOG = re.compile(r"testbed-spark-(\d+)(?:-crash-\d+)?\.log")  # a JVM crash report beside its log too
STALE_LOG_S = 86_400.0  # a log of a process that ended is kept a day: it holds what its JVM said if it failed


def spark_log_path() -> Path:
    return settings().spark_log or Path(tempfile.gettempdir()) / f"testbed-spark-{os.getpid()}.log"


def remove_stale_spark_logs(older_than_s: float = STALE_LOG_S) -> list[Path]:
    """Remove the default Spark logs (``testbed-spark-<pid>.log`` in the temporary directory) of processes that are
    gone and that were last written more than ``older_than_s`` ago; returns them."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob("testbed-spark-*.log"):
        match = SPARK_LOG.fullmatch(path.name)
        try:
            if match and not psutil.pid_exists(int(match[1])) and time.time() - path.stat().st_mtime > older_than_s:
                path.unlink()
                removed.append(path)
        except OSError:  # removed meanwhile by another process's sweep
            continue
    return removed


@contextmanager
def _jvm_stderr_to(path: Path) -> Iterator[None]:
    """Point fd 2 at ``path`` while the JVM is spawned, so it inherits that file as its stderr.

    Spark prints banners ("Setting default log level ...", incubator-module warnings) before any
    log4j setting applies; the JVM's stderr is the only place they can all be caught.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with path.open("ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def get_spark(input_bytes: int | None = None) -> SparkSession:
    """The process-wide session (created once, thread-safe); ``input_bytes``: the size of the histories a session
    started now is for, when known (its driver's compiler depends on it: ``driver_java_opts``)."""
    global _session
    with _lock:
        if _session is None or _session.sparkContext._jsc is None:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            # Executors of a cluster run Python tasks with the driver's interpreter (this venv: pyspark, pandas).
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            remove_stale_spark_logs()
            archive = class_archive.java_options()
            try:
                _session = _start(spark_settings(input_bytes, class_archive_options=archive))
            except PySparkRuntimeError as exc:
                if not archive:
                    raise
                # A JVM that cannot map the archive crashes at start; one that starts without it shows it was that.
                _session = _start(spark_settings(input_bytes))
                class_archive.discard(f"the Spark JVM did not start with it ({exc.getCondition()})")
            _session.sparkContext.setLogLevel("ERROR")
            keep_static_lookups(_session.sparkContext._jvm)
        return _session


def _start(conf: dict[str, str]) -> SparkSession:
    builder = SparkSession.builder.appName("testbed-analysis")
    for key, value in conf.items():
        builder = builder.config(key, value)
    with _jvm_stderr_to(spark_log_path()):
        return builder.getOrCreate()


def has_session() -> bool:
    """Whether this process holds a live session (started and not stopped)."""
    return _session is not None and _session.sparkContext._jsc is not None


def stop_spark() -> None:
    """Stop the shared session (tests and benchmarks call this at exit)."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


@contextmanager
def spark_master(url: str) -> Iterator[None]:
    """Run this process's analyses on the Spark master ``url`` (a standalone cluster, say) for a while: the
    shared session is stopped and made again on ``url``, and stopped again at the end."""
    stop_spark()
    override(url)
    try:
        yield
    finally:
        stop_spark()
        override(None)


def check_executors_see(spark: SparkSession, path: str) -> None:
    """Refuse ``path`` (a local directory the driver reads from) when the executors of a cluster cannot read it:
    a task per executor core looks for it and says on which host it is missing. Nothing to check on a local
    master (its tasks run in the driver) or for a URL such as ``s3a://`` or ``hdfs://`` (Spark reads it)."""
    if is_local(master()) or is_remote(path):
        return
    path = path.removeprefix("file://")
    slots = max(1, spark.sparkContext.defaultParallelism)

    def probe(_: object) -> tuple[str, bool]:
        return socket.gethostname(), os.path.isdir(path)

    seen = spark.sparkContext.parallelize(range(slots), slots).map(probe).collect()
    if blind := sorted({host for host, ok in seen if not ok}):
        raise ConfigError(
            f"run directory {path}: the Spark executors on {', '.join(blind)} cannot see it (master {master()}). "
            "Executors read the histories themselves: keep runs on a path every worker mounts at the same place "
            "(a shared file system) or in an object store (s3a://...), and pass that path (docs/analysis.md)")


SMALL_INPUT_BYTES = 64 << 20
# For a small history, code generation and shuffle tasks cost more than the work (seconds per
# query on 2 cores); these SQL settings can change on a live session and are restored afterwards.
_SMALL_INPUT_SQL = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.adaptive.enabled": "false",
    # Every file of a small input in one partition (one task per stage): a task costs more than its rows here.
    "spark.sql.files.minPartitionNum": "1",
    "spark.sql.files.openCostInBytes": str(64 << 10),
    # Their files listed by the driver: past 32 paths (one member history each) Spark lists them in a job of a task
    # per path.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1024",
    # Interpreted expressions: no Janino compile per projection (measured: cold analysis 64 s -> 46 s,
    # warm 38 s -> 19 s under load). An internal Spark setting, so only ever applied to small inputs.
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def _sql_for(spark: SparkSession, input_bytes: int) -> dict[str, str | None]:
    """The SQL settings for an input of ``input_bytes``: the small-input ones under ``SMALL_INPUT_BYTES``, else
    what the session was built with (None: Spark's default). Unsetting a key would fall back to Spark's own
    default, not the session's (200 shuffle partitions instead of the configured few)."""
    if input_bytes < SMALL_INPUT_BYTES:
        return dict(_SMALL_INPUT_SQL)
    built = dict(spark.sparkContext.getConf().getAll())
    return {k: built.get(k) for k in _SMALL_INPUT_SQL}


def _apply(spark: SparkSession, values: dict[str, str | None]) -> None:
    for k, v in values.items():
        if v is None:
            spark.conf.unset(k)
        else:
            spark.conf.set(k, v)


@contextmanager
def sized_for(spark: SparkSession, input_bytes: int) -> Iterator[None]:
    """Queries run meanwhile use the small-input SQL settings when ``input_bytes`` is under
    ``SMALL_INPUT_BYTES``, and the session's own otherwise (also inside a small input's block: the acks of a
    run can be large where its other histories are small)."""
    saved = {k: spark.conf.get(k, None) for k in _SMALL_INPUT_SQL}
    _apply(spark, _sql_for(spark, input_bytes))
    try:
        yield
    finally:
        _apply(spark, saved)


# The SQL settings a session of ``own_session`` may be given; each taker sets every one of them.
_SESSION_SQL = (*_SMALL_INPUT_SQL, "spark.sql.adaptive.enabled")
_idle_lock = threading.Lock()
_idle: list[SparkSession] = []  # sessions of ``own_session`` no thread uses now


_built: weakref.WeakKeyDictionary[SparkContext, dict[str, str | None]] = weakref.WeakKeyDictionary()


def _built_sql(spark: SparkSession) -> dict[str, str | None]:
    """The ``_SESSION_SQL`` settings ``spark``'s context was built with, read once per context: its configuration is
    fixed once it runs, and reading all of it costs two py4j round trips per entry (about 240 per analysis)."""
    context = spark.sparkContext
    if (values := _built.get(context)) is None:
        conf = context.getConf()
        values = _built[context] = {k: conf.get(k) for k in _SESSION_SQL}
    return values


@contextmanager
def own_session(spark: SparkSession, values: dict[str, str | None] | None = None) -> Iterator[SparkSession]:
    """A session of ``spark``'s context that only the caller uses meanwhile (same SparkContext, cache and persisted
    frames; its own SQL settings): what the context was built with, ``values`` over it. A session another caller
    gave back is reused: a new one's first queries build its state (catalog, function registry, analyzer), about
    0.2 s of a small run's warm analysis."""
    built = _built_sql(spark)
    with _idle_lock:
        _idle[:] = [s for s in _idle if s.sparkContext._jsc is not None]  # a stopped context's sessions go
        session = next((s for s in reversed(_idle) if s.sparkContext is spark.sparkContext), None)
        if session is not None:
            _idle.remove(session)
    session = session or spark.newSession()
    _apply(session, {**{k: built.get(k) for k in _SESSION_SQL}, **(values or {})})
    try:
        yield session
    finally:
        with _idle_lock:
            _idle.append(session)


def session_for(spark: SparkSession, input_bytes: int) -> AbstractContextManager[SparkSession]:
    """A session of its own for the queries over one input (``own_session``): the settings of ``input_bytes``'
    size, fixed while it is held, so its queries can run on another thread beside queries sized otherwise
    (``sized_for`` changes a session's settings for a while, which another thread would see).

    Without adaptive execution: an adaptive query that fills a cache runs all its stages holding that cache's
    lock, and every ``unpersist`` on another thread waits for it (seen in a thread dump: the member histories'
    queries stalled 5 s behind the acks' pass at 10M records)."""
    return own_session(spark, {**_sql_for(spark, input_bytes), "spark.sql.adaptive.enabled": "false"})


@contextmanager
def scheduler_pool(spark: SparkSession, name: str) -> Iterator[None]:
    """Jobs this thread submits meanwhile go to the fair scheduler's pool ``name``: pools share the cores
    task by task, so queries of other threads (the default pool) are not queued behind these."""
    context = spark.sparkContext
    context.setLocalProperty("spark.scheduler.pool", name)
    try:
        yield
    finally:
        context.setLocalProperty("spark.scheduler.pool", None)
