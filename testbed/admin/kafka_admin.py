"""Admin calls on a Kafka cluster by its bootstrap servers: one testbed started, or an external one.

Topics (create, wait until every partition is served, delete, add partitions), the brokers in metadata and
what the brokers say about a group (and when its coordinator first answers). The answers feed waits and steps,
never verdicts: those come from the saved history. A cluster testbed started hands its own ``abort`` and
``diagnostics`` in, so a wait on a topic ends at once when a broker container died.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
                                   OffsetSpec, ResourceType)

from ..errors import TestbedError, WaitTimeout
from ..waits import AbortCheck, wait_until

TopicPartition = tuple[str, int]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemberView:
    member_id: str  # the broker's member id
    client_id: str  # testbed sets client.id to its own member id
    instance_id: str | None
    partitions: frozenset[TopicPartition]


@dataclass(frozen=True)
class GroupView:
    group_id: str
    state: str  # e.g. STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD, ASSIGNING, RECONCILING
    assignor: str | None  # classic: the chosen strategy; consumer protocol: the server assignor
    group_type: str | None  # CLASSIC or CONSUMER where the broker reports it
    members: tuple[MemberView, ...] = field(default_factory=tuple)
    coordinator: int | None = None  # node id of the broker coordinating the group

    def owners(self) -> dict[TopicPartition, list[str]]:
        out: dict[TopicPartition, list[str]] = {}
        for m in self.members:
            for tp in m.partitions:
                out.setdefault(tp, []).append(m.client_id)
        return out

    def summary(self) -> str:
        lines = [f"group {self.group_id}: state={self.state} type={self.group_type} assignor={self.assignor} "
                 f"members={len(self.members)} coordinator={self.coordinator}"]
        for m in sorted(self.members, key=lambda m: m.client_id):
            parts = ",".join(f"{t}-{p}" for t, p in sorted(m.partitions))
            lines.append(f"  {m.client_id} ({m.instance_id or 'dynamic'}): {parts or '-'}")
        return "\n".join(lines)


# The KRaft controller refuses one operation of more than 10,000 metadata records ("excessively large batch
# operation", POLICY_VIOLATION), and a new partition is one record: larger topics are made in steps.
PARTITIONS_PER_REQUEST = 5_000

class KafkaAdmin:
    """``KafkaAdmin("127.0.0.1:9092").create_topic("events", 12)``; one AdminClient, made on first use.

    The client must stay referenced while its futures are pending, which holding it here ensures.
    """

    def __init__(self, bootstrap_servers: str, *, replication_factor: int = 1, abort: AbortCheck | None = None,
                 diagnostics: Callable[[], str] | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.replication_factor = replication_factor  # for topics created without one
        self.abort = abort
        self.diagnostics = diagnostics
        self._client: AdminClient | None = None
        self._making = threading.Lock()

    @property
    def client(self) -> AdminClient:
        # One client even when two threads ask first at once: the other's would be dropped, and destroyed with
        # requests of its caller in flight ("Handle is terminating").
        with self._making:
            if self._client is None:
                # librdkafka's connection chatter (brokers restarting) goes to logging, not to stderr.
                self._client = AdminClient({"bootstrap.servers": self.bootstrap_servers,
                                            "logger": logging.getLogger(__name__)})
            return self._client

    def close(self, timeout_s: float = 10.0) -> bool:
        """Destroy the client, waiting at most ``timeout_s``; whether it ended.

        Destroyed by its ``__exit__``, now, whoever else still holds the object: left to a garbage collection
        (a kept exception's frames hold it), the destroy would come at any later moment and on any thread,
        perhaps after its brokers are gone, or on the client's own background thread (where confluent-kafka
        delivers admin results to their futures), which librdkafka answers by aborting the process.
        librdkafka 2.16's destroy at times waits for ever for a broker thread that never ends (seen in the test
        suite's cluster teardown: ``rd_kafka_destroy_internal`` joining an ``rdk:broker`` thread still serving):
        done on a thread of its own, such a client is left to the process's exit instead of holding the caller."""
        with self._making:
            client, self._client = self._client, None
        if client is None:
            return True
        destroy = threading.Thread(target=client.__exit__, args=(None, None, None), name="admin client destroy",
                                   daemon=True)
        del client
        destroy.start()
        destroy.join(timeout_s)
        if destroy.is_alive():
            log.warning("the admin client of %s did not end within %.0f s; left to the process's exit",
                        self.bootstrap_servers, timeout_s)
        return not destroy.is_alive()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- topics ------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, replication_factor: int | None = None,
                     config: dict[str, str] | None = None, timeout_s: float = 30.0, exist_ok: bool = False) -> str:
        """Create the topic and wait until every partition is served: a leader in the metadata, and that leader
        answering for the partition's log.

        A broker lists a partition's leader as soon as it has the controller's record, but creates the log only
        when it applies that record, which on 2 cores takes seconds for hundreds of partitions (measured: 900
        partitions took 6-17 s, once 109 s while ten KIP-848 consumers flooded the controller with
        auto-creation requests for __consumer_offsets). Members started before that would have the topic's
        creation counted in their start-up.

        ``exist_ok``: a topic of that name already there counts as created (a retried create whose first
        attempt reached the controller but timed out on the way back)."""
        first = min(partitions, PARTITIONS_PER_REQUEST)
        topic = NewTopic(name, first, replication_factor or self.replication_factor, config=config or {})
        try:
            self.client.create_topics([topic], operation_timeout=timeout_s)[name].result(timeout=timeout_s)
        except KafkaException as exc:
            if not (exist_ok and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS):
                raise
        if partitions > first:  # grown from what the brokers already show, not from what was asked
            wait_until(lambda: self._has_leaders(name, first), timeout_s=timeout_s,
                       what=f"leaders for the first {first} partitions of {name}", diagnostics=self.diagnostics,
                       abort=self.abort)
            self.add_partitions(name, partitions, timeout_s)
        # Both usually hold within tens of milliseconds of the creation (a new log on one broker): polled soon, then
        # less often (measured: a fixed half-second poll made a 12-partition topic's creation 0.57 s, 0.52 s asleep).
        wait_until(lambda: self._has_leaders(name, partitions), timeout_s=timeout_s, first_interval_s=0.02,
                   what=f"leaders for every partition of {name}", diagnostics=self.diagnostics, abort=self.abort)
        unserved: list[tuple[TopicPartition, str]] = []
        answer_within = (min(0.25 * 2 ** n, 15.0) for n in itertools.count())  # each round's bound, growing
        wait_until(lambda: not self._unserved(name, partitions, unserved, next(answer_within)),
                   timeout_s=max(timeout_s, 120.0),
                   interval_s=0.5, first_interval_s=0.02,
                   what=f"every partition of {name} served by its leader (its log created)",
                   diagnostics=lambda: f"{len(unserved)} not yet served, e.g. {unserved[:5]}{self._cluster_state()}",
                   abort=self.abort)
        return name

    def _cluster_state(self) -> str:
        return f"\n{self.diagnostics()}" if self.diagnostics else ""

    def _unserved(self, name: str, partitions: int, found: list[tuple[TopicPartition, str]],
                  answer_within_s: float) -> list[tuple[TopicPartition, str]]:
        """The partitions of ``name`` whose leader does not answer a ListOffsets for them within ``answer_within_s``,
        with the error (kept in ``found`` for the wait's diagnostics)."""
        asked = {KafkaTopicPartition(name, p): OffsetSpec.latest() for p in range(partitions)}
        # A client of its own per round: once, in CI, the long-lived client's ListOffsets failed on every
        # partition for two minutes while all three brokers served them (cause not found); a new client has
        # no state to get stuck in, and a round is rare and cheap next to the seconds a log takes to appear.
        # Its answer is awaited a bounded time, short at first: in one round out of ten a new client's topic
        # lookup, sent to the bootstrap connection just as librdkafka 2.16 retires it for the broker's own id,
        # fails and is retried only 1-3 s later ("Broker handle destroyed without termination: actions Refresh",
        # its debug log); the next round's client asks at once. Destroyed on leaving the block, here (see close).
        with AdminClient({"bootstrap.servers": self.bootstrap_servers, "logger": logging.getLogger(__name__)}) as probe:
            futures = probe.list_offsets(asked, request_timeout=max(answer_within_s, 10.0))
            deadline = time.monotonic() + answer_within_s
            found[:] = []
            for tp, future in futures.items():
                try:
                    future.result(timeout=max(0.0, deadline - time.monotonic()))
                except KafkaException as exc:
                    found.append(((tp.topic, tp.partition), exc.args[0].name()))
                except FutureTimeout:
                    found.append(((tp.topic, tp.partition), f"no answer within {answer_within_s:.1f} s"))
        return found

    def wait_group_coordinator(self, group_id: str, describe: Callable[[str], GroupView] | None = None,
                               timeout_s: float = 120.0, stop: threading.Event | None = None) -> None:
        """Wait until the coordinator of ``group_id`` answers (describing the group, which need not exist).

        The first lookup of a coordinator on a new cluster makes the brokers create __consumer_offsets, whose
        partitions a loaded broker can take a minute to serve; a group formed meanwhile would have that wait
        counted in its start-up. A real cluster has served its offsets topic for long. ``describe``: how to
        ask (the harness passes a ``testbed.admin.group_probe`` child's, see ``describe_group``); by default in
        this process. ``stop``: once set, the wait ends (WaitAborted) at its next poll."""
        last: list[str] = []
        ask = describe or self.describe_group

        def stopped() -> str | None:
            if stop is not None and stop.is_set():
                return "asked to stop"
            return self.abort() if self.abort is not None else None

        def answers() -> bool:
            try:
                ask(group_id)
            except (KafkaException, TestbedError) as exc:  # TestbedError: the probe's ProbeError
                last[:] = [str(exc)]
                return False
            return True

        wait_until(answers, timeout_s=timeout_s, what=f"the group coordinator of {group_id} answering",
                   first_interval_s=0.02,
                   diagnostics=lambda: f"last answer: {last[0] if last else '-'}{self._cluster_state()}",
                   abort=stopped)

    def delete_topic(self, name: str, timeout_s: float = 30.0) -> None:
        self.client.delete_topics([name], operation_timeout=timeout_s)[name].result(timeout=timeout_s)

    def add_partitions(self, topic: str, total: int, timeout_s: float = 30.0) -> None:
        """Grow ``topic`` to ``total`` partitions (in requests of at most PARTITIONS_PER_REQUEST new ones)."""
        current = len(self.client.list_topics(topic=topic, timeout=timeout_s).topics[topic].partitions)
        while current < total:
            current = min(total, current + PARTITIONS_PER_REQUEST)
            self.client.create_partitions([NewPartitions(topic, current)])[topic].result(timeout=timeout_s)

    def partitions_of(self, topics: list[str], timeout_s: float = 10.0) -> set[TopicPartition]:
        md = self.client.list_topics(timeout=timeout_s)
        return {(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions}

    def end_offsets(self, topics: list[str], timeout_s: float = 10.0) -> dict[TopicPartition, int]:
        """The end offset (high watermark: the offset the next record written gets) of every partition of
        ``topics``, which must exist."""
        md = self.client.list_topics(timeout=timeout_s)
        asked = {KafkaTopicPartition(t, p): OffsetSpec.latest() for t in topics for p in md.topics[t].partitions}
        if not asked:  # librdkafka refuses an empty request
            return {}
        futures = self.client.list_offsets(asked, request_timeout=timeout_s)
        return {(tp.topic, tp.partition): future.result(timeout=timeout_s).offset for tp, future in futures.items()}

    def leaders(self, topic: str, timeout_s: float = 30.0) -> dict[int, int]:
        """Each partition of ``topic`` with the id of its leader, once this client's metadata shows one for all.

        Each broker applies the metadata log on its own, so a client asking another broker than the one
        ``create_topic`` asked can briefly see the topic without partitions (a CI run read it empty)."""
        found: dict[int, int] = {}

        def all_led() -> bool:
            md = self.client.list_topics(topic=topic, timeout=5).topics.get(topic)
            found.clear()
            if md and not md.error:
                found.update({p: meta.leader for p, meta in md.partitions.items()})
            return bool(found) and all(leader >= 0 for leader in found.values())

        wait_until(all_led, timeout_s=timeout_s, what=f"a leader for every partition of {topic}",
                   diagnostics=lambda: f"leaders seen: {found}{self._cluster_state()}", abort=self.abort)
        return dict(found)

    def broker_ids(self, timeout_s: float = 3.0) -> set[int]:
        return set(self.client.list_topics(timeout=timeout_s).brokers)

    def _has_leaders(self, name: str, partitions: int) -> bool:
        md = self.client.list_topics(topic=name, timeout=5).topics.get(name)
        return bool(md and not md.error and len(md.partitions) == partitions
                    and all(p.leader >= 0 for p in md.partitions.values()))

    # ---- groups ------------------------------------------------------------------------------

    def set_group_configs(self, group_id: str, configs: dict[str, str], timeout_s: float = 30.0) -> dict[str, str]:
        """Set a group's own configs (e.g. a share group's ``share.auto.offset.reset``), which the brokers accept
        before the group exists; returns the group's configs in force afterwards, as the brokers describe them.

        The controller answers the change once it committed it; a broker describes it once its metadata caught up,
        a moment later (a read-back at once was seen to return the defaults): the read-back waits, up to
        ``timeout_s``, for the brokers to describe the values set, and returns what they describe last."""
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
        resource = ConfigResource(ResourceType.GROUP, group_id, incremental_configs=entries)
        self.client.incremental_alter_configs([resource])[resource].result(timeout=timeout_s)
        seen: dict[str, str] = {}

        def in_force() -> bool:
            seen.clear()
            seen.update(self.group_configs(group_id, timeout_s))
            return all(seen.get(k) == v for k, v in configs.items())

        try:
            wait_until(in_force, timeout_s=timeout_s, interval_s=0.2, what=f"group {group_id}'s configs in force",
                       diagnostics=lambda: f"described: {seen}")
        except WaitTimeout:
            pass  # the caller compares and says what differs
        return dict(seen)

    def group_configs(self, group_id: str, timeout_s: float = 30.0) -> dict[str, str]:
        resource = ConfigResource(ResourceType.GROUP, group_id)
        described = self.client.describe_configs([resource], request_timeout=timeout_s)[resource].result(
            timeout=timeout_s)
        return {name: entry.value for name, entry in described.items()}

    def describe_group(self, group_id: str, timeout_s: float = 10.0) -> GroupView:
        """What the group's coordinator says about the group.

        With confluent-kafka 2.16.1, describing the group while its coordinator's broker has just been
        SIGKILLed can abort the whole process inside librdkafka (assertion in
        rd_kafka_enq_once_del_source_return, librdkafka #4605): the harness asks from a child
        (``testbed.admin.group_probe``).
        """
        desc = self.client.describe_consumer_groups([group_id], request_timeout=timeout_s)[group_id].result(
            timeout=timeout_s)
        members = tuple(
            MemberView(
                member_id=m.member_id,
                client_id=m.client_id,
                instance_id=m.group_instance_id,
                partitions=frozenset((tp.topic, tp.partition) for tp in (m.assignment.topic_partitions
                                                                         if m.assignment else [])),
            )
            for m in desc.members
        )
        state = desc.state.name if isinstance(desc.state, ConsumerGroupState) else str(desc.state)
        group_type = getattr(desc, "type", None)
        return GroupView(
            group_id=group_id,
            state=state,
            assignor=desc.partition_assignor or None,
            group_type=getattr(group_type, "name", None) if group_type is not None else None,
            members=members,
            coordinator=desc.coordinator.id if desc.coordinator is not None else None,
        )
