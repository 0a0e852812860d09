"""The run's groups in a sentence each, from metrics.json's configuration: a consumer group by its protocol,
assignors, clients and commit modes; a Kafka Streams application as one, by its rebalance protocol, its
processing guarantee and how it commits (transactions under exactly-once, not the consumer's commit modes)."""

from __future__ import annotations

from typing import Any

from ..analysis.view.started import streams_block, streams_instances

GROUP_PROTOCOL_WORDS = {"streams": "the streams rebalance protocol (KIP-1071)",
                        "classic": "the classic rebalance protocol (Streams' own assignor)"}


def _listed(values: list[Any] | None, none: str = "—") -> str:
    return ", ".join(str(v) for v in values) if values else none


def group_sentences(config: dict[str, Any]) -> list[str]:
    """One sentence per kind of member the run had, then the run's faults."""
    members: dict[str, dict[str, Any]] = config.get("members") or {}
    streams = streams_instances(members)
    sentences = [streams_sentence(streams)] if streams else []
    others = {m: s or {} for m, s in members.items() if m not in streams}
    if others or not members:
        # Without Streams instances the run's configuration is the consumer group's; beside them, its members' own.
        clients = sorted({str(s["client"]) for s in others.values() if s.get("client")}) if streams else config.get("clients")
        modes = sorted({str(s.get("commit_mode") or "auto") for s in others.values()}) if streams else config.get("commit_modes")
        sentences.insert(0, f"Protocol {config.get('protocol')}; assignors {_listed(config.get('assignors'))}; "
                            f"clients {_listed(clients)}; commit modes {_listed(modes)}; "
                            f"static membership {'yes' if config.get('static_membership') else 'no'}.")
    sentences.append(f"Faults: {_listed(config.get('faults'), 'none')}.")
    return sentences


def streams_sentence(instances: dict[str, dict[str, Any]]) -> str:
    """A Kafka Streams application: its instances, rebalance protocol, processing guarantee and commits."""
    first = next(iter(instances.values()))
    block = streams_block(first.get("streams"))
    protocols = sorted({str(s.get("group_protocol") or "classic") for s in instances.values()})
    guarantees = sorted({str(streams_block(s.get("streams")).get("processing_guarantee") or "at_least_once")
                         for s in instances.values()})
    protocol = " and ".join(GROUP_PROTOCOL_WORDS.get(p, p) for p in protocols)
    versions = _listed(sorted({str(s.get("client_version")) for s in instances.values() if s.get("client_version")}))
    intervals = sorted({_commit_interval_ms(s, g) for s in instances.values() for g in guarantees})
    every = " or ".join(f"{i:,} ms" for i in intervals)
    if all(g.startswith("exactly_once") for g in guarantees):
        commits = (f"each task commits by transaction every {every} (commit.interval.ms): its output, its stores' "
                   "changelog writes and its input offsets together, read back committed")
    else:
        commits = f"each task commits its input offsets every {every} (commit.interval.ms), at least once"
    standby = block.get("num_standby_replicas") or 0
    if block.get("topology") == "program":  # a team's own Streams service under the Java agent
        return (f"The program's own Kafka Streams application (kafka-streams {versions}, under testbed's Java agent) of "
                f"{len(instances)} instance(s) on {protocol}, {standby} standby replica(s), processing guarantee "
                f"{' and '.join(guarantees)}: {commits}.")
    return (f"A Kafka Streams application (kafka-streams {versions}) of {len(instances)} instance(s) on {protocol}, "
            f"topology {block.get('topology', '?')}, {standby} standby replica(s), processing guarantee "
            f"{' and '.join(guarantees)}: {commits}; state {block.get('state', '?')}.")


def _commit_interval_ms(started: dict[str, Any], guarantee: str) -> int:
    settings = started.get("settings") or {}
    # a program's Streams settings are in its streams block (its `settings` are its main consumer's)
    value = streams_block(started.get("streams")).get("commit_interval_ms") or settings.get("commit.interval.ms")
    if value is not None:
        return int(value)
    # Kafka Streams' default when the application does not set it (StreamsConfig): 100 ms under exactly-once, 30 s
    # otherwise.
    return 100 if guarantee.startswith("exactly_once") else 30_000
