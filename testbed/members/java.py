"""Member runner for the Java client: ``python -m testbed.members.java --config <json>``.

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
import tempfile
from collections import deque
from pathlib import Path

from ..settings import settings
from .client_settings import java_settings, properties_text
from .config import MemberConfig, parse_config
from .defaults import VERIFIABLE_CONSUMER_3_SESSION_TIMEOUT_MS
from .envs import java_log_config, java_member_classpath
from .jvm import forward_stop, start_jvm
from .runtime import MemberHistory, dump_stacks_on_request
from .verifiable import JAVA_ASSIGNOR_CLASSES, TranslationContext, startup_complete_ts, translate_line

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


def run(config: MemberConfig) -> int:
    spec = config.spec
    classpath = java_member_classpath(spec.java_version)  # kafka-tools and the seed assignors in Java
    history = MemberHistory(config)
    ctx = TranslationContext(source=config.member_id, commit_trigger="auto" if spec.commit_mode == "auto" else "batch")
    if config.max_records is not None:
        ctx.stop_reason = "max_records"
    consumer_settings = verifiable_settings(config)
    with tempfile.NamedTemporaryFile("w", prefix=f"vc-{config.member_id}-", suffix=".properties") as props:
        props.write(properties_text(consumer_settings))
        props.flush()
        jvm_options = settings().java_opts.split()  # TESTBED_JAVA_OPTS; this runner runs in the project's venv
        cmd = [
            "java", *jvm_options, f"-Dlog4j2.configurationFile={java_log_config(spec.java_version)}",
            "-cp", classpath, MAIN_CLASS, *verifiable_consumer_args(config, Path(props.name), consumer_settings),
        ]
        jvm = start_jvm(cmd, config.log_path)

        def _stopping() -> None:
            ctx.stop_reason = "clean"

        forward_stop(jvm, _stopping)
        # 'started' is written when the consumer really has started: at VerifiableConsumer's
        # startup_complete, with its timestamp. Should the JVM print anything else first, or die before
        # it, 'started' is written just before that (the member's configuration is always known).
        started = False

        def write_started(ts_ms: int | None = None) -> None:
            nonlocal started
            if not started:
                history.started(spec.java_version, jvm_pid=jvm.pid, ts_ms=ts_ms, settings=consumer_settings)
                started = True

        stopped = False
        unparsed: deque[str] = deque(maxlen=5)
        assert jvm.stdout is not None
        for raw in jvm.stdout:
            line = raw.decode(errors="replace").strip()
            is_startup, startup_ts = startup_complete_ts(line)
            if is_startup:
                write_started(startup_ts)
                continue
            events = translate_line(line, ctx)
            if not events and line and not line.startswith("{"):
                unparsed.append(line)
                print(line, file=sys.stderr)  # the member's log: a JVM's thread dump (STACKS_SIGNAL) among them
            for event in events:
                write_started()
                history.writer.write(event)
                stopped = stopped or event.name == "stopped"
        code = jvm.wait()
    write_started()
    if not stopped:
        # The JVM ended without shutdown_complete: a crash, a kill, or a refused configuration.
        detail = f"VerifiableConsumer exited with {code} before shutdown_complete"
        if unparsed:
            detail += "; last output: " + " | ".join(unparsed)
        history.error("JVM_EXIT", detail, fatal=True)
        history.stopped("error")
    history.close()
    return 0 if stopped else 1


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()  # the wrapper's; the JVM prints its own thread dump on the same signal
    return run(parse_config(argv, runner="java", client="java"))


if __name__ == "__main__":
    sys.exit(main())
