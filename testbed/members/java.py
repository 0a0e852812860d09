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

import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

from ..children import die_with_parent
from ..settings import settings
from .config import MemberConfig, parse_config
from .envs import java_log_config, java_member_classpath
from .runtime import MemberHistory
from .verifiable import (
    JAVA_ASSIGNOR_CLASSES,
    TranslationContext,
    seed_assignor_properties,
    startup_complete_ts,
    translate_line,
)

MAIN_CLASS = "org.apache.kafka.tools.VerifiableConsumer"


def verifiable_consumer_args(config: MemberConfig, consumer_config: Path) -> list[str]:
    """VerifiableConsumer's command-line flags for this member."""
    spec = config.spec
    if len(config.topics) != 1:
        raise SystemExit(f"topics: VerifiableConsumer consumes exactly one topic, got {config.topics}")
    args = [
        "--bootstrap-server", config.bootstrap_servers,
        "--topic", config.topics[0],
        "--group-id", config.group_id,
        "--reset-policy", spec.auto_offset_reset,
        "--consumer.config", str(consumer_config),
    ]
    if spec.group_protocol == "consumer":
        args += ["--group-protocol", "consumer"]
        if spec.remote_assignor:
            args += ["--group-remote-assignor", spec.remote_assignor]
    else:
        if spec.assignors:
            args += ["--assignment-strategy", ",".join(JAVA_ASSIGNOR_CLASSES[a] for a in spec.assignors)]
        if spec.session_timeout_ms is not None:
            args += ["--session-timeout", str(spec.session_timeout_ms)]
    if config.group_instance_id:
        args += ["--group-instance-id", config.group_instance_id]
    if spec.commit_mode == "auto":
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
    with tempfile.NamedTemporaryFile("w", prefix=f"vc-{config.member_id}-", suffix=".properties") as props:
        props.write(f"client.id={config.member_id}\nmax.poll.records={spec.max_poll_records}\n")
        if spec.max_poll_interval_ms is not None:
            props.write(f"max.poll.interval.ms={spec.max_poll_interval_ms}\n")
        props.write("".join(f"{k}={v}\n" for k, v in seed_assignor_properties(spec, config.slot).items()))
        props.flush()
        jvm_options = settings().java_opts.split()  # TESTBED_JAVA_OPTS; this runner runs in the project's venv
        cmd = [
            "java", *jvm_options, f"-Dlog4j2.configurationFile={java_log_config(spec.java_version)}",
            "-cp", classpath, MAIN_CLASS, *verifiable_consumer_args(config, Path(props.name)),
        ]
        stderr = open(config.log_path, "ab") if config.log_path else None
        try:
            jvm = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, preexec_fn=die_with_parent())
        finally:
            if stderr is not None:
                stderr.close()

        def _forward_stop(signum: int, _frame: object) -> None:
            ctx.stop_reason = "clean"
            if jvm.poll() is None:
                jvm.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, _forward_stop)
        signal.signal(signal.SIGINT, _forward_stop)
        # 'started' is written when the consumer really has started: at VerifiableConsumer's
        # startup_complete, with its timestamp. Should the JVM print anything else first, or die before
        # it, 'started' is written just before that (the member's configuration is always known).
        started = False

        def write_started(ts_ms: int | None = None) -> None:
            nonlocal started
            if not started:
                history.started(spec.java_version, jvm_pid=jvm.pid, ts_ms=ts_ms)
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
    return run(parse_config(argv, runner="java", client="java"))


if __name__ == "__main__":
    sys.exit(main())
