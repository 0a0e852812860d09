"""Share-group member (KIP-932) for Java: ``python -m testbed.members.java_share --config <json>``.

A small Python process that runs ``java_share/TestbedShareMember.java`` (a KafkaShareConsumer; compiled against
kafka-clients of the spec's version by ``envs.java_share_classes``) and writes each JSON line it prints into the
member's history: ``share_acquired``, ``share_ack_sent`` and ``share_acknowledged`` as they are (same fields as the events, the JVM's
timestamp as ``ts_ms``), ``client_error`` as ``error``, ``startup_complete`` as ``started`` and
``shutdown_complete`` as ``stopped``. Signals as for the other Java runner (``testbed.members.java``): SIGTERM
is forwarded to the JVM, which closes the consumer (committing what is pending) and leaves; the JVM shares
this process's group, so SIGKILL and SIGSTOP to the group reach it, and it dies with this process (PDEATHSIG).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path
from typing import Any

from ..children import die_with_parent
from ..settings import settings
from .client_settings import java_settings, properties_text
from .config import MemberConfig, parse_config
from .envs import java_classpath, java_log_config, java_share_classes
from .runtime import MemberHistory

MAIN_CLASS = "TestbedShareMember"


def share_member_args(config: MemberConfig, properties: Path) -> list[str]:
    spec = config.spec
    return [str(properties), ",".join(config.topics), spec.share_acknowledgement, str(spec.processing_ms_per_record),
            str(spec.release_every or 0), str(spec.reject_every or 0), str(config.max_records or 0)]


class ShareLineWriter:
    """Writes the history from the JVM's lines; ``started`` once, before anything else."""

    def __init__(self, config: MemberConfig, jvm_pid: int) -> None:
        self.config = config
        self.history = MemberHistory(config)
        self.jvm_pid = jvm_pid
        self.started = False
        self.stopped = False
        self.stop_reason = "max_records" if config.max_records else "clean"

    def write_started(self, ts_ms: int | None = None) -> None:
        if not self.started:
            self.history.started(self.config.spec.java_version, jvm_pid=self.jvm_pid, ts_ms=ts_ms,
                                 share_acknowledgement=self.config.spec.share_acknowledgement,
                                 settings=java_settings(self.config))
            self.started = True

    def line(self, obj: dict[str, Any]) -> None:
        name, ts = obj.get("name"), obj.get("timestamp")
        if name == "startup_complete":
            self.write_started(ts)
            return
        self.write_started()
        if name == "share_acquired":
            stamps = [t for t in (obj.get("produce_ts_min_ms"), obj.get("produce_ts_max_ms")) if t is not None]
            self.history.share_acquired(obj["topic"], obj["partition"], [tuple(a) for a in obj["acquired"]], stamps,
                                        ts_ms=ts)
        elif name == "share_acknowledged":
            self.history.share_acknowledged(obj["topic"], obj["partition"], obj["acknowledged"], obj["type"],
                                            obj["mode"], obj.get("sent_ms"), obj.get("error"), ts_ms=ts)
        elif name == "share_ack_sent":
            self.history.share_ack_sent(obj["topic"], obj["partition"], obj["acknowledged"], obj["type"], obj["mode"],
                                        ts_ms=obj.get("ts_ms", ts))
        elif name == "client_error":
            fatal = bool(obj.get("fatal"))
            self.history.error(str(obj.get("code")), str(obj.get("message")), fatal=fatal, ts_ms=ts)
            if fatal:
                self.stop_reason = "error"
        elif name == "shutdown_complete":
            self.history.stopped(self.stop_reason, ts_ms=ts)
            self.stopped = True


def run(config: MemberConfig) -> int:
    spec = config.spec
    classpath = f"{java_share_classes(spec.java_version)}:{java_classpath(spec.java_version)}"
    with tempfile.NamedTemporaryFile("w", prefix=f"share-{config.member_id}-", suffix=".properties") as props:
        props.write(properties_text(java_settings(config)))
        props.flush()
        cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(spec.java_version)}",
               "-cp", classpath, MAIN_CLASS, *share_member_args(config, Path(props.name))]
        stderr = open(config.log_path, "ab") if config.log_path else None
        try:
            jvm = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, preexec_fn=die_with_parent())
        finally:
            if stderr is not None:
                stderr.close()
        writer = ShareLineWriter(config, jvm.pid)

        def _forward_stop(signum: int, _frame: object) -> None:
            writer.stop_reason = "clean"
            if jvm.poll() is None:
                jvm.send_signal(signal.SIGTERM)

        signal.signal(signal.SIGTERM, _forward_stop)
        signal.signal(signal.SIGINT, _forward_stop)
        unparsed: deque[str] = deque(maxlen=5)
        assert jvm.stdout is not None
        for raw in jvm.stdout:
            line = raw.decode(errors="replace").strip()
            try:
                obj = json.loads(line) if line.startswith("{") else None
            except ValueError:
                obj = None
            if obj is None:
                if line:
                    unparsed.append(line)
                continue
            writer.line(obj)
        code = jvm.wait()
    writer.write_started()
    if not writer.stopped:
        # The JVM ended without shutdown_complete: a crash, a kill, or a refused configuration.
        detail = f"the share member's JVM exited with {code} before shutdown_complete"
        if unparsed:
            detail += "; last output: " + " | ".join(unparsed)
        writer.history.error("JVM_EXIT", detail, fatal=True)
        writer.history.stopped("error")
    writer.history.close()
    return 0 if writer.stopped and writer.stop_reason != "error" else 1


def main(argv: list[str] | None = None) -> int:
    return run(parse_config(argv, runner="java_share", client="java"))


if __name__ == "__main__":
    sys.exit(main())
