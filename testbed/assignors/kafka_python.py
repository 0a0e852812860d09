"""kafka-python 3.x adapters for the seed assignors.

Each class subclasses ``kafka.coordinator.assignors.abstract.AbstractPartitionAssignor`` and does only
translation: JoinGroup members -> :class:`MemberSubscription`, a pure core call, the result ->
``ConsumerProtocolAssignment``. The plain classes are EAGER (kafka-python's default protocol): members
revoke everything before joining, so the cores never need KIP-429 owned partitions. Each has a cooperative
variant (``Cooperative...``, protocol name + ``-cooperative``): :class:`CooperativeVariant` runs the same core
and stages its moves over two rounds by the KIP-429 rule in :mod:`testbed.assignors.cooperative`.

kafka-python builds an assignor with ``klass()`` when given a class, and uses an instance as is. The
classes therefore work with no arguments; pass an instance to give one its consumer config, e.g. a failover
priority or the lag-aware leader's bootstrap servers.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from testbed.assignors.cooperative import cooperative_round, membership_key
from testbed.assignors.failover import DEFAULT_PRIORITY, assign_failover, encode_priority, parse_priority
from testbed.assignors.lag_aware import (
    LagScope,
    PartitionOffsets,
    assign_lag_aware,
    lags_from_offsets,
    reset_policy,
)
from testbed.assignors.model import (
    AssignorInputError,
    GroupAssignment,
    MemberSubscription,
    TopicPartition,
    group_by_topic,
)
from testbed.assignors.stream_join import (
    NO_EPOCH,
    assign_sticky_stream_join,
    decode_assignment_user_data,
    encode_subscription_user_data,
)

log = logging.getLogger(__name__)

OffsetsSource = Callable[[Sequence[TopicPartition]], Mapping[TopicPartition, PartitionOffsets]]


def member_subscription(member: Any) -> MemberSubscription:
    """A JoinGroup member (metadata decoded by the coordinator, or still bytes) as the cores see it."""
    metadata = member.metadata
    if isinstance(metadata, (bytes, bytearray)):
        metadata = ConsumerProtocolSubscription.decode(bytes(metadata))
    owned = tuple(
        (tp.topic, p) for tp in (getattr(metadata, "owned_partitions", None) or ()) for p in tp.partitions
    )
    user_data = metadata.user_data
    if user_data is not None and not isinstance(user_data, (bytes, bytearray)):
        user_data = user_data.encode()  # a struct-like user data object that was never put on the wire
    return MemberSubscription(
        member_id=member.member_id,
        topics=frozenset(metadata.topics),
        user_data=bytes(user_data or b""),
        owned_partitions=owned,
        generation=getattr(metadata, "generation_id", -1),
        group_instance_id=getattr(member, "group_instance_id", None),
    )


def partitions_per_topic_from_cluster(cluster: Any, topics: set[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for topic in sorted(topics):
        partitions = cluster.partitions_for_topic(topic)
        if partitions is None:
            log.warning("no partition metadata for topic %s; it is left out of this assignment", topic)
            continue
        count = len(partitions)
        if set(partitions) != set(range(count)):
            log.warning("topic %s has non-contiguous partitions %s; using 0..%d", topic, sorted(partitions), count - 1)
        counts[topic] = count
    return counts


def protocol_assignments(result: GroupAssignment, member_ids: Sequence[str], version: int) -> dict:
    return {
        mid: ConsumerProtocolAssignment(
            version, sorted(result.partitions.get(mid, {}).items()), result.user_data.get(mid, b"")
        )
        for mid in member_ids
    }


# The fetch makes up to three requests, each bounded by the fetch timeout; beyond that it is stuck.
FETCH_DEADLINE_FACTOR = 3


def run_with_deadline(call: Callable[[], Any], deadline_s: float) -> Any:
    """``call()`` on a daemon worker thread, given up after ``deadline_s``.

    kafka-python 3 calls ``assign()`` on the consumer's IO thread: the leader's admin client must not
    run there (its own IO thread and sockets beside the consumer's loop), and a hung fetch must not hold
    the IO thread, whose heartbeats keep the leader in the group.
    """
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="lag-aware-offsets", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise TimeoutError(f"offset fetch still running after {deadline_s:.0f}s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class _CoreAssignor(AbstractPartitionAssignor):
    """Shared translation; subclasses supply ``name``, ``_assign_core`` and their user data."""

    name = "abstract-core"
    version = 0

    def assign(self, cluster, members):
        partitions_per_topic, subscriptions = self._group_inputs(cluster, members)
        result = self._assign_core(partitions_per_topic, subscriptions)
        return protocol_assignments(result, [s.member_id for s in subscriptions], self.version)

    @staticmethod
    def _group_inputs(cluster, members) -> tuple[dict[str, int], list[MemberSubscription]]:
        subscriptions = [member_subscription(m) for m in members]
        topics = {t for s in subscriptions for t in s.topics}
        return partitions_per_topic_from_cluster(cluster, topics), subscriptions

    def _assign_core(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Sequence[MemberSubscription]
    ) -> GroupAssignment:
        raise NotImplementedError

    def _user_data(self) -> bytes:
        return b""

    def metadata(self, topics):
        return ConsumerProtocolSubscription(self.version, sorted(topics), self._user_data())

    def on_assignment(self, assignment, generation):
        pass


class LagAwareAssignor(_CoreAssignor):
    """KIP-169. The leader fetches offsets with ``offsets_source`` (default: the group's own cluster,
    via :func:`testbed.assignors.offsets_fetch.fetch_partition_offsets` and ``consumer_config``)."""

    name = "lag-aware"

    def __init__(
        self, consumer_config: Mapping[str, Any] | None = None, *, offsets_source: OffsetsSource | None = None
    ) -> None:
        self.consumer_config = dict(consumer_config or {})
        reset = self.consumer_config.get("auto_offset_reset", "latest")  # kafka-python's default
        self.auto_offset_reset = reset_policy(reset, "consumer_config['auto_offset_reset']")
        self.offsets_source = offsets_source

    def _fetch_offsets(self, partitions: Sequence[TopicPartition]) -> Mapping[TopicPartition, PartitionOffsets]:
        if self.offsets_source is not None:
            return self.offsets_source(partitions)
        if not self.consumer_config.get("bootstrap_servers") or not self.consumer_config.get("group_id"):
            log.warning("lag-aware: no bootstrap_servers/group_id configured; lags unknown, balancing counts only")
            return {}
        from testbed.assignors.offsets_fetch import DEFAULT_FETCH_TIMEOUT_MS, fetch_partition_offsets

        try:
            return run_with_deadline(
                lambda: fetch_partition_offsets(self.consumer_config, self.consumer_config["group_id"], partitions),
                FETCH_DEADLINE_FACTOR * DEFAULT_FETCH_TIMEOUT_MS / 1000,
            )
        except Exception:  # the rebalance must still finish; count balance is the KIP's first goal anyway
            log.exception("lag-aware: fetching offsets failed; lags unknown, balancing counts only")
            return {}

    scope: LagScope = "topic"

    def _assign_core(self, partitions_per_topic, subscriptions):
        wanted = [(t, p) for t, n in partitions_per_topic.items() for p in range(n)]
        offsets = self._fetch_offsets(wanted)
        lags = lags_from_offsets(partitions_per_topic, offsets, self.auto_offset_reset)
        return assign_lag_aware(partitions_per_topic, subscriptions, lags, self.scope)


class GroupLagAwareAssignor(LagAwareAssignor):
    """Lag-aware balanced across topics (beyond KIP-169): per-topic counts as the KIP, ties broken by each
    member's partition count and then lag over every topic, so a backlog spread over many topics spreads over
    the members too. A protocol name of its own: every member of a group must run the same algorithm."""

    name = "lag-aware-group"
    scope: LagScope = "group"


class FailoverAssignor(_CoreAssignor):
    """Seed 002. Priority from ``priority=`` or ``consumer_config['assignment_consumer_priority']`` (an int32 or
    its decimal string, as the seed configures it); none configured: the seed's default, INT32_MAX."""

    name = "failover"
    PRIORITY_CONFIG_KEYS = ("assignment_consumer_priority", "assignment.consumer.priority")

    def __init__(self, priority: int | str | None = None, consumer_config: Mapping[str, Any] | None = None) -> None:
        key = "priority"
        if priority is None:
            config = consumer_config or {}
            key, priority = next(((k, config[k]) for k in self.PRIORITY_CONFIG_KEYS if k in config), (key, None))
        self.priority = DEFAULT_PRIORITY if priority is None else parse_priority(priority, key)
        self._encoded_priority = encode_priority(self.priority)

    def _user_data(self) -> bytes:
        return self._encoded_priority

    def _assign_core(self, partitions_per_topic, subscriptions):
        return assign_failover(partitions_per_topic, subscriptions)


class SlotPriorityFailoverAssignor(FailoverAssignor):
    """Failover with the priority derived from the testbed member's slot: priority = -slot.

    A member spec names one assignor for every member of a fleet, so it cannot carry a priority per
    member; the slot can: the kafka-python runner passes ``consumer_config['testbed_member_slot']``
    (stable across bounces). Slot 0 ranks highest, then 1, 2, ...; an explicit
    ``assignment_consumer_priority`` still wins.
    """

    SLOT_CONFIG_KEY = "testbed_member_slot"

    def __init__(self, consumer_config: Mapping[str, Any] | None = None) -> None:
        config = dict(consumer_config or {})
        priority = next((config[k] for k in self.PRIORITY_CONFIG_KEYS if k in config), None)
        if priority is None:
            slot = config.get(self.SLOT_CONFIG_KEY)
            if not isinstance(slot, int) or isinstance(slot, bool) or slot < 0:
                raise AssignorInputError(
                    f"consumer_config[{self.SLOT_CONFIG_KEY!r}]: a member slot (int >= 0) is required to derive "
                    f"the failover priority, got {slot!r}; or set assignment_consumer_priority"
                )
            priority = -slot
        super().__init__(priority=priority)


class StickyStreamJoinAssignor(_CoreAssignor):
    """Seed 003. Remembers its partition numbers and epoch from each assignment for the next join."""

    name = "sticky-stream-join"

    def __init__(self, consumer_config: Mapping[str, Any] | None = None) -> None:
        self.epoch = NO_EPOCH
        self.owned_numbers: tuple[int, ...] = ()

    def _user_data(self) -> bytes:
        return encode_subscription_user_data(self.epoch, self.owned_numbers)

    def _assign_core(self, partitions_per_topic, subscriptions):
        return assign_sticky_stream_join(partitions_per_topic, subscriptions)

    def on_assignment(self, assignment, generation):
        self.epoch = decode_assignment_user_data(assignment.user_data)
        self.owned_numbers = tuple(sorted({tp.partition for tp in assignment.partitions()}))


COOPERATIVE_SUFFIX = "-cooperative"
# Subscription v1 carries the owned partitions, v2 the generation they were assigned in (KIP-429, KIP-792).
COOPERATIVE_SUBSCRIPTION_VERSION = 2


class CooperativeVariant(_CoreAssignor):
    """The cooperative (KIP-429) variant of a core adapter: listed first in the bases of a subclass of
    that adapter, e.g. ``class CooperativeFailoverAssignor(CooperativeVariant, FailoverAssignor)``.

    Each round the leader computes the eager adapter's target and assigns it minus the partitions that
    must move (:func:`testbed.assignors.cooperative.cooperative_round`); their owners revoke them, which
    makes kafka-python (3.x, ``ConsumerCoordinator._on_join_complete_async``) request the follow-up
    rebalance that assigns them. The leader keeps the target it withheld partitions from and gives it
    again in that follow-up round when the membership is the same, so a move started in round one ends in
    round two: lag-aware's lags change between the rounds under load, and a recomputed target could move
    other partitions and need round after round.

    Members report what they own in their subscription, as kafka-python's own cooperative assignor does
    (its coordinator does not add it), with the generation of their last JoinGroup, as Java's
    ``ConsumerCoordinator.metadata()`` does: not the generation of their last assignment. A member whose
    SyncGroup failed (another member joined first: REBALANCE_IN_PROGRESS) keeps its partitions without an
    assignment of that generation; reporting the older one would get its claims ignored (only the newest
    generation's claims count) and its partitions handed to another member while it still holds them.
    A consumer whose list also holds an eager-only assignor runs EAGER (kafka-python picks the highest
    protocol every listed assignor supports) and revokes everything before each join: it must report
    nothing, or the leader would wait for revocations that never come. kafka-python tells an assignor
    neither its protocol nor its generation, so the owner calls :meth:`follow_coordinator`
    (:func:`attach_to_consumer` does it for a built consumer; the testbed's runner calls it); an assignor
    followed by no coordinator reports its last assignment.

    No ``__init__`` here: kafka-python and the runner build a variant through its eager adapter's
    constructor (``consumer_config`` and all), so state starts as class defaults.
    """

    version = COOPERATIVE_SUBSCRIPTION_VERSION
    _owned: tuple[TopicPartition, ...] = ()
    _generation: int = -1
    _reports_owned: bool = True
    _coordinator: Callable[[], Any] | None = None  # a weak reference: the coordinator holds its assignors
    _pending: tuple[tuple, GroupAssignment] | None = None  # (membership key, target) awaiting its follow-up

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        eager = next(b for b in cls.__mro__[1:] if issubclass(b, _CoreAssignor) and not issubclass(b, CooperativeVariant))
        # The protocol name is the eager one plus the suffix: every member of a group must agree on it.
        cls.name = eager.name + COOPERATIVE_SUFFIX

    def supported_protocols(self):
        # COOPERATIVE first (the mode used when every listed assignor supports it); EAGER as well, as Java's
        # CooperativeStickyAssignor does, so [eager, cooperative] in one consumer is accepted and runs eager:
        # the first bounce of KIP-429's double-bounce upgrade.
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def follow_coordinator(self, coordinator: Any) -> None:
        """Report what this kafka-python 3.x ``ConsumerCoordinator`` holds (its private state, as 3.0 keeps it)."""
        self._reports_owned = coordinator._rebalance_protocol == RebalanceProtocol.COOPERATIVE
        self._coordinator = weakref.ref(coordinator)

    def _claim(self) -> tuple[tuple[TopicPartition, ...], int]:
        """(owned partitions, generation) for the next JoinGroup."""
        if not self._reports_owned:
            return (), -1
        coordinator = self._coordinator() if self._coordinator is not None else None
        if coordinator is None:
            return self._owned, self._generation
        # The subscription, not the last assignment: a lost membership empties it before the next join.
        owned = tuple(sorted((tp.topic, tp.partition) for tp in coordinator._subscription.assigned_partitions()))
        return owned, coordinator._generation.generation_id

    def metadata(self, topics):
        owned, generation = self._claim()
        return ConsumerProtocolSubscription(
            version=self.version,
            topics=sorted(topics),
            user_data=self._user_data(),
            owned_partitions=[
                ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=ps)
                for t, ps in sorted(group_by_topic(owned).items())
            ],
            generation_id=generation,
        )

    def assign(self, cluster, members):
        partitions_per_topic, subscriptions = self._group_inputs(cluster, members)
        key = membership_key(partitions_per_topic, subscriptions)
        if self._pending is not None and self._pending[0] == key:
            target = self._pending[1]
        else:
            target = self._assign_core(partitions_per_topic, subscriptions)
        this_round = cooperative_round(target, subscriptions)
        self._pending = (key, target) if this_round.withheld else None
        if this_round.withheld:
            log.info("%s: %d partition(s) move; their owners revoke them, the follow-up round assigns them",
                     self.name, len(this_round.withheld))
        return protocol_assignments(this_round.assignment, [s.member_id for s in subscriptions], self.version)

    def on_assignment(self, assignment, generation):
        super().on_assignment(assignment, generation)
        self._owned = tuple(sorted((tp.topic, tp.partition) for tp in assignment.partitions()))
        self._generation = generation


class CooperativeLagAwareAssignor(CooperativeVariant, LagAwareAssignor):
    """``lag-aware-cooperative``: KIP-169's placement, moved by KIP-429's two rounds."""


class CooperativeGroupLagAwareAssignor(CooperativeVariant, GroupLagAwareAssignor):
    """``lag-aware-group-cooperative``."""


class CooperativeFailoverAssignor(CooperativeVariant, FailoverAssignor):
    """``failover-cooperative``: a failover hands every partition over in the follow-up round."""


class CooperativeSlotPriorityFailoverAssignor(CooperativeVariant, SlotPriorityFailoverAssignor):
    """``failover-cooperative``, priority from the member's slot as :class:`SlotPriorityFailoverAssignor`."""


class CooperativeStickyStreamJoinAssignor(CooperativeVariant, StickyStreamJoinAssignor):
    """``sticky-stream-join-cooperative``: numbers that stay with their member are never revoked."""


def attach_to_consumer(consumer: Any) -> None:
    """Let the cooperative variants in a built kafka-python consumer follow its coordinator (see
    :class:`CooperativeVariant`): the protocol it runs, what it owns, the generation it joined."""
    coordinator = getattr(consumer, "_coordinator", None)
    if getattr(coordinator, "_rebalance_protocol", None) is None:
        return
    for assignor in (getattr(coordinator, "_assignors", None) or {}).values():
        if isinstance(assignor, CooperativeVariant):
            assignor.follow_coordinator(coordinator)

