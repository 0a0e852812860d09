"""A Kafka Streams application's output, saved for the output checks (``testbed.analysis.streams.measures``).

After the instances stopped, and before the cluster goes, the output topic is read whole as a downstream
``read_committed`` consumer sees it, into ``history/streams-output.jsonl``: {topic, partition, offset, key,
value} per record, key and value as UTF-8 text (the application writes the input's key, and the input's value
or a count). A read that fails or stays short of the topic's end leaves ``history/streams-output.failed`` with
why, and the checks are unknown.
"""

from __future__ import annotations

import json

from ..admin.topic_reader import read_committed
from ..run.layout import RunDir

READ_TIMEOUT_S = 60.0  # a transaction a killed instance left open is aborted at its timeout (Streams: 10 s)


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode(errors="replace")


def save_streams_output(bootstrap_servers: str, topic: str, run_dir: RunDir) -> None:
    try:
        read = read_committed(bootstrap_servers, topic, READ_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - the run's history stays whole; the checks say why they are unknown
        run_dir.streams_output_failed.write_text(f"reading {topic} failed: {exc}\n")
        return
    with run_dir.streams_output.open("w") as f:
        for r in read.records:
            f.write(json.dumps({"topic": topic, "partition": r.partition, "offset": r.offset, "key": _text(r.key),
                                "value": _text(r.value)}) + "\n")
    if not read.complete:
        behind = ", ".join(f"{topic}-{p} at {at} of {end}" for p, (at, end) in read.behind.items())
        run_dir.streams_output_failed.write_text(
            f"{topic} was not read to its end within {READ_TIMEOUT_S:.0f} s (read_committed): {behind}\n")
