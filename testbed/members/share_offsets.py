"""A share group's start offsets as the brokers keep them (KIP-932): every offset below a partition's share-partition
start offset (SPSO) is in a terminal state, acknowledged (accepted) or archived (rejected, or at the delivery
count limit). The members' histories cannot see what the brokers did with an acknowledgement whose answer never
came back (its member killed on the way): the SPSO can.

Asked through Admin.listShareGroupOffsets in a JVM (``java/src/share/TestbedShareOffsets.java``, compiled against
kafka-clients once into the cache): confluent-kafka's admin client has no share-group calls. Feeds the share
drain and one harness action at its end (``share_group_offsets``), which the analysis reads.
"""

from __future__ import annotations

import json
import subprocess

from ..errors import TestbedError
from ..settings import settings
from .envs import java_classpath, java_log_config, java_share_offsets_classes

MAIN_CLASS = "TestbedShareOffsets"


def share_start_offsets(bootstrap_servers: str, group_id: str, timeout_s: float = 30.0,
                        version: str | None = None) -> dict[tuple[str, int], int | None]:
    """(topic, partition) -> the group's start offset there (None: the broker keeps no state for it)."""
    classpath = f"{java_share_offsets_classes(version)}:{java_classpath(version)}"
    cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(version)}", "-cp",
           classpath, MAIN_CLASS, bootstrap_servers, group_id, str(int(timeout_s * 1000))]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s + 30)
    except subprocess.TimeoutExpired as exc:
        raise TestbedError(f"listing share group {group_id}'s offsets took more than {timeout_s + 30:.0f} s") from exc
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise TestbedError(f"listing share group {group_id}'s offsets failed ({done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[-500:]}")
    return {(o["topic"], int(o["partition"])): (int(o["start_offset"]) if o["start_offset"] is not None else None)
            for o in json.loads(lines[-1])["offsets"]}


__all__ = ["share_start_offsets"]
