"""A team's own Kafka Streams service, run unchanged under testbed's Java agent, is measured as testbed's own Streams
application is: ownership, processing per input record, commits, state transitions, tasks and restorations.

``programs/java/OrderTotals.java`` is a DSL topology as a team writes one (a count per key in a persistent store, each
new count to an output topic, a state listener of its own), compiled here against kafka-streams and started as ``java
-cp ... OrderTotals``. Three instances under load, a clean rolling bounce (each replacement on a new state directory,
so it restores from the changelog), the drain: nothing may be lost, the counts must equal a recount of the raw
history, and the Streams measures must be made (known), from the history the agent wrote. The program runs
exactly-once (``exactly_once_v2``), so its commits go through its producers' transactions, which the agent records as
the group's commits. On the streams protocol (KIP-1071, where Streams builds its main consumer itself and the group
hands out tasks) the same program runs at least once, two instances, so its commits are its main consumers' own
commitSync.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from history_recount import jsonl, recount, reported

from testbed.members.envs import java_streams_classpath
from testbed.members.spec import DEFAULT_JAVA_VERSION
from testbed.scenario.loader import load

pytestmark = pytest.mark.integration

SOURCE = Path(__file__).parent / "programs" / "java" / "OrderTotals.java"
SCENARIO = """
name: streams-program
topics: [{{name: orders, partitions: 6}}, {{name: totals, partitions: 6, consumed: false}}]
load: {{topic: orders, rate: 100, users: 2, keys: 30}}
members:
  totals: {{client: java, client_version: '{version}', command: [java, -cp, '{classpath}', OrderTotals],
           env: {{KAFKA_BOOTSTRAP: '{{bootstrap_servers}}', APPLICATION_ID: '{{group_id}}', INPUT_TOPIC: '{{topic:orders}}',
           OUTPUT_TOPIC: '{{topic:totals}}', STATE_ROOT: '{{run_dir}}/program-state',
           PROCESSING_GUARANTEE: {guarantee}, GROUP_PROTOCOL: {protocol}}}}}
fleet: [{{spec: totals, count: {instances}}}]
steps:
  - wait_stable: {{timeout_s: 120}}
  - wait: {{seconds: 3}}  # apart from the formation's rebalance episode, whose moves the figures leave out
  - rolling_bounce: {{interval_s: 1, stable_timeout_s: 120}}
  - drain: {{timeout_s: 90}}
expect:
  - lost_records == 0
"""


# (group protocol, kafka-streams version, processing guarantee, rebalance protocol in `started`, instances); two
# instances on the streams protocol keep CI's time: each bounce still moves the bounced one's tasks away and back
SHAPES = {
    "classic": ("classic", None, "exactly_once_v2", "cooperative", 3),
    "streams": ("streams", "4.4.0", "at_least_once", "consumer", 2),
}


def compiled(tmp_path_factory, version: str | None) -> tuple[str, str]:
    """The program compiled against kafka-streams ``version`` (the project's Java version when None), as its team's
    build would: its ``-cp`` and the kafka-clients version it carries."""
    streams = java_streams_classpath(version)
    classes = tmp_path_factory.mktemp("order-totals")
    subprocess.run(["javac", "-nowarn", "-cp", streams, "-d", str(classes), str(SOURCE)], check=True)
    return f"{classes}:{streams}", version or DEFAULT_JAVA_VERSION


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_streams_program_under_the_agent_is_measured_as_testbeds_own_application(
        run_scenario, kafka_cluster, tmp_path_factory, tmp_path: Path, shape: str) -> None:
    protocol, version, guarantee, rebalance_protocol, instances = SHAPES[shape]
    classpath, version = compiled(tmp_path_factory, version)
    path = tmp_path / "streams-program.yaml"
    path.write_text(SCENARIO.format(classpath=classpath, version=version, guarantee=guarantee, protocol=protocol,
                                    instances=instances))
    result = run_scenario(load(path), tmp_path / "reports", cluster=kafka_cluster)
    assert result.status == "pass", f"{result.status} {result.problems} {result.expectations}"
    run_dir = Path(result.run_dir)

    counts = recount(run_dir)
    assert counts["records_acked"] > 0 and counts["lost_records"] == 0, counts
    assert reported(run_dir) == counts

    histories = {f.stem: jsonl(f) for f in (run_dir / "history" / "members").glob("*.jsonl")}
    assert len(histories) == 2 * instances, sorted(histories)  # the instances and their replacements
    final_commit: dict[tuple[str, int], int] = {}
    all_processed: dict[tuple[str, int], int] = {}
    for member, events in histories.items():
        names = [e["name"] for e in events]
        started = next(e for e in events if e["name"] == "started")
        assert started["streams"]["topology"] == "program" and started["agent"] == "java", started
        assert (started["group_protocol"], started["rebalance_protocol"]) == (protocol, rebalance_protocol), started
        assert names.count("started") == 1 and names[-1] == "stopped", (member, names[-5:])
        to_states = [e["to_state"] for e in events if e["name"] == "streams_state"]
        assert to_states[:2] == ["REBALANCING", "RUNNING"] and to_states[-1] == "NOT_RUNNING", (member, to_states)
        assert any(e["name"] == "streams_tasks" and e["active"] for e in events), member
        # every processed run lies in partitions the instance owned (its active tasks' inputs) when it was written
        owned: set[tuple[str, int]] = set()
        for e in events:
            if e["name"] == "assigned":
                owned |= {tuple(p) for p in e["partitions"]}
            elif e["name"] in ("revoked", "lost"):
                owned -= {tuple(p) for p in e["partitions"]}
            elif e["name"] == "processed":
                assert (e["topic"], e["partition"]) in owned, (member, e)
        # its commits (its transactions' offsets under exactly-once): each at most one past what this instance
        # processed there, and together, after the drain, one past the last record of every partition
        assert started["streams"]["processing_guarantee"] == guarantee, started
        commits = [e for e in events if e["name"] == "committed" and e["error"] is None]
        assert commits or not any(e["name"] == "processed" for e in events), member
        assert all(e["trigger"] in ("batch", "revoke") for e in commits), {e["trigger"] for e in commits}
        last_processed: dict[tuple[str, int], int] = {}
        for e in events:
            if e["name"] == "processed":
                key = (e["topic"], e["partition"])
                last_processed[key] = max(last_processed.get(key, -1), e["last_offset"])
            elif e in commits:
                for o in e["offsets"]:
                    key = (o["topic"], o["partition"])
                    assert key not in last_processed or o["offset"] <= last_processed[key] + 1, (member, o, e)
                    final_commit[key] = max(final_commit.get(key, -1), o["offset"])
        for key, offset in last_processed.items():
            all_processed[key] = max(all_processed.get(key, -1), offset)
    assert final_commit == {key: offset + 1 for key, offset in all_processed.items()}, (final_commit, all_processed)
    # the replacements start on empty state directories: their stores restore from the changelogs
    restores = [e for events in histories.values() for e in events if e["name"] == "streams_restore"]
    assert {"start", "end"} <= {e["phase"] for e in restores}
    assert all(e["topic"].endswith("-totals-changelog") for e in restores), {e["topic"] for e in restores}

    metrics = json.loads((run_dir / "analysis" / "metrics.json").read_text())["metrics"]
    assert "effects command" in metrics["streams_output_missing"]["unknown"]  # the program's output is its team's to judge
    for name in ("streams_task_moves", "streams_restorations", "streams_rebalancing_ms"):
        assert metrics[name]["unknown"] is None and metrics[name]["value"] is not None, (name, metrics[name])
    assert metrics["streams_task_moves"]["value"] >= 3  # each bounce moves the bounced instance's tasks
