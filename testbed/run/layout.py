"""Where a run keeps its files. One place, so writers, analysis, checkers and reports agree."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def broker_log_name(node_id: int | str) -> str:
    """A broker's log file, in a run's ``brokers/`` or any directory ``KafkaCluster.copy_logs`` is given."""
    return f"broker-{node_id}.log"


# The log of the Toxiproxy server in front of the brokers' clients, beside the broker logs (runs with latency).
PROXY_LOG_NAME = "toxiproxy.log"
# The log of the cluster's watchdog (testbed.brokers.watchdog), beside the broker logs: what it reaped when
# the run died before removing its brokers.
WATCHDOG_LOG_NAME = "watchdog.log"


@dataclass(frozen=True)
class RunDir:
    """The directory of one run, e.g. ``reports/20261122-101500-rolling-bounce/``.

    scenario.yaml                    the scenario as run, overrides and matrix values applied
    history/members/<member>.jsonl   one file per member process, written only by it
    history/harness.jsonl            harness actions (bounces, kills, pauses, broker faults)
    history/acks/<producer>.jsonl    producer acknowledgements, one file per producer process
    history/host.jsonl               the host sampler's samples (CPU, run queue, memory, per-role CPU)
    logs/<member>.log                each member process's own output (stdout and stderr)
    configs/<member>.json            the configuration each member process was started with
    configs/<member>.properties      a Java member's client settings, as its JVM read them
    configs/<member>.agent.properties  a JVM program's member and history, for testbed's Java agent
    brokers/broker-<id>.log          each broker's server log, copied at the end
    brokers/toxiproxy.log            the latency proxy's log (runs with latency steps)
    brokers/watchdog.log             the cluster watchdog's log: what it reaped if the run was killed
    load/                            Locust's CSV, HTML report, JSON stats and process logs; the
                                     generator's finish markers for its producer processes
    analysis/metrics.json            measurements; analysis/tables/<table>.parquet for checkers and reports
    result.json                      verdict, expectations, checks and whether the run is partial
    report.html                      the run's report, rendered from the files above
    error.txt, analysis-error.txt, report-error.txt
                                     the traceback of a run, an analysis or a rendering that failed

    ``RunDir(Path())`` is the layout relative to any root: the analysis joins its paths onto a
    Hadoop URI (``hdfs://``, ``s3a://``). A ``"*"`` for a name gives the glob of every such file.
    """

    root: Path

    def create(self) -> "RunDir":
        for d in (self.members, self.acks, self.logs, self.configs, self.brokers, self.load, self.tables):
            d.mkdir(parents=True, exist_ok=True)
        return self

    # ---- what the run writes as it goes -------------------------------------------------------

    @property
    def scenario(self) -> Path:
        return self.root / "scenario.yaml"

    @property
    def history(self) -> Path:
        return self.root / "history"

    def history_bytes(self) -> int:
        """The size of the run's histories (every file under history/): what its analysis reads."""
        return sum(p.stat().st_size for p in self.history.rglob("*") if p.is_file())

    @property
    def members(self) -> Path:
        return self.history / "members"

    def member_log(self, member_id: str) -> Path:
        return self.members / f"{member_id}.jsonl"

    @property
    def harness_log(self) -> Path:
        return self.history / "harness.jsonl"

    @property
    def host_log(self) -> Path:
        """The machine's saturation over the run, a few samples a second (``testbed.host``)."""
        return self.history / "host.jsonl"

    @property
    def acks(self) -> Path:
        return self.history / "acks"

    def ack_log(self, producer_id: str) -> Path:
        return self.acks / f"{producer_id}.jsonl"

    @property
    def produce_failures(self) -> Path:
        """The records each producer gave up on (``produce_failed``), one file a producer, empty when none."""
        return self.history / "produce_failures"

    def produce_failure_log(self, producer_id: str) -> Path:
        return self.produce_failures / f"{producer_id}.jsonl"

    @property
    def effects(self) -> Path:
        """What the user's store holds after the run, one ``{topic, partition, offset}`` a line (the scenario's
        ``effects`` command's output, saved as it printed it)."""
        return self.history / "effects.jsonl"

    @property
    def streams_output(self) -> Path:
        """A Kafka Streams application's output topic as a read_committed consumer read it after the instances
        stopped (``testbed.scenario.streams_output``): one JSON line per record."""
        return self.history / "streams-output.jsonl"

    @property
    def streams_output_failed(self) -> Path:
        """Why the output topic was not read whole (the output checks are then unknown)."""
        return self.history / "streams-output.failed"

    @property
    def effects_failed(self) -> Path:
        """Why the effects command gave no list (its effects are unknown), when it failed."""
        return self.history / "effects.failed"

    @property
    def effects_output(self) -> Path:
        return self.logs / "effects.log"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def member_output(self, member_id: str) -> Path:
        return self.logs / f"{member_id}.log"

    @property
    def configs(self) -> Path:
        return self.root / "configs"

    def member_config(self, member_id: str) -> Path:
        return self.configs / f"{member_id}.json"

    @property
    def brokers(self) -> Path:
        return self.root / "brokers"

    def broker_log(self, node_id: int | str) -> Path:
        return self.brokers / broker_log_name(node_id)

    @property
    def load(self) -> Path:
        return self.root / "load"

    @property
    def locust_csv_prefix(self) -> Path:
        return self.load / "locust"

    @property
    def locust_report(self) -> Path:
        return self.load / "report.html"

    @property
    def locust_stats(self) -> Path:
        return self.load / "stats.json"

    def locust_log(self, role: str) -> Path:
        return self.load / f"locust-{role}.log"

    @property
    def error(self) -> Path:
        return self.root / "error.txt"

    # ---- what judging and rendering write from the saved history -------------------------------

    @property
    def analysis(self) -> Path:
        return self.root / "analysis"

    @property
    def metrics(self) -> Path:
        return self.analysis / "metrics.json"

    @property
    def tables(self) -> Path:
        return self.analysis / "tables"

    def table(self, name: str) -> Path:
        return self.tables / f"{name}.parquet"

    @property
    def analysis_error(self) -> Path:
        return self.root / "analysis-error.txt"

    @property
    def result(self) -> Path:
        return self.root / "result.json"

    @property
    def report(self) -> Path:
        return self.root / "report.html"

    @property
    def report_error(self) -> Path:
        return self.root / "report-error.txt"


LAYOUT = RunDir(Path())
"""The layout relative to a run's root, for roots that are not local paths."""
