"""Typed events of a run's history.

Every line of every history file is one JSON object with a ``name`` field that selects
its model below. The schema is documented in docs/history.md; keep the two in step.

Members, the harness and the producer write to separate files (see ``testbed.run.layout``),
so no file ever has two writers and a SIGKILL of one process cannot tear another's lines.
Unknown event names are kept as :class:`UnknownEvent` when reading, never fatal: an older
reader must still be able to analyse a newer history.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..clients import ClientName

TopicPartition = tuple[str, int]


# Milliseconds a producer on another machine (a load worker on a node of a Ray cluster) adds to its clock so that its
# records' produce times and its acks are on the harness's clock: the node's measured offset, negated.
CLOCK_CORRECTION_ENV = "TESTBED_CLOCK_CORRECTION_MS"


def now_ms() -> int:
    """Wall-clock time in milliseconds, the clock every event's ``ts_ms`` is on."""
    return time.time_ns() // 1_000_000


def mono_now_ms() -> int:
    """CLOCK_MONOTONIC in milliseconds: system-wide on Linux, so comparable across the processes of one
    machine, and never stepped (NTP, manual changes); lets the analysis detect wall-clock steps."""
    return time.monotonic_ns() // 1_000_000


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow")

    ts_ms: int = Field(default_factory=now_ms, description="wall time of the event in ms")
    mono_ms: int | None = Field(
        default_factory=mono_now_ms,
        description="CLOCK_MONOTONIC ms when the event was written (for events whose ts_ms comes from a client, "
        "e.g. a JVM timestamp, this is the time of writing, not of the event); null in older histories",
    )
    source: str = Field(description="member id, 'harness' or 'producer-<n>'")


# ---- member events -------------------------------------------------------------------------


class Started(_Event):
    name: Literal["started"] = "started"
    client: ClientName
    client_version: str
    group_id: str
    topics: list[str]
    assignors: list[str] = Field(default_factory=list, description="classic protocol strategies")
    group_protocol: Literal["classic", "consumer", "share", "streams"] = Field(
        default="classic", description="'share': a share-group member (KIP-932), whose events are share_acquired and "
        "share_acknowledged instead of assignments and processing; 'streams': a Kafka Streams instance on the "
        "streams rebalance protocol (KIP-1071)")
    streams: dict[str, Any] | None = Field(
        default=None, description="a Kafka Streams instance: its spec's streams block (topology, "
        "num_standby_replicas, processing_guarantee, state), its state_dir and output_topic; its assigned and revoked "
        "partitions are its active tasks' input partitions")
    remote_assignor: str | None = None
    rebalance_protocol: Literal["eager", "cooperative", "consumer"] | None = Field(
        default=None, description="how the member rebalances, from its spec: the consumer protocol, else the "
        "highest protocol every listed assignor supports; null when unknown (a custom class, or older histories)")
    group_instance_id: str | None = None
    commit_mode: Literal["auto", "sync", "on_revoke", "manual"] = Field(
        default="auto", description="'manual': an instrumented program that commits itself (auto-commit off)")
    pid: int
    spec: str | None = Field(default=None, description="name of the member spec this member runs")
    session_timeout_ms: int | None = Field(
        default=None,
        description="the session timeout the member really runs with: the spec's, else the client's default "
        "(testbed.members.defaults); under group_protocol 'consumer' the broker's, null when unknown",
    )
    max_poll_interval_ms: int | None = Field(
        default=None, description="the max.poll.interval.ms the member really runs with (spec or client default)"
    )
    heartbeat_interval_ms: int | None = Field(
        default=None, description="the heartbeat interval the member runs with (its settings, else the client's "
        "default; under group_protocol 'consumer' the broker's); null when unknown")
    settings: dict[str, Any] = Field(
        default_factory=dict, description="the client settings the member was built with: testbed's and the spec's "
        "client_config (a runner), or the program's own (an instrumented program); callbacks and objects left out")
    handler: str | None = Field(default=None, description="the user's batch handler ('pkg.module:function'), if any")
    command: list[str] | None = Field(
        default=None, description="an instrumented program's command line (a command member, or testbed instrument)")
    reports_lost: bool | None = Field(
        default=None, description="whether the member writes partitions it lost (session expired, fenced, every "
        "task lost) as 'lost' rather than 'revoked', where its runner says so (testbed's Kafka Streams application: "
        "true); null: as its client can tell (older histories, other runners)")


class _PartitionsEvent(_Event):
    partitions: list[TopicPartition]
    generation: int | None = Field(default=None, description="classic generation id, if exposed")
    member_epoch: int | None = Field(default=None, description="KIP-848 member epoch, if exposed")


class Assigned(_PartitionsEvent):
    """Partitions added to this member's ownership (eager: the full new set; cooperative: the increment)."""

    name: Literal["assigned"] = "assigned"


class Revoked(_PartitionsEvent):
    """Partitions taken away by a revoke callback; the member may have committed before returning."""

    name: Literal["revoked"] = "revoked"


class Lost(_PartitionsEvent):
    """Partitions taken away without a chance to commit (session expired, fenced)."""

    name: Literal["lost"] = "lost"


class Processed(_Event):
    """One poll batch's records of one partition, processed (after the per-record processing time)."""

    name: Literal["processed"] = "processed"
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    count: int
    produce_ts_min_ms: int | None = None
    produce_ts_max_ms: int | None = None


class CommittedOffset(BaseModel):
    model_config = ConfigDict(frozen=True)
    topic: str
    partition: int
    offset: int = Field(description="next offset to consume, Kafka's convention")


class Committed(_Event):
    name: Literal["committed"] = "committed"
    offsets: list[CommittedOffset]
    trigger: Literal["auto", "batch", "revoke", "close"]
    error: str | None = None


class ClientError(_Event):
    name: Literal["error"] = "error"
    code: str
    message: str
    fatal: bool = False


class HandlerRange(BaseModel):
    model_config = ConfigDict(frozen=True)
    topic: str
    partition: int
    first_offset: int
    last_offset: int
    count: int


class HandlerError(_Event):
    """The user's handler raised on a batch: the batch is not processed; the member skipped it or stopped."""

    name: Literal["handler_error"] = "handler_error"
    error_type: str = Field(description="the exception's class, e.g. 'sqlite3.OperationalError'")
    message: str
    records: int = Field(description="records in the batch the handler failed on")
    ranges: list[HandlerRange] = Field(default_factory=list, description="the batch's offsets per partition")
    action: Literal["skip", "stop"]


class Stopped(_Event):
    name: Literal["stopped"] = "stopped"
    reason: Literal["clean", "signal", "error", "max_records"]


# ---- Kafka Streams instance events -------------------------------------------------------------


class StreamsState(_Event):
    """A transition of the instance's KafkaStreams.State (CREATED, REBALANCING, RUNNING, PENDING_SHUTDOWN,
    NOT_RUNNING, PENDING_ERROR, ERROR), as its state listener saw it."""

    name: Literal["streams_state"] = "streams_state"
    from_state: str
    to_state: str


class StreamsTask(BaseModel):
    model_config = ConfigDict(frozen=True)
    task: str = Field(description="the task id, '<sub-topology>_<partition>'")
    partitions: list[TopicPartition] = Field(description="its source partitions")


class StreamsTasks(_Event):
    """The instance's tasks after a change (all of them, not the difference): read from the instance's thread
    metadata every 10 ms, so a change is written at most about 10 ms after it happened."""

    name: Literal["streams_tasks"] = "streams_tasks"
    active: list[StreamsTask]
    standby: list[StreamsTask]


class StreamsRestore(_Event):
    """Restoration of one state store partition from its changelog (the instance's restore listener): ``start``
    (offsets to restore from and to), ``batch`` (records restored by one batch, up to ``end_offset``), ``end`` and
    ``suspended`` (records restored in all, the task moved before it finished); ``stable`` (exactly-once only):
    the changelog partition's last stable offset in ``end_offset``, asked of an Admin client (read_committed)
    when a restoration starts or is suspended and written when the answer comes (nothing when the ask fails).
    The start's ``end_offset`` is the high watermark (Streams reads it read_uncommitted, KAFKA-10167) while the
    restore consumer reads committed records: a restoration behind an open transaction never reaches it, and
    ``stable`` tells how far it could get (and, after a suspension, whether that moved meanwhile)."""

    name: Literal["streams_restore"] = "streams_restore"
    phase: Literal["start", "batch", "end", "suspended", "stable"]
    store: str
    topic: str = Field(description="the changelog topic")
    partition: int
    start_offset: int | None = None
    end_offset: int | None = None
    records: int | None = None


# ---- share-group member events (KIP-932) ---------------------------------------------------


class ShareAcquired(_Event):
    """Records of one partition that one poll of a share member returned: each acquired by this member under
    the broker's acquisition lock (``group.share.record.lock.duration.ms``) until it is acknowledged, released
    or the lock expires."""

    name: Literal["share_acquired"] = "share_acquired"
    topic: str
    partition: int
    acquired: list[tuple[int, int | None]] = Field(
        description="[offset, delivery count as the broker gives it (1 = first delivery; null when the client "
        "does not expose it)] per record, in the order the poll returned them")
    produce_ts_min_ms: int | None = None
    produce_ts_max_ms: int | None = None


class ShareAcknowledged(_Event):
    """Acknowledgements of one type for records of one partition, and what the broker answered.

    Written when the answer arrives (``commit_sync``'s result or the acknowledgement commit callback), with
    ``sent_ms`` the time the member handed them to the client. ``error`` null: the broker took them; else its
    error (e.g. INVALID_RECORD_STATE for a record whose lock expired and that another member now holds)."""

    name: Literal["share_acknowledged"] = "share_acknowledged"
    topic: str
    partition: int
    acknowledged: list[int] = Field(description="the offsets acknowledged")
    type: Literal["accept", "release", "reject"]
    mode: Literal["implicit", "explicit"]
    sent_ms: int | None = Field(default=None, description="wall time the acknowledgements were handed over")
    error: str | None = None


class ShareAckSent(_Event):
    """Acknowledgements of one type for records of one partition, handed to the client: written just before the
    call that sends them (explicit: ``commit_sync``/``commitSync``; implicit: the poll or close that accepts the
    previous poll's records). Its ``share_acknowledged`` follows when the broker answers; a member killed in
    between leaves this event without one, and the broker may have taken the acknowledgements all the same."""

    name: Literal["share_ack_sent"] = "share_ack_sent"
    topic: str
    partition: int
    acknowledged: list[int] = Field(description="the offsets handed over")
    type: Literal["accept", "release", "reject"]
    mode: Literal["implicit", "explicit"]


# ---- harness and producer events -----------------------------------------------------------

class Action(StrEnum):
    """Kinds of harness action (``HarnessAction.kind``); each value is the string written to disk."""

    RUN_START = "run_start"
    RUN_END = "run_end"
    STEP_START = "step_start"
    STEP_END = "step_end"
    MEMBER_START = "member_start"
    MEMBER_STOP = "member_stop"
    MEMBER_KILL = "member_kill"
    MEMBER_PAUSE = "member_pause"
    MEMBER_RESUME = "member_resume"
    MEMBER_STALL = "member_stall"
    MEMBER_UNSTALL = "member_unstall"
    MEMBER_EXIT = "member_exit"
    # detail: slot, pid, exit_code or signal, log_tail (last lines), exception {type, message} when the log shows
    # one, restart_in_s (null: not restarted, with restart_refused saying why): a user's program that ended by
    # itself with a failure (written right after its member_exit)
    MEMBER_CRASH = "member_crash"
    # target: the new member; detail: slot, replaces (the crashed member), attempt (1, 2, ...), backoff_s: the
    # restart policy bringing a crashed program back (its member_start follows)
    MEMBER_RESTART = "member_restart"
    BOUNCE_START = "bounce_start"
    BOUNCE_END = "bounce_end"
    # detail: members (how many the group was stable with): a wait for a stable group (a wait_stable step, a
    # rolling bounce's wait after each replacement) saw it stable; the analysis ends the rebalance episode open then
    GROUP_STABLE = "group_stable"
    SCALE_OUT = "scale_out"
    SCALE_IN = "scale_in"
    BROKER_STOP = "broker_stop"
    BROKER_KILL = "broker_kill"
    BROKER_PAUSE = "broker_pause"
    BROKER_UNPAUSE = "broker_unpause"
    BROKER_START = "broker_start"
    BROKER_RESTART = "broker_restart"
    MEMBER_PARTITION = "member_partition"
    MEMBER_HEAL = "member_heal"
    BROKER_PARTITION = "broker_partition"
    BROKER_HEAL = "broker_heal"
    BROKER_LATENCY = "broker_latency"
    BROKER_LATENCY_END = "broker_latency_end"
    FEATURES_UPGRADE = "features_upgrade"
    ADD_PARTITIONS = "add_partitions"
    LOAD_START = "load_start"
    LOAD_END = "load_end"
    DRAIN_START = "drain_start"
    DRAIN_END = "drain_end"
    # detail: group_id, record_lock_duration_ms, delivery_count_limit, auto_offset_reset (the values in force)
    SHARE_GROUP_CONFIG = "share_group_config"
    # detail: group_id, offsets {"topic-partition": start offset or null}, or error: the share group's start offsets
    # at the end of the drain, as the brokers keep them (below one, every record is acknowledged or archived)
    SHARE_GROUP_OFFSETS = "share_group_offsets"
    # detail: group_id, num_standby_replicas, session_timeout_ms, heartbeat_interval_ms, initial_rebalance_delay_ms
    # (in force): a Kafka Streams group on the streams protocol (KIP-1071)
    STREAMS_GROUP_CONFIG = "streams_group_config"
    # target: a node of the Ray cluster members are placed on (testbed.placement); detail: moment (start, end),
    # node_id, address, offset_ms (the node's wall clock minus the harness's), uncertainty_ms (half the shortest
    # round trip of the exchanges), exchanges
    NODE_CLOCK = "node_clock"
    # target: the node; detail: reason, members (those running there, whose member_exit follows with node_lost)
    NODE_LOST = "node_lost"
    INTERRUPTED = "interrupted"


# The actions grouped by meaning: the one table the analysis, the checkers and the reports read.
# A node lost ends the members that ran there as a kill does (its machine gone, their processes with it).
MEMBER_FAULTS = frozenset({Action.MEMBER_KILL, Action.MEMBER_PAUSE, Action.MEMBER_STALL, Action.MEMBER_PARTITION,
                           Action.NODE_LOST})
BROKER_FAULTS = frozenset({Action.BROKER_STOP, Action.BROKER_KILL, Action.BROKER_PAUSE, Action.BROKER_RESTART,
                           Action.BROKER_PARTITION, Action.BROKER_LATENCY})
FAULTS = MEMBER_FAULTS | BROKER_FAULTS
# An action that opens a span of its target, and the action that closes it.
SPANS: Mapping[Action, Action] = MappingProxyType(
    {Action.BOUNCE_START: Action.BOUNCE_END, Action.MEMBER_PAUSE: Action.MEMBER_RESUME,
     Action.MEMBER_STALL: Action.MEMBER_UNSTALL, Action.BROKER_PAUSE: Action.BROKER_UNPAUSE,
     Action.MEMBER_PARTITION: Action.MEMBER_HEAL, Action.BROKER_PARTITION: Action.BROKER_HEAL,
     Action.BROKER_LATENCY: Action.BROKER_LATENCY_END})
# A broker is out of service, or serves its clients late, from the first action until the second (a restart
# is one instant).
BROKER_OUTAGES: Mapping[Action, Action] = MappingProxyType(
    {Action.BROKER_STOP: Action.BROKER_START, Action.BROKER_KILL: Action.BROKER_START,
     Action.BROKER_PAUSE: Action.BROKER_UNPAUSE, Action.BROKER_PARTITION: Action.BROKER_HEAL,
     Action.BROKER_LATENCY: Action.BROKER_LATENCY_END})
# Instants worth marking on a timeline: membership changes and faults that are not spans.
MARKS = frozenset({Action.MEMBER_KILL, Action.MEMBER_STOP, Action.MEMBER_START, Action.MEMBER_CRASH,
                   Action.MEMBER_RESTART, Action.BROKER_KILL,
                   Action.BROKER_STOP, Action.BROKER_START, Action.BROKER_RESTART, Action.SCALE_OUT,
                   Action.SCALE_IN, Action.ADD_PARTITIONS, Action.FEATURES_UPGRADE, Action.NODE_LOST,
                   Action.INTERRUPTED})


class HarnessAction(_Event):
    """Something the harness did, with the time it did it."""

    name: Literal["action"] = "action"
    source: str = "harness"
    kind: Action
    target: str | None = Field(default=None, description="member id, broker id or step name")
    detail: dict[str, Any] = Field(default_factory=dict)


class Ack(_Event):
    """One record the producer saw acknowledged by the brokers."""

    name: Literal["ack"] = "ack"
    topic: str
    partition: int
    offset: int | None = Field(description=(
        "None: delivered without an offset, as librdkafka reports an idempotent producer's retry of a record the "
        "broker had already written (DUPLICATE_SEQUENCE_NUMBER); such an ack cannot be matched with processing"))
    key: str
    seq: int = Field(description="per-key sequence number, from 0")
    produce_ts_ms: int


class ProduceFailed(_Event):
    """One record the producer gave up on: its delivery failed (the brokers unreachable until librdkafka's
    message timeout, a purge of what was still queued when the load stopped) or ``produce()`` refused it. Never
    acknowledged, so never among the lost records: written to ``history/produce_failures/<producer>.jsonl``."""

    name: Literal["produce_failed"] = "produce_failed"
    topic: str
    key: str
    seq: int = Field(description="per-key sequence number, from 0")
    produce_ts_ms: int
    error: str = Field(description="librdkafka's error name, e.g. _MSG_TIMED_OUT, _PURGE_QUEUE")


# ---- the host the run ran on -----------------------------------------------------------------


class HostSample(_Event):
    """How busy the machine was over the interval that ends at ``ts_ms`` (``testbed.host``): CPU, run queue,
    memory and pressure, and the CPU of the run's processes by role. Percentages of CPU are of all cores' time
    (100 = every core busy for the whole interval); pressure is the share of the interval in which some task
    waited (Linux PSI ``some``)."""

    name: Literal["host_sample"] = "host_sample"
    source: str = "host"
    interval_ms: int = Field(description="length of the interval the figures are over (since the previous sample)")
    cores: int = Field(description="online CPUs")
    cpu_busy_pct: float = Field(description="CPU time not idle and not waiting for I/O, steal included")
    cpu_steal_pct: float = Field(description="CPU time the hypervisor gave to others (a virtual machine's loss)")
    cpu_iowait_pct: float
    run_queue: int = Field(description="tasks runnable at the sample's instant (/proc/stat procs_running), the "
                           "sampler's own thread left out")
    load1: float = Field(description="the kernel's 1-minute load average")
    mem_available_pct: float = Field(description="MemAvailable of MemTotal (/proc/meminfo)")
    cpu_pressure_pct: float | None = Field(default=None, description="share of the interval in which some runnable "
                                           "task waited for a CPU (/proc/pressure/cpu); null without PSI")
    memory_pressure_pct: float | None = Field(default=None, description="share of the interval in which some task "
                                              "stalled on memory (/proc/pressure/memory); null without PSI")
    brokers_cpu_pct: float = Field(description="Kafka's JVMs (kafka.Kafka, in their containers) and the latency proxy")
    members_cpu_pct: float = Field(description="the harness's child processes not counted elsewhere: member "
                                   "runners, their JVMs, instrumented programs")
    load_cpu_pct: float = Field(description="the load generator's Locust processes")
    analysis_cpu_pct: float = Field(description="Spark's JVMs (driver, standalone master, workers, executors)")
    harness_cpu_pct: float = Field(description="the process that runs the scenario (the sampler included)")


class UnknownEvent(_Event):
    """Any event whose name this reader does not know; kept with all its fields."""

    name: str
    source: str = "unknown"


# The models of each history file (testbed.run.layout), in one place for readers that need their fields.
MEMBER_EVENTS: tuple[type[_Event], ...] = (Started, Assigned, Revoked, Lost, Processed, Committed, ClientError, Stopped,
                                           ShareAcquired, ShareAcknowledged, ShareAckSent, HandlerError, StreamsState,
                                           StreamsTasks, StreamsRestore)
HARNESS_EVENTS: tuple[type[_Event], ...] = (HarnessAction,)
PRODUCER_EVENTS: tuple[type[_Event], ...] = (Ack, ProduceFailed)
HOST_EVENTS: tuple[type[_Event], ...] = (HostSample,)

KnownEvent = Annotated[
    Union[
        Started,
        Assigned,
        Revoked,
        Lost,
        Processed,
        Committed,
        ClientError,
        Stopped,
        ShareAcquired,
        ShareAcknowledged,
        ShareAckSent,
        HandlerError,
        StreamsState,
        StreamsTasks,
        StreamsRestore,
        HarnessAction,
        Ack,
        ProduceFailed,
        HostSample,
    ],
    Field(discriminator="name"),
]
Event = Union[KnownEvent, UnknownEvent]

_known = TypeAdapter(KnownEvent)


def event_name(model: type[_Event]) -> str:
    """The name an event's lines carry: its model's ``name`` literal, the one spelling of it."""
    return model.model_fields["name"].default


KNOWN_NAMES = frozenset(event_name(m) for m in MEMBER_EVENTS + HARNESS_EVENTS + PRODUCER_EVENTS + HOST_EVENTS)


def parse_event(obj: dict[str, Any]) -> Event:
    """Validate one decoded line; unknown names survive as UnknownEvent, malformed known ones raise."""
    if "mono_ms" not in obj:
        # An older history: the monotonic stamp is unknown, not the reader's clock (the default factory).
        obj = {**obj, "mono_ms": None}
    if obj.get("name") not in KNOWN_NAMES:
        return UnknownEvent.model_validate(obj)
    return _known.validate_python(obj)


__all__ = [
    "BROKER_FAULTS",
    "BROKER_OUTAGES",
    "FAULTS",
    "HARNESS_EVENTS",
    "HOST_EVENTS",
    "MARKS",
    "MEMBER_EVENTS",
    "MEMBER_FAULTS",
    "PRODUCER_EVENTS",
    "SPANS",
    "Ack",
    "ProduceFailed",
    "Action",
    "Assigned",
    "ClientError",
    "Committed",
    "CommittedOffset",
    "Event",
    "HandlerError",
    "HandlerRange",
    "HarnessAction",
    "HostSample",
    "Lost",
    "Processed",
    "Revoked",
    "ShareAckSent",
    "ShareAcknowledged",
    "ShareAcquired",
    "Started",
    "Stopped",
    "StreamsRestore",
    "StreamsState",
    "StreamsTask",
    "StreamsTasks",
    "UnknownEvent",
    "ValidationError",
    "event_name",
    "mono_now_ms",
    "now_ms",
    "parse_event",
]
