"""Java member host: many KafkaConsumers in one JVM, ``python -m testbed.members.java.host --version X``.

The JVM runs ``java/src/host/TestbedMemberHost.java`` (compiled against kafka-clients X by ``envs.java_host_classes``):
a thread and a KafkaConsumer per member, printing VerifiableConsumer's JSON lines tagged with the member. This
wrapper speaks the fleet's host protocol (``testbed.members.host``: ``start`` / ``stop`` in, ``exit`` out) and
writes each member's history with the same translation as a Java member of its own (``verifiable``), so the
analysis does not change. Stall is not offered (no hook in the poll loop; the fleet refuses it for Java).
The JVM shares this process's group: SIGKILL and SIGSTOP to the group reach it; if this process dies alone,
the kernel kills the JVM too (PDEATHSIG).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

from ...children import die_with_parent
from ...settings import settings
from ..client_settings import java_settings, properties_text
from ..config import MemberConfig
from ..envs import JAVA_HOST_CLASS, java_host_classes, java_log_config, java_member_classpath
from ..runtime import MemberHistory, dump_stacks_on_request
from ..signal_relay import relay
from .jvm import run_properties_path
from .verifiable import TranslationContext, parse_line, translate_line


class HostedJavaMember:
    """One member's history, written from its tagged lines."""

    def __init__(self, config: MemberConfig) -> None:
        self.config = config
        self.history = MemberHistory(config)
        trigger = "auto" if config.spec.commit_mode == "auto" else "batch"
        self.ctx = TranslationContext(source=config.member_id, commit_trigger=trigger,
                                      stop_reason="max_records" if config.max_records else "clean")
        self.started = False
        self.ended = False
        self.failed = False  # a fatal client error ended it

    def write_started(self, jvm_pid: int, ts_ms: int | None = None) -> None:
        if not self.started:
            self.history.started(self.config.spec.java_version, jvm_pid=jvm_pid, ts_ms=ts_ms,
                                 settings=java_settings(self.config))
            self.started = True

    def line(self, obj: dict[str, Any], raw: str, jvm_pid: int) -> bool:
        """Write what the line says; True once the member has shut down."""
        if obj["name"] == "startup_complete":
            self.write_started(jvm_pid, obj.get("timestamp"))
            return False
        if obj["name"] == "client_error":
            self.write_started(jvm_pid)
            fatal = bool(obj.get("fatal"))
            self.history.error(str(obj.get("code")), str(obj.get("message")), fatal=fatal, ts_ms=obj.get("timestamp"))
            if fatal:
                self.failed, self.ctx.stop_reason = True, "error"
            return False
        for event in translate_line(raw, self.ctx):
            self.write_started(jvm_pid)
            self.history.write_event(event)
        return obj["name"] == "shutdown_complete"

    def end(self, error: str | None, jvm_pid: int) -> None:
        if self.ended:
            return
        self.ended = True
        self.write_started(jvm_pid)
        if error is not None:
            self.history.error("JVM_EXIT", error, fatal=True)
            self.history.stopped("error")
        self.history.close()


class JavaHost:
    def __init__(self, version: str) -> None:
        self.version = version
        self.members: dict[str, HostedJavaMember] = {}
        self._props_dir: Path | None = None  # outside a run only: the members' properties files
        self._out = threading.Lock()
        self._jvm_in = threading.Lock()
        cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(version)}",
               "-cp", f"{java_host_classes(version)}:{java_member_classpath(version)}", JAVA_HOST_CLASS]
        self.jvm = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                                    preexec_fn=die_with_parent())

    def report(self, member: str, code: int) -> None:
        with self._out:
            sys.stdout.write(json.dumps({"event": "exit", "member": member, "code": code}) + "\n")
            sys.stdout.flush()

    def to_jvm(self, line: str) -> None:
        try:
            with self._jvm_in:
                self.jvm.stdin.write((line + "\n").encode())
                self.jvm.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the JVM is gone: its end is reported by the reader

    def properties_path(self, config: MemberConfig) -> Path:
        """Where a member's properties go: the run's configs directory (as a runner's, ``jvm.properties_file``), else a
        temporary directory of the host's, removed when it ends."""
        path = run_properties_path(config)
        if path is not None:
            return path
        if self._props_dir is None:
            self._props_dir = Path(tempfile.mkdtemp(prefix="testbed-java-host-"))
        return self._props_dir / f"{config.member_id}.properties"

    def start(self, config_path: str) -> None:
        config = MemberConfig.model_validate_json(Path(config_path).read_text())
        if any("," in t or " " in t for t in config.topics):
            raise ValueError(f"topics: names with ',' or ' ' cannot be passed to the Java host: {config.topics}")
        props = self.properties_path(config)
        props.write_text(properties_text(java_settings(config)))
        self.members[config.member_id] = HostedJavaMember(config)
        commit = "sync" if config.spec.commit_mode == "sync" else "auto"
        self.to_jvm(f"start {config.member_id} {props} {','.join(config.topics)} {commit} {config.max_records or 0}")

    def command(self, line: str) -> None:
        message: dict[str, Any] = {}
        try:
            message = json.loads(line)
            if message["op"] == "start":
                self.start(message["config"])
            elif message["op"] == "stop":
                self.to_jvm(f"stop {message['member']}")
            else:
                sys.stderr.write(f"java member host: op {message['op']!r} is not offered for Java members\n")
        except (ValueError, KeyError, OSError) as exc:
            sys.stderr.write(f"java member host: bad command {line.strip()!r}: {exc!r}\n")
            if message.get("op") == "start" and message.get("member"):
                self.report(message["member"], 1)  # it never ran: ended in error

    def read_jvm(self, stdout: IO[bytes]) -> None:
        for raw in stdout:
            line = raw.decode(errors="replace").strip()
            obj = parse_line(line)
            member = self.members.get(obj.get("member")) if obj else None
            if member is None:
                if line:
                    sys.stderr.write(f"jvm: {line}\n")
                continue
            if member.line(obj, line, self.jvm.pid):
                member.end(None, self.jvm.pid)
                self.report(member.config.member_id, 1 if member.failed else 0)
        code = self.jvm.wait()
        for member_id, member in self.members.items():
            if not member.ended:
                member.end(f"the Java member host's JVM exited with {code} before shutdown_complete", self.jvm.pid)
                self.report(member_id, 1)

    def serve(self) -> int:
        ending = threading.Event()
        relay(signal.SIGTERM, ending.set)
        relay(signal.SIGINT, ending.set)
        reader = threading.Thread(target=self.read_jvm, args=(self.jvm.stdout,), daemon=True, name="jvm")
        reader.start()

        def read_commands() -> None:
            for line in sys.stdin:
                if line.strip():
                    self.command(line)
            ending.set()

        threading.Thread(target=read_commands, daemon=True, name="control").start()
        while not ending.wait(0.5) and reader.is_alive():
            pass
        try:
            self.jvm.stdin.close()  # the JVM stops every member and exits
        except OSError:
            pass
        reader.join()
        if self._props_dir is not None:
            shutil.rmtree(self._props_dir, ignore_errors=True)
        return 0


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()  # the host's own; its JVM prints its thread dump on the same signal
    parser = argparse.ArgumentParser(prog="python -m testbed.members.java.host", description=__doc__.splitlines()[0])
    parser.add_argument("--version", required=True, help="kafka-clients version (the kafka-tools classpath's)")
    return JavaHost(parser.parse_args(argv).version).serve()


if __name__ == "__main__":
    sys.exit(main())
