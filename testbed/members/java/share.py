"""Share-group member (KIP-932) for Java: ``python -m testbed.members.java.share --config <json>``.

A small Python process that runs ``java/src/share/TestbedShareMember.java`` (a KafkaShareConsumer; compiled against
kafka-clients of the spec's version by ``envs.java_share_classes``) and writes each JSON line it prints into the
member's history: ``share_acquired``, ``share_ack_sent`` and ``share_acknowledged`` as they are (same fields as the events, the JVM's
timestamp as ``ts_ms``), ``client_error`` as ``error``, ``startup_complete`` as ``started`` and
``shutdown_complete`` as ``stopped``. Signals as for the other Java runner (``testbed.members.java.member``): SIGTERM
is forwarded to the JVM, which closes the consumer (committing what is pending) and leaves; the JVM shares
this process's group, so SIGKILL and SIGSTOP to the group reach it, and it dies with this process (PDEATHSIG).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ...settings import settings
from ..client_settings import java_settings
from ..config import MemberConfig, parse_config
from ..envs import java_classpath, java_log_config, java_share_classes
from .jvm import LineWriter, drive_json_lines, properties_file
from ..runtime import dump_stacks_on_request

MAIN_CLASS = "TestbedShareMember"


def share_member_args(config: MemberConfig, properties: Path) -> list[str]:
    spec = config.spec
    return [str(properties), ",".join(config.topics), spec.share_acknowledgement, str(spec.processing_ms_per_record),
            str(spec.release_every or 0), str(spec.reject_every or 0), str(config.max_records or 0)]


class ShareLineWriter(LineWriter):
    """The share member's lines: acquisitions and acknowledgements."""

    def __init__(self, config: MemberConfig, jvm_pid: int) -> None:
        super().__init__(config, jvm_pid, "max_records" if config.max_records else "clean")

    def started_event(self, ts: int | None) -> None:
        self.history.started(self.config.spec.java_version, jvm_pid=self.jvm_pid, ts_ms=ts,
                             share_acknowledgement=self.config.spec.share_acknowledgement,
                             settings=java_settings(self.config))

    def event(self, name: str, obj: dict[str, Any], ts: int | None) -> None:
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


def run(config: MemberConfig) -> int:
    spec = config.spec
    classpath = f"{java_share_classes(spec.java_version)}:{java_classpath(spec.java_version)}"
    with properties_file(config, java_settings(config)) as props:
        cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(spec.java_version)}",
               "-cp", classpath, MAIN_CLASS, *share_member_args(config, props)]
        return drive_json_lines(config, cmd, lambda pid: ShareLineWriter(config, pid), "the share member's JVM")


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    return run(parse_config(argv, runner="java.share", client="java"))


if __name__ == "__main__":
    sys.exit(main())
