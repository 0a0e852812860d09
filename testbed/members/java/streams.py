"""Kafka Streams instance: ``python -m testbed.members.java.streams --config <json>``.

A small Python process that runs ``java/src/streams/TestbedStreamsApp.java`` (testbed's own Streams application,
compiled against kafka-streams of the spec's version by ``envs.java_streams_classes``) and writes each JSON line
it prints into the member's history:

- ``startup_complete`` -> ``started`` (with the Streams settings, the spec's streams block, the state directory
  and the output topic, and ``reports_lost``: a loss is written as ``lost``, not ``revoked``);
- ``assigned`` / ``revoked`` / ``lost`` as they are, with the consumer's ``kafka_member_id``: the main
  consumer's assignment (the active tasks' input partitions) as it changes, so ownership, duplicate ownership and
  pauses are measured as for any member (a task's partition is owned from its assignment on, restoration
  included); ``lost`` is every partition the instance held, given up without a revocation after its tasks closed
  (a fenced member's lost-all callback, or StreamThread.handleTaskMigrated's unsubscribe when its exactly-once
  producer was fenced: docs/streams-fencing.md), and the ``assigned`` of what the group hands back follows; a
  clean close is ``revoked``, never ``lost``, written when the main consumer closes (after Streams closed and
  committed the tasks, before the member leaves the group: the next owner's ``assigned`` comes after it), not when
  ``KafkaStreams.close()`` returns;
- ``tasks`` -> ``streams_tasks`` (active and standby tasks, from the thread metadata, which trails the
  assignment by the restoration);
- ``state`` -> ``streams_state``; ``restore`` -> ``streams_restore`` (phases start, batch, end, suspended, and
  under exactly-once ``stable``: the changelog partition's last stable offset, asked when a restoration starts or
  is suspended, against the start's high-watermark end offset); ``processed`` as it is (records that went
  through the topology, flushed by the task every 100 ms and when it closes); ``client_error`` -> ``error``;
  ``shutdown_complete`` -> ``stopped``.

The application reads the member's one input topic and writes ``<input>-out`` (created like the input when
missing). State: ``kept`` puts each slot's state directory under the run directory (``streams-state/slot-<n>``),
so a bounced instance starts on the disk it left; ``fresh`` gives each start an empty one. Signals as for the
other Java runners: SIGTERM is forwarded and the JVM closes the instance (``KafkaStreams.close()``, which under
the classic protocol does not leave the group: the bounce of a deployed Streams app); the JVM shares this
process's group, so SIGKILL and SIGSTOP reach it, and it dies with this process (PDEATHSIG).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from testbed.history.events import StreamsRestore, StreamsState, StreamsTasks

from ...settings import settings
from ..batches import PartitionBatch
from ..client_settings import streams_settings
from ..config import MemberConfig, parse_config
from ..envs import java_log_config, java_streams_classes, java_streams_classpath
from .jvm import LineWriter, drive_json_lines, properties_file
from ..runtime import dump_stacks_on_request

MAIN_CLASS = "TestbedStreamsApp"
STATE_ROOT = "streams-state"


def streams_output_topic(input_topic: str) -> str:
    """The application's output topic: its input's name with ``-out``."""
    return f"{input_topic}-out"


def output_topic(config: MemberConfig) -> str:
    return streams_output_topic(config.topics[0])


def state_dir(config: MemberConfig) -> tuple[Path, bool]:
    """The instance's state directory and whether it is temporary (removed when the runner ends): ``kept`` is
    one per slot under the run directory, ``fresh`` a new one per start (under the run directory too, so what
    RocksDB wrote stays with the run); without a run directory, a temporary one."""
    streams = config.spec.streams
    assert streams is not None
    if config.run_dir is None:
        return Path(tempfile.mkdtemp(prefix=f"streams-{config.member_id}-")), True
    root = config.run_dir / STATE_ROOT
    name = f"slot-{config.slot}" if streams.state == "kept" else f"{config.member_id}-{uuid.uuid4().hex[:8]}"
    path = root / name
    path.mkdir(parents=True, exist_ok=True)
    return path, False


class StreamsLineWriter(LineWriter):
    """The Streams application's lines: ownership (assigned, revoked, lost), processing, states, tasks,
    restorations."""

    def __init__(self, config: MemberConfig, jvm_pid: int, props: dict[str, str], state: Path) -> None:
        super().__init__(config, jvm_pid)
        self.props = props
        self.state = state

    def started_event(self, ts: int | None) -> None:
        spec = self.config.spec
        assert spec.streams is not None
        self.history.started(spec.java_version, jvm_pid=self.jvm_pid, ts_ms=ts, settings=self.props,
                             streams={**spec.streams.model_dump(), "state_dir": str(self.state),
                                      "output_topic": output_topic(self.config)}, reports_lost=True)

    def event(self, name: str, obj: dict[str, Any], ts: int | None) -> None:
        if name in ("assigned", "revoked", "lost"):
            member = {"kafka_member_id": obj["kafka_member_id"]} if obj.get("kafka_member_id") else {}
            self.history.partitions(name, {(t, p) for t, p in obj["partitions"]}, ts_ms=ts, **member)
        elif name == "tasks":
            self.history.write(StreamsTasks, ts_ms=ts, active=obj["active"], standby=obj["standby"])
        elif name == "state":
            self.history.write(StreamsState, ts_ms=ts, from_state=obj["from"], to_state=obj["to"])
        elif name == "restore":
            self.history.write(StreamsRestore, ts_ms=ts, phase=obj["phase"], store=obj["store"], topic=obj["topic"],
                               partition=obj["partition"], start_offset=obj.get("start_offset"),
                               end_offset=obj.get("end_offset"), records=obj.get("records"))
        elif name == "processed":
            self.history.processed(PartitionBatch(obj["topic"], obj["partition"], obj["first_offset"], obj["last_offset"],
                                                  obj["count"], obj.get("produce_ts_min_ms"), obj.get("produce_ts_max_ms")),
                                   ts_ms=ts)


def run(config: MemberConfig) -> int:
    spec = config.spec
    if len(config.topics) != 1:
        raise SystemExit(f"topics: testbed's Streams application reads exactly one topic, got {config.topics}")
    assert spec.streams is not None
    state, temporary = state_dir(config)
    props = streams_settings(config, str(state))
    classpath = f"{java_streams_classes(spec.java_version)}:{java_streams_classpath(spec.java_version)}"
    try:
        with properties_file(config, props) as file:
            cmd = ["java", *settings().java_opts.split(),
                   f"-Dlog4j2.configurationFile={java_log_config(spec.java_version)}", "-cp", classpath, MAIN_CLASS,
                   str(file), config.topics[0], output_topic(config), spec.streams.topology,
                   str(spec.processing_ms_per_record)]
            return drive_json_lines(config, cmd, lambda pid: StreamsLineWriter(config, pid, props, state),
                                    "the Streams instance's JVM")
    finally:
        if temporary:
            shutil.rmtree(state, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    dump_stacks_on_request()
    return run(parse_config(argv, runner="java.streams", client="java"))


if __name__ == "__main__":
    sys.exit(main())
