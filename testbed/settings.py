"""Settings read from the environment (prefix TESTBED_), validated once: the only place testbed reads its
configuration from the environment (docs/settings.md lists them)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from zoneinfo import ZoneInfo

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError
from .package_files import RECIPES_DIR

# The newest 4.x release whose whole broker classpath Maven Central serves (4.4.0's since 2026-11-28, when
# kafka-tools-api 4.4.0 appeared there), made the default once the whole suite passed on it.
DEFAULT_KAFKA_VERSION = "4.4.0"
PROJECT_LABEL = "io.testbed.project"
PROJECT_NAME = "kafka-rebalance-testbed"


# A member is a short-lived, mostly idle JVM, many to a 2-core machine: C1 only and the serial GC
# halve its start-up CPU (1.5 s instead of 2.8 s measured) and its thread count (13 instead of 20).
DEFAULT_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
# A run's brokers live for minutes, not the weeks where C2's code pays back: with the JVM's defaults C2's compiler
# threads took 23 of a broker's 55 core-seconds in the README's main job (70 s), a third of a core all along the run
# on a 2-core machine, beside the members whose pauses are measured; C1 only, 30 core-seconds (docs/figures.md).
BROKER_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
# The Spark driver's collector: under G1 (the JVM's default) the chunks Spark allocates for every stage's broadcast
# task binary (4 MB), every result (1 MB) and every aggregation's memory page (16 MB) are humongous objects in the
# 1 MB regions of a 2 GB heap, and they started a concurrent marking cycle about every analysis on 2 cores. Paired
# against G1 over warm analyses of a small run: ahead in every round, wall -7 to -30 %, CPU -11 to -34 %
# (docs/figures.md). Not measured on large histories.
PARALLEL_GC = "-XX:+UseParallelGC"
# The Spark driver of a pytest worker's own session, which analyses hundreds of runs: the JVM's defaults, where the
# optimising compiler pays back (45 unit tests of the pipeline: 165 s against 172 s C1 only), but the throughput
# collector. Not the analysis service's: fifteen analyses on a new service took 188 core-seconds tiered against 134
# C1 only (docs/figures.md), so it keeps the driver's default.
MANY_ANALYSES_JAVA_OPTS = PARALLEL_GC
ENV_PREFIX = "TESTBED_"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    kafka_version: str = Field(DEFAULT_KAFKA_VERSION, description="Kafka version of the brokers")
    base_image: str | None = Field(
        None, description="a public JRE image to pull and build FROM, instead of the local debootstrap base"
    )
    debian_mirror: str | None = Field(None, description="mirror for debootstrap; default: the one apt uses")
    cache_dir: Path = Field(Path.home() / ".cache" / "testbed", description="venvs, jars, logs")
    docker_dir: Path = Field(RECIPES_DIR, description="the image recipes (shipped in the package)")
    engine_start_timeout_s: float = Field(90.0, gt=0, description="how long a started dockerd may take to answer")
    compact_memory: bool = Field(
        True, description="`testbed setup` ends by compacting the kernel's memory where it may (root; "
                          "testbed/host/compaction.py); false: it leaves the kernel alone")
    java_opts: str = Field(DEFAULT_JVM_OPTIONS, description="JVM options of Java members; empty: the JVM's defaults")
    broker_java_opts: str = Field(
        BROKER_JVM_OPTIONS, description="further JVM options of every broker (after the image's heap and G1 settings); "
                                        "empty: the JVM's defaults")
    broker_cpu_shares: int = Field(
        32768, ge=0, le=262144,
        description="CPU weight of each broker container (cgroup cpu.shares, 2..262144), beside the processes of the "
                    "host (a member, each in its own session, weighs 1024): the cluster stands for machines of its "
                    "own and is not starved by the fleet beside it (docs/cluster.md); 0: the engine's default "
                    "placement, in which all containers together weigh as one process")
    spark_master: str = Field("local[*]", description="Spark master of the analysis")
    ray_address: str | None = Field(
        None, description="host:port of a Ray cluster's head: the fleet's members run on its nodes, as each fleet "
                          "entry's placement says (docs/placement.md); none: on this machine")
    spark_driver_memory: str = Field("2g", description="Spark driver memory")
    spark_driver_java_opts: str = Field(
        f"-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m {PARALLEL_GC}",
        description="JVM options of the Spark driver (on a local master, the whole analysis). C1 only by default: a "
                    "run's analysis is seconds of many small queries, where the optimising compiler's work does not pay "
                    "back (docs/figures.md); with the code cache the JVM gives tiered compilation, not C1's 48 MB, "
                    "which an analysis fills, so that the JVM stops throwing out and recompiling code; the throughput "
                    "collector, not G1, whose concurrent cycles Spark's large buffers start; a session started for "
                    "histories of 512 MB or more leaves out -XX:TieredStopAtLevel=1 and -XX:+UseParallelGC unless "
                    "this is set; empty: the JVM's defaults")
    spark_driver_host: str = Field("127.0.0.1", description="address the Spark driver binds and advertises; a "
                                                              "cluster on other hosts needs one its executors reach")
    spark_executor_memory: str = Field("1g", description="memory of each Spark executor (a cluster's; local[*] "
                                                          "runs its tasks in the driver)")
    spark_shuffle_partitions: int = Field(
        4, ge=1, description="shuffle partitions (histories are small; 200 tiny tasks cost more than they save)")
    spark_class_archive: bool = Field(
        True, description="the Spark driver's JVM maps the class-data archive `testbed setup` made (its classes loaded "
                          "from one mapped file: a session's start about 3 s shorter); false: it reads Spark's jars")
    spark_log: Path | None = Field(
        None, description="file that receives the Spark JVM's stderr; default <tmp>/testbed-spark-<pid>.log")
    analysis_service: bool = Field(
        True, description="analyse runs in one warm Spark process shared by runs and by pytest workers without a Spark "
                          "session of their own, started on first use and ended after TESTBED_ANALYSIS_SERVICE_IDLE_S "
                          "idle, by `testbed clean` and at the end of the pytest session that started it; false: each "
                          "run analysed in its own process")
    analysis_service_idle_s: float = Field(
        600.0, gt=0, description="seconds the analysis service waits without a request before it ends itself")
    analysis_service_start_timeout_s: float = Field(
        60.0, gt=0, description="how long a started analysis service may take to answer")
    broker_log_tz: str = Field("UTC", description="IANA time zone of the brokers' log timestamps")

    @field_validator("broker_cpu_shares")
    @classmethod
    def _shares_or_default(cls, shares: int) -> int:
        if shares == 1:  # the kernel's least weight is 2
            raise ValueError("must be 0 (the engine's default placement) or a weight from 2 to 262144")
        return shares

    @field_validator("broker_log_tz")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except Exception:  # ZoneInfoNotFoundError, or ValueError for a malformed name
            raise ValueError(f"{name!r} is not an IANA time zone (e.g. UTC, Europe/Paris)") from None
        return name


def env_name(field: str) -> str:
    return f"{ENV_PREFIX}{field.upper()}"


# Settings that shape how a run starts its parts (brokers, images, members, their placement) or how a client reaches
# the analysis service, never how a saved history is analysed: the analysis service's place leaves them out, so a run
# placed on Ray or with other member JVM options is analysed on the warm service that other runs use, not on a new
# one started cold beside it (a JVM's start, about 1.5 GB, 15-40 s of a first analysis). Any other TESTBED_* variable
# parts services, the safe side for a setting added later.
RUN_ONLY_SETTINGS = frozenset({
    "kafka_version", "base_image", "debian_mirror", "docker_dir", "engine_start_timeout_s", "java_opts",
    "broker_java_opts", "broker_cpu_shares", "ray_address", "analysis_service", "analysis_service_start_timeout_s",
})


_many_analyses_here = False


def analyse_many_runs_here() -> None:
    """This process analyses many runs in its own Spark session (a pytest worker): its driver gets
    MANY_ANALYSES_JAVA_OPTS unless TESTBED_SPARK_DRIVER_JAVA_OPTS is set. Said of this process only, not through its
    environment, which its children (an analysis service, a `testbed run`) inherit."""
    global _many_analyses_here
    _many_analyses_here = True


def many_analyses_here() -> bool:
    return _many_analyses_here


@lru_cache(maxsize=1)
def settings() -> Settings:
    """The settings of this process, read once; a bad value is refused naming its variable."""
    try:
        return Settings()
    except ValidationError as exc:
        raise ConfigError("; ".join(
            f"{env_name(str(err['loc'][0]))}={err['input']!r}: {err['msg'].removeprefix('Value error, ')}"
            for err in exc.errors())) from None
