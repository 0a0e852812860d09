"""An independent recount of a run's raw history in plain Python, for the tests that hold the analysis to it: the
ack logs (records acknowledged, with an offset) against the members' ``processed`` events."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

COUNTS = ("records_acked", "records_processed", "records_unique_processed", "lost_records", "duplicates_total",
          "duplicate_records")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def recount(run_dir: Path) -> dict[str, int]:
    """The counts from the raw history alone: acked records (ack logs, with an offset) against processed events."""
    acked = {(a["topic"], a["partition"], a["offset"]) for f in (run_dir / "history" / "acks").glob("*.jsonl")
             for a in jsonl(f) if a["name"] == "ack" and a.get("offset") is not None}
    times = Counter((e["topic"], e["partition"], o) for f in (run_dir / "history" / "members").glob("*.jsonl")
                    for e in jsonl(f) if e["name"] == "processed"
                    for o in range(e["first_offset"], e["last_offset"] + 1))
    return {"records_acked": len(acked), "records_processed": sum(times.values()),
            "records_unique_processed": len(times), "lost_records": len(acked - set(times)),
            "duplicates_total": sum(n - 1 for n in times.values()),
            "duplicate_records": sum(1 for n in times.values() if n > 1)}


def reported(run_dir: Path) -> dict[str, int]:
    metrics = json.loads((run_dir / "analysis" / "metrics.json").read_text())["metrics"]
    return {name: metrics[name]["value"] for name in COUNTS}
