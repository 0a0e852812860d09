"""Member runner for the Java client: ``python -m testbed.members.java.member --config <json>``.

A small Python process that spawns Kafka's VerifiableConsumer (kafka-tools of the spec's version,
classpath from ``envs.java_member_classpath``: kafka-tools and the seed assignors in Java) on the host JVM and translates each stdout line into the
member's history. ``started`` is written at VerifiableConsumer's ``startup_complete`` (its consumer
is built), stamped with that line's timestamp; events keep the JVM's timestamps as ``ts_ms``, their
``mono_ms`` is the time this wrapper wrote them. Signals: SIGTERM/SIGINT are forwarded as SIGTERM,
which VerifiableConsumer answers with a clean shutdown (revoke, leave, ``shutdown_complete`` ->
``stopped``). The JVM shares this process's group, so a fleet that starts the runner with
``start_new_session=True`` pauses, resumes or kills both at once with ``os.killpg`` (SIGSTOP cannot
be caught and forwarded). If this process dies by SIGKILL alone, the kernel kills the JVM too (PDEATHSIG).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ...settings import settings
from ..client_settings import java_settings
from ..config import MemberConfig, parse_config
from ..defaults import VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS
from ..envs import java_log_config, java_member_classpath
from .jvm import LineWriter, drive_json_lines, properties_file
from ..runtime import dump_stacks_on_request
from .assignor_classes import JAVA_ASSIGNOR_CLASSES
from .verifiable import TranslationContext, startup_complete_ts, translate_line

MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"


def verifiable_settings(config: MemberConfig) -> dict[str, str]:
    """The member's consumer settings as VerifiableConsumer ends up with them: ``java_settings``, plus what it
    sets itself when no flag says otherwise: RangeAssignor under the classic protocol (its --assignment-strategy
    default) and, in kafka-tools 3.9.x, a 30000 ms session timeout (its --session-timeout default)."""
    spec = config.spec
    consumer_settings = java_settings(config)
    if spec.group_protocol == "classic":
        consumer_settings.setdefault("partition.assignment.strategy", JAVA_ASSIGNOR_CLASSES["range"])
    if spec.java_version.startswith("3."):
        consumer_settings.setdefault("session.timeout.ms", str(VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS))
    return consumer_settings


def verifiable_consumer_args(config: MemberConfig, consumer_config: Path,
                             consumer_settings: dict[str, str] | None = None) -> list[str]:
    """VerifiableConsumer's command-line flags for this member; ``consumer_config``: the properties file of
    ``consumer_settings`` (default: ``verifiable_settings``).

    Only the flags it requires or would otherwise put over the file with its own defaults (createFromArgs of
    kafka-tools 3.9.1 and 4.1.1): bootstrap servers, topic and group id; enable.auto.commit (false without the
    flag) and auto.offset.reset; group.protocol (4.x) and, under the classic protocol, the assignment strategy;
    the session timeout (3.9.x puts its default). group.instance.id and group.remote.assignor it puts only when
    their flags are given: the file carries them.
    """
    spec = config.spec
    if len(config.topics) != 1:
        raise SystemExit(f"topics: VerifiableConsumer consumes exactly one topic, got {config.topics}")
    consumer_settings = consumer_settings if consumer_settings is not None else verifiable_settings(config)
    args = [
        "--bootstrap-server", consumer_settings["bootstrap.servers"],
        "--topic", config.topics[0],
        "--group-id", consumer_settings["group.id"],
        "--reset-policy", consumer_settings["auto.offset.reset"],
        "--consumer.config", str(consumer_config),
    ]
    if spec.group_protocol == "consumer":
        args += ["--group-protocol", "consumer"]
    else:
        args += ["--assignment-strategy", consumer_settings["partition.assignment.strategy"]]
    if "session.timeout.ms" in consumer_settings:
        args += ["--session-timeout", consumer_settings["session.timeout.ms"]]
    if consumer_settings["enable.auto.commit"] == "true":
        args.append("--enable-autocommit")
    if config.max_records is not None:
        args += ["--max-messages", str(config.max_records)]
    return args


class VerifiableConsumerLines(LineWriter):
    """VerifiableConsumer's lines, translated to the member's events (``verifiable.translate_line``). ``started``
    is written at its ``startup_complete``, when the consumer really has started, with that line's timestamp;
    should the JVM print anything else first, or die before it, just before that (the member's configuration is
    always known)."""

    def __init__(self, config: MemberConfig, jvm_pid: int, consumer_settings: dict[str, str]) -> None:
        super().__init__(config, jvm_pid)
        self.consumer_settings = consumer_settings
        self.ctx = TranslationContext(source=config.member_id,
                                      commit_trigger="auto" if config.spec.commit_mode == "auto" else "batch")
        if config.max_records is not None:
            self.ctx.stop_reason = "max_records"

    def stopping(self) -> None:
        self.ctx.stop_reason = "clean"

    def take(self, line: str) -> bool:
        is_startup, startup_ts = startup_complete_ts(line)
        if is_startup:
            self.write_started(startup_ts)
            return True
        events = translate_line(line, self.ctx)
        for event in events:
            self.write_started()
            self.history.write_event(event)
            self.stopped = self.stopped or event.name == "stopped"
        return bool(events) or line.startswith("{")  # a JSON line the history leaves out is still the program's

    def started_event(self, ts: int | None) -> None:
        self.history.started(self.config.spec.java_version, jvm_pid=self.jvm_pid, ts_ms=ts,
                             settings=self.consumer_settings)


def run(config: MemberConfig) -> int:
    classpath = java_member_classpath(config.spec.java_version)  # kafka-tools and the seed assignors in Java
    consumer_settings = verifiable_settings(config)
    with properties_file(config, consumer_settings) as props:
        jvm_options = settings().java_opts.split()  # TESTBED_JAVA_OPTS; this runner runs in the project's venv
        cmd = [
            "java", *jvm_options, f"-Dlog4j2.configurationFile={java_log_config(config.spec.java_version)}",
            "-cp", classpath, MAIN_CLASS, *verifiable_consumer_args(config, props, consumer_settings),
        ]
        return drive_json_lines(config, cmd, lambda pid: VerifiableConsumerLines(config, pid, consumer_settings),
                                "VerifiableConsumer")


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()  # the wrapper's; the JVM prints its own thread dump on the same signal
    return run(parse_config(argv, runner="java.member", client="java"))


if __name__ == "__main__":
    sys.exit(main())
