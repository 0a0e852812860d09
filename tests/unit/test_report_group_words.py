"""The run's groups in words: a Kafka Streams application described as one, a consumer group as before."""

from __future__ import annotations

from testbed.report.group_words import group_sentences

EOS = {"client": "java", "client_version": "4.3.1", "group_protocol": "streams", "commit_mode": "auto",
       "streams": {"topology": "stateful", "processing_guarantee": "exactly_once_v2", "num_standby_replicas": 0,
                   "state": "kept"}, "settings": {"processing.guarantee": "exactly_once_v2"}}


def test_a_streams_application_is_described_by_its_protocol_guarantee_and_transactions_not_commit_modes():
    config = {"protocol": "consumer", "clients": ["java"], "commit_modes": ["auto"], "faults": ["broker_kill"],
              "members": {"m0": EOS, "m1": EOS}}
    streams, faults = group_sentences(config)
    assert streams == (
        "A Kafka Streams application (kafka-streams 4.3.1) of 2 instance(s) on the streams rebalance protocol "
        "(KIP-1071), topology stateful, 0 standby replica(s), processing guarantee exactly_once_v2: each task commits "
        "by transaction every 100 ms (commit.interval.ms): its output, its stores' changelog writes and its input "
        "offsets together, read back committed; state kept.")
    assert "commit modes" not in streams and faults == "Faults: broker_kill."


def test_at_least_once_on_the_classic_protocol_commits_offsets_at_its_interval():
    alo = {**EOS, "group_protocol": "classic", "streams": {**EOS["streams"], "processing_guarantee": "at_least_once"},
           "settings": {"commit.interval.ms": "1000"}}
    (streams, _) = group_sentences({"protocol": "cooperative", "members": {"m0": alo}})
    assert "the classic rebalance protocol (Streams' own assignor)" in streams
    assert "each task commits its input offsets every 1,000 ms (commit.interval.ms), at least once" in streams


def test_a_consumer_group_keeps_its_protocol_assignors_clients_and_commit_modes_beside_a_streams_application():
    consumer = {"client": "confluent-kafka", "commit_mode": "on_revoke"}
    config = {"protocol": "mixed", "assignors": ["cooperative-sticky"], "clients": ["confluent-kafka", "java"],
              "commit_modes": ["auto", "on_revoke"], "members": {"c0": consumer, "s0": EOS}}
    group, streams, faults = group_sentences(config)
    assert group == ("Protocol mixed; assignors cooperative-sticky; clients confluent-kafka; commit modes on_revoke; "
                     "static membership no.")
    assert streams.startswith("A Kafka Streams application") and faults == "Faults: none."
    assert group_sentences({"protocol": "eager", "clients": ["kafka-python"], "commit_modes": ["sync"],
                            "members": {"a": {"client": "kafka-python"}}})[0] == (
        "Protocol eager; assignors —; clients kafka-python; commit modes sync; static membership no.")


def test_a_programs_own_streams_application_is_described_with_its_own_commit_interval():
    program = {"client": "java", "client_version": "4.1.1", "group_protocol": "classic", "commit_mode": "manual",
               "streams": {"topology": "program", "processing_guarantee": "at_least_once", "num_standby_replicas": 0,
                           "commit_interval_ms": 1000}, "settings": {"group.id": "app"}}
    config = {"protocol": "cooperative", "clients": ["java"], "commit_modes": ["manual"], "faults": [],
              "members": {"m0": program}}
    streams, _ = group_sentences(config)
    assert streams.startswith("The program's own Kafka Streams application (kafka-streams 4.1.1, under testbed's "
                              "Java agent) of 1 instance(s)")
    assert "every 1,000 ms (commit.interval.ms)" in streams and "state ?" not in streams
