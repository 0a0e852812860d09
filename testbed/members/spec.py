"""What one member runs: a typed MemberSpec, validated before anything starts.

A spec names the client family and version, the assignment strategies, the group protocol and
the processing knobs. Combinations a client cannot run are refused here, with an error that names
the field and what is supported, so a scenario never discovers them halfway through a run.

This module is imported by the runners inside per-version virtualenvs: it may only use the
stdlib and pydantic (no other testbed module beyond ``testbed.history`` and ``testbed.clients``). What each
client family can do is its declaration's (``testbed.clients``); the refusals take their allowed values from it.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from ..clients import FAMILIES, ClientName, family, names, needed_for, running
from ..clients.family import ClientFamily, dotted
from .owned_settings import refusals as owned_setting_refusals

GroupProtocol = Literal["classic", "consumer", "share", "streams"]
CommitMode = Literal["auto", "sync", "on_revoke"]
OnHandlerError = Literal["skip", "stop"]
# Clients whose own programs testbed can instrument (testbed.instrument).
PROGRAM_CLIENTS = names(lambda f: f.program)
# Clients whose runners call a user's handler (aiokafka's awaits a coroutine handler).
HANDLER_CLIENTS = names(lambda f: f.handler)
# What a command member's ``env`` values may refer to: the run's cluster, group and topics (by scenario name).
ENV_PLACEHOLDERS = ("bootstrap_servers", "group_id", "run_dir")
ENV_TOPIC_PLACEHOLDER = "topic:"
ShareAcknowledgement = Literal["implicit", "explicit"]

EAGER_ASSIGNORS = frozenset({"range", "roundrobin", "sticky"})
COOPERATIVE_ASSIGNORS = frozenset({"cooperative-sticky"})

Protocols = frozenset[Literal["eager", "cooperative"]]
EAGER_ONLY: Protocols = frozenset({"eager"})
COOPERATIVE_ONLY: Protocols = frozenset({"cooperative"})
BOTH_PROTOCOLS: Protocols = frozenset({"cooperative", "eager"})
# The seed assignors' kafka-python adapters (testbed.assignors.kafka_python, docs/assignors.md) and the
# rebalance protocols each supports. This module may not import them (it runs in client virtualenvs), so
# tests/unit/test_assignors_cooperative.py checks this table against the classes' supported_protocols().
# The cooperative variants support EAGER too, as Java's CooperativeStickyAssignor does: listed after their
# eager original in one consumer they run eager, the first bounce of KIP-429's double bounce.
SEED_ASSIGNOR_MODULE = "testbed.assignors.kafka_python"
_SEED_EAGER_CLASSES = ("LagAwareAssignor", "GroupLagAwareAssignor", "FailoverAssignor",
                       "SlotPriorityFailoverAssignor", "StickyStreamJoinAssignor")
SEED_ASSIGNORS: dict[str, Protocols] = {
    **{f"{SEED_ASSIGNOR_MODULE}:{cls}": EAGER_ONLY for cls in _SEED_EAGER_CLASSES},
    **{f"{SEED_ASSIGNOR_MODULE}:Cooperative{cls}": BOTH_PROTOCOLS for cls in _SEED_EAGER_CLASSES},
}

# The same seed assignors in Java (testbed/members/java/src/assignors, package testbed.assignors): the same classes,
# protocol names and user data, so one group can mix kafka-python and Java members on a seed assignor.
# tests/unit/test_java_assignors.py checks them against the Python cores.
JAVA_SEED_PACKAGE = "testbed.assignors"
JAVA_SEED_ASSIGNORS: dict[str, Protocols] = {
    **{f"{JAVA_SEED_PACKAGE}.{cls}": EAGER_ONLY for cls in _SEED_EAGER_CLASSES},
    **{f"{JAVA_SEED_PACKAGE}.Cooperative{cls}": BOTH_PROTOCOLS for cls in _SEED_EAGER_CLASSES},
}

# Strategies each client can run under the classic protocol (kafka-python also takes any import path; java the
# seed assignors by class name).
SUPPORTED_ASSIGNORS: dict[str, tuple[str, ...]] = {
    name: (*f.classic_assignors, *(JAVA_SEED_ASSIGNORS if name == "java" else ())) for name, f in FAMILIES.items()
}
REMOTE_ASSIGNORS = ("uniform", "range")
# Clients whose members a host process can run many of, each in a thread (``testbed.members.host``; for
# Java ``testbed.members.java.host``, a JVM of KafkaConsumers).
HOSTED_CLIENTS = names(lambda f: f.hosted)
# kafka-tools versions whose VerifiableConsumer the Java runner drives (docs/clients.md: 3.9.x and 4.x).
DEFAULT_JAVA_VERSION: str = family("java").default_version  # type: ignore[assignment]
SUPPORTED_JAVA_SERIES = family("java").supported_series
# Share groups (KIP-932): the clients with a share consumer, from the first release whose API the runners use.
SHARE_CLIENTS: dict[str, tuple[int, ...]] = running("share")
# Kafka Streams' rebalance protocol (KIP-1071): production-ready for its core from 4.2, clients and brokers.
STREAMS_PROTOCOL_SINCE = running("streams")["java"]
# Static membership under the streams protocol (KAFKA-20169): kafka-streams 4.4 on, with 4.4 brokers.
STREAMS_PROTOCOL_STATIC_SINCE = (4, 4)
# Kafka Streams settings the streams protocol ignores (group configs on the broker there: streams.*).
STREAMS_PROTOCOL_IGNORES = ("acceptable.recovery.lag", "max.warmup.replicas", "probing.rebalance.interval.ms",
                            "session.timeout.ms", "heartbeat.interval.ms")
StreamsTopology = Literal["stateless", "stateful"]
ProcessingGuarantee = Literal["at_least_once", "exactly_once_v2"]
StreamsState = Literal["kept", "fresh"]


class StreamsSpec(BaseModel):
    """A Kafka Streams application instance of testbed's own (``testbed.members.java.streams``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    topology: StreamsTopology = Field(description="'stateless': records forwarded unchanged to the output topic; "
                                      "'stateful': a count per key in a persistent (RocksDB) store with its changelog, "
                                      "each new count to the output topic")
    num_standby_replicas: int = Field(default=0, ge=0, le=10, description="standby replicas of each stateful task "
                                      "(classic: the client's num.standby.replicas; streams protocol: the group's "
                                      "streams.num.standby.replicas, which testbed sets before the first instance starts)")
    processing_guarantee: ProcessingGuarantee = "at_least_once"
    state: StreamsState = Field(default="kept", description="'kept': each slot's state directory lives as long as "
                                "the run, so a bounced instance starts on the disk it left; 'fresh': every start on an "
                                "empty directory (a replacement on a new machine)")


RestartPolicyName = Literal["never", "on-failure"]
RESTART_POLICIES = ("never", "on-failure")


class RestartPolicy(BaseModel):
    """What the platform does when a member's program crashes, as a pod's ``restartPolicy`` or systemd's
    ``Restart=`` would: ``never``, or ``on-failure`` (the program ended by itself with a non-zero exit code or a
    signal the harness did not send) after a bounded exponential back-off (``backoff_s``, doubled each time, at
    most ``backoff_max_s``), at most ``limit`` times for one member (a bounce or scale-out starts a new
    count). Defaults are Kubernetes' shape with a test run's scale: 1 s, 2 s, 4 s, 8 s, 10 s (Kubernetes: 10 s
    doubling to 5 min), and a limit, so that a crash loop stays bounded in time."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    policy: RestartPolicyName = Field(description="never | on-failure")
    backoff_s: float = Field(default=1.0, ge=0, le=600, description="the wait before the first restart, seconds")
    backoff_max_s: float = Field(default=10.0, ge=0, le=600, description="the cap of the doubling back-off, seconds")
    limit: int = Field(default=5, ge=0, le=100, description="restarts of one member at most; then it stays down")

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value: object) -> object:
        """``restart: on-failure`` is ``restart: {policy: on-failure}`` with the default back-off and limit."""
        return {"policy": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _cap_not_below_start(self) -> "RestartPolicy":
        if self.backoff_max_s < self.backoff_s:
            raise SpecError(f"backoff_max_s: {self.backoff_max_s:g} is below backoff_s ({self.backoff_s:g}); the "
                            "back-off doubles from backoff_s up to backoff_max_s")
        return self

    @property
    def restarts(self) -> bool:
        return self.policy == "on-failure" and self.limit > 0

    def backoff_before(self, attempt: int) -> float:
        """The wait before restart number ``attempt`` (from 1): backoff_s doubled each time, capped."""
        return min(self.backoff_s * 2 ** max(attempt - 1, 0), self.backoff_max_s)


# A user's program is restarted on failure by default, as its platform would (a pod's restartPolicy defaults to
# Always); testbed's own runners never: their crash is testbed's defect, which ends the run as an error.
PROGRAM_RESTART = RestartPolicy(policy="on-failure")
RUNNER_RESTART = RestartPolicy(policy="never")


class SpecError(ValueError):
    """A spec that cannot work; the message names the field and the supported values.

    A ValueError so pydantic turns it into a ValidationError naming the field.
    """


def is_import_path(name: str) -> bool:
    """'pkg.mod:Class' names a custom kafka-python assignor class."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr and all(p.isidentifier() for p in module.split(".")) and attr.isidentifier())


def assignor_kind(name: str) -> Literal["eager", "cooperative", "custom"]:
    """The protocol a consumer with only this assignor runs; "custom" for an import path testbed does not know."""
    protocols = assignor_protocols(name, "kafka-python")
    if protocols is None:
        return "custom"
    return "cooperative" if "cooperative" in protocols else "eager"


def assignor_protocols(name: str, client: str) -> Protocols | None:
    """The rebalance protocols an assignor supports in this client; None for an unknown custom class."""
    if name in COOPERATIVE_ASSIGNORS:
        # Java's cooperative-sticky supports EAGER too (the double bounce); librdkafka's and kafka-python's do not.
        return BOTH_PROTOCOLS if client == "java" else COOPERATIVE_ONLY
    if name in EAGER_ASSIGNORS:
        return EAGER_ONLY
    return SEED_ASSIGNORS.get(name, JAVA_SEED_ASSIGNORS.get(name))


def java_seed_equivalent(name: str) -> str | None:
    """The Java class of a seed adapter's kafka-python import path (same protocol name and user data), if any."""
    module, _, cls = name.partition(":")
    java = f"{JAVA_SEED_PACKAGE}.{cls}"
    return java if module == SEED_ASSIGNOR_MODULE and java in JAVA_SEED_ASSIGNORS else None


def common_protocols(names: list[str], client: str) -> Protocols | None:
    """What every listed assignor supports (each client runs the highest of them: cooperative, else eager);
    None when nothing is known (no list, or only unknown custom classes)."""
    known = [p for p in (assignor_protocols(n, client) for n in names) if p is not None]
    if not known:
        return None
    return frozenset.intersection(*known)


class MemberSpec(BaseModel):
    """How a member consumes: client, group protocol, assignors and processing knobs."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)  # no endless processing or wait

    name: str | None = Field(default=None, description="spec name, written into the started event")
    client: ClientName
    client_version: str | None = Field(
        default=None, description="None: the version installed in the project venv (Java: DEFAULT_JAVA_VERSION)"
    )
    assignors: list[str] = Field(default_factory=list, description="classic strategies; empty = client default")
    group_protocol: GroupProtocol = "classic"
    streams: StreamsSpec | None = Field(
        default=None, description="a Kafka Streams application instance (client java) instead of a consumer: "
        "group_protocol 'classic' (the StreamsPartitionAssignor) or 'streams' (KIP-1071)")
    remote_assignor: Literal["uniform", "range"] | None = None
    static: bool = Field(default=False, description="group.instance.id derived from the member's slot")
    processing_ms_per_record: float = Field(default=0.0, ge=0)
    commit_mode: CommitMode = "auto"
    max_poll_records: int = Field(default=500, ge=1)
    session_timeout_ms: int | None = Field(default=None, ge=1)
    max_poll_interval_ms: int | None = Field(
        default=None, ge=1, description="max.poll.interval.ms; None: the client's default (300000)")
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    share_acknowledgement: ShareAcknowledgement = Field(
        default="implicit", description="group_protocol 'share': 'implicit' accepts a poll's records at the next "
        "poll; 'explicit' acknowledges each record (accept, or release/reject by release_every/reject_every) and "
        "commits the acknowledgements after each poll")
    release_every: int | None = Field(
        default=None, ge=1, description="explicit share acknowledgement: release every Nth record this member "
        "receives (the broker redelivers it, its delivery count one higher)")
    reject_every: int | None = Field(
        default=None, ge=1, description="explicit share acknowledgement: reject every Nth record this member "
        "receives (the broker archives it); a record both would pick is rejected")
    client_config: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="any setting of the member's client, passed through as given "
        "(librdkafka property, kafka-python keyword, Java consumer property); settings testbed owns are refused "
        "with the spec field to use instead (testbed.members.owned_settings)")
    handler: str | None = Field(
        default=None, description="'pkg.module:function' called with each polled batch (a list of "
        "testbed.members.batches.RecordView) in place of the simulated processing; the batch is processed when it "
        f"returns ({', '.join(HANDLER_CLIENTS)} consumer-group members)")
    handler_path: str | None = Field(
        default=None, description="a directory put first on the import path of the handler's member (relative: "
        "to the directory testbed runs in)")
    on_handler_error: OnHandlerError = Field(
        default="skip", description="when the handler raises: 'skip' the batch (its records are not processed) "
        "and go on, or 'stop' the member (it closes and leaves)")
    command: list[str] | None = Field(
        default=None, min_length=1, description="the user's own consumer program, run unchanged under testbed's "
        "instrumentation as this member (a Python program under testbed.instrument, a JVM program, client java, under "
        "testbed's Java agent): its command line, e.g. [.venv/bin/python, -m, myservice] or [java, -jar, app.jar]")
    cwd: str | None = Field(default=None, description="command members: the program's working directory")
    env: dict[str, str] = Field(
        default_factory=dict, description="command members: environment variables for the program; values may use "
        "{bootstrap_servers}, {group_id}, {topic:<scenario topic name>} and {run_dir} (the run's directory, e.g. for "
        "the program's store, kept with the run)")
    start_timeout_s: float = Field(
        default=60.0, gt=0, allow_inf_nan=False, description="command members: how long the program may take from "
        "its start to its first subscribe before the run ends as an error")
    restart: RestartPolicy | None = Field(
        default=None, description="command members: what happens when the program crashes: 'never', or "
        "'on-failure' ({policy: on-failure, backoff_s, backoff_max_s, limit}); default on-failure with 1 s back-off "
        "doubling to 10 s, at most 5 restarts of one member (testbed's own runners: never, and the field is refused)")

    @field_validator("assignors")
    @classmethod
    def _known_assignors(cls, value: list[str], info: ValidationInfo) -> list[str]:
        client = info.data.get("client")
        if client is None:
            return value
        supported = SUPPORTED_ASSIGNORS[client]
        for name in value:
            if name in supported:
                continue
            if client == "kafka-python" and is_import_path(name):
                continue
            if client == "aiokafka" and (name == "cooperative-sticky" or is_import_path(name)):
                raise SpecError(
                    f"assignors: aiokafka runs the eager protocol only (no cooperative rebalancing: "
                    "aio-libs/aiokafka#1126) and testbed's seed assignors are written to kafka-python 3's assignor "
                    f"API, not ported to aiokafka's; {name!r} is not available; supported: {', '.join(supported)}"
                )
            if client == "java" and java_seed_equivalent(name):
                raise SpecError(
                    f"assignors: {name!r} is the kafka-python adapter; a java member runs the same assignor (protocol "
                    f"name and user data) as {java_seed_equivalent(name)!r}"
                )
            if is_import_path(name):
                raise SpecError(
                    f"assignors: unknown assignor {name!r} for {client}: a custom Python assignor ('pkg.mod:Class') "
                    f"runs only in kafka-python members; supported for {client}: {', '.join(supported)}"
                )
            if client == "confluent-kafka" and name == "sticky":
                raise SpecError(
                    "assignors: confluent-kafka has no eager 'sticky' assignor (librdkafka only offers "
                    f"cooperative-sticky); supported: {', '.join(supported)}"
                )
            extra = " or an import path 'pkg.mod:Class'" if client == "kafka-python" else ""
            raise SpecError(f"assignors: unknown assignor {name!r} for {client}; supported: {', '.join(supported)}{extra}")
        # Each client refuses a list whose assignors share no protocol (kafka-python 3:
        # ConsumerCoordinator._validate_rebalance_protocol); Java's cooperative-sticky shares EAGER with all.
        if common_protocols(value, client) == frozenset():
            raise SpecError(
                f"assignors: {client} refuses eager and cooperative assignors in one list ({', '.join(value)}); "
                "use only eager (range, roundrobin, sticky) or only cooperative-sticky; "
                "the KIP-429 double bounce needs the java client, or kafka-python with a seed assignor and its "
                f"cooperative variant ({SEED_ASSIGNOR_MODULE}:Cooperative..., listed second)"
            )
        return value

    @field_validator("client_config")
    @classmethod
    def _no_owned_settings(cls, value: dict[str, str | int | float | bool],
                           info: ValidationInfo) -> dict[str, str | int | float | bool]:
        """A setting testbed decides is refused, never silently overridden: one line per key, with the field
        to use instead (testbed.members.owned_settings)."""
        client = info.data.get("client")
        if client is None:
            return value
        if lines := owned_setting_refusals(client, info.data.get("group_protocol") == "share", list(value),
                                           streams=info.data.get("streams") is not None):
            raise SpecError("\n".join(lines))
        return value

    @model_validator(mode="after")
    def _program_fields(self) -> "MemberSpec":
        """The user's own code: a handler in testbed's runner, or a whole program (``command``)."""
        if self.handler is None and (self.handler_path is not None or self.on_handler_error != "skip"):
            raise SpecError("handler_path, on_handler_error: only with a handler ('pkg.module:function')")
        if self.handler is not None:
            if not is_import_path(self.handler):
                raise SpecError(f"handler: {self.handler!r} is not 'pkg.module:function' (a module path, a colon, "
                                "a function name)")
            if self.client not in HANDLER_CLIENTS or self.group_protocol == "share":
                raise SpecError(f"handler: runs in the Python runners of consumer groups ({', '.join(HANDLER_CLIENTS)}); "
                                f"this spec is {self.client} ({self.group_protocol}): a Java member's processing is "
                                "VerifiableConsumer's own")
            if self.processing_ms_per_record:
                raise SpecError("processing_ms_per_record: the handler replaces the simulated processing; set one")
        if self.command is None:
            if self.cwd is not None or self.env:
                raise SpecError("cwd, env: only for command members (the user's own program, 'command: [...]')")
            if self.restart is not None:
                raise SpecError(f"restart: only for command members (the user's own program, 'command: [...]'); "
                                f"testbed's own {self.client} runner is never restarted: its crash is testbed's "
                                "defect and ends the run as an error")
            return self
        if self.client not in PROGRAM_CLIENTS:
            raise SpecError(f"client: a command member runs a program on {' or '.join(PROGRAM_CLIENTS)} (the clients "
                            f"testbed instruments); got {self.client!r}")
        owned = {
            "assignors": bool(self.assignors), "group_protocol": self.group_protocol != "classic",
            "remote_assignor": self.remote_assignor is not None, "static": self.static,
            "processing_ms_per_record": bool(self.processing_ms_per_record), "commit_mode": self.commit_mode != "auto",
            "max_poll_records": self.max_poll_records != 500, "session_timeout_ms": self.session_timeout_ms is not None,
            "max_poll_interval_ms": self.max_poll_interval_ms is not None,
            "auto_offset_reset": self.auto_offset_reset != "earliest", "client_config": bool(self.client_config),
            "handler": self.handler is not None,
        }
        if bad := [name for name, set_ in owned.items() if set_]:
            raise SpecError(f"{', '.join(bad)}: a command member runs the program's own settings and processing; set "
                            "them in the program (its configuration can read the environment: env: {NAME: value})")
        for key, value in self.env.items():
            for placeholder in env_placeholders(value):
                if placeholder not in ENV_PLACEHOLDERS and not placeholder.startswith(ENV_TOPIC_PLACEHOLDER):
                    raise SpecError(f"env.{key}: unknown placeholder {{{placeholder}}}; allowed: "
                                    + ", ".join(f"{{{p}}}" for p in (*ENV_PLACEHOLDERS, "topic:<scenario topic name>")))
        return self

    @property
    def is_command(self) -> bool:
        """A member that runs the user's own program (testbed instruments its client) instead of a runner."""
        return self.command is not None

    @property
    def restart_policy(self) -> RestartPolicy:
        """The restart policy in force: the spec's, else the default of its kind (PROGRAM_RESTART, RUNNER_RESTART)."""
        if self.restart is not None:
            return self.restart
        return PROGRAM_RESTART if self.is_command else RUNNER_RESTART

    @model_validator(mode="after")
    def _protocol_fits_client(self) -> "MemberSpec":
        if self.streams is not None or self.group_protocol == "streams":
            self._check_streams()
            return self
        if self.group_protocol == "share":
            self._check_share()
            return self
        if self.share_acknowledgement != "implicit" or self.release_every or self.reject_every:
            raise SpecError("share_acknowledgement, release_every, reject_every: only for group_protocol 'share' "
                            f"(share groups, KIP-932); this spec uses {self.group_protocol!r}")
        if self.group_protocol == "consumer":
            if not self.family.runs("consumer"):
                raise SpecError(
                    f"group_protocol: {self.client} supports only "
                    f"{', '.join(repr(p) for p in self.family.group_protocols)}; "
                    f"'consumer' (KIP-848) needs {needed_for('consumer')}"
                )
            if self.client == "confluent-kafka":
                if self.assignors:
                    raise SpecError(
                        "assignors: confluent-kafka with group_protocol 'consumer' rejects "
                        "partition.assignment.strategy; leave assignors empty and set remote_assignor "
                        f"({', '.join(REMOTE_ASSIGNORS)}) instead"
                    )
                if self.session_timeout_ms is not None:
                    raise SpecError(
                        "session_timeout_ms: confluent-kafka with group_protocol 'consumer' rejects "
                        "session.timeout.ms (the broker's group.consumer.session.timeout.ms applies); leave it unset"
                    )
        elif self.remote_assignor is not None:
            raise SpecError(
                "remote_assignor: only meaningful with group_protocol 'consumer'; "
                "with 'classic' use assignors instead"
            )
        session = self.session_timeout_ms or self.family.timeouts.session_timeout_ms
        if self.group_protocol == "classic" and self.max_poll_interval_ms is not None \
                and self.max_poll_interval_ms < session:
            raise SpecError(
                f"max_poll_interval_ms: {self.max_poll_interval_ms} is below the session timeout ({session} ms); the "
                "clients refuse that: set session_timeout_ms at or below max_poll_interval_ms")
        if self.client == "java":
            self._check_java()
        elif self.client_version is not None and self.client == "kafka-python":
            if _version_tuple(self.client_version) < (3,) and any(n in SEED_ASSIGNORS or n == "cooperative-sticky"
                                                                     for n in self.assignors):
                raise SpecError(
                    f"assignors: kafka-python {self.client_version} has no cooperative-sticky (added in 3.0) and "
                    "cannot run the seed assignors (kafka-python 3 API); supported before 3.0: range, roundrobin, sticky"
                )
        static_since = self.family.static_since  # () for every version, None for none
        if self.static and static_since is None:
            raise SpecError(f"static: {self.client} has no group_instance_id (static membership, KIP-345); "
                            "use static: false")
        if self.static and self.client_version is not None and _version_tuple(self.client_version) < static_since:
            raise SpecError(
                f"static: {self.client} {self.client_version} has no group_instance_id (static membership, "
                f"KIP-345, from {self.client} {dotted(static_since)}); use a later client_version or static: false")
        since = self.family.since("consumer") or ()
        if self.group_protocol == "consumer" and self.client_version is not None \
                and _version_tuple(self.client_version) < since:
            raise SpecError(
                f"client_version: {self.client} {self.client_version} has no GA group_protocol "
                f"'consumer'; use >= {dotted(_release(since))}"
            )
        return self

    def _check_share(self) -> None:
        """A share member (KIP-932): a client with a share consumer, and nothing of consumer groups."""
        since = self.family.since("share")
        if since is None:
            raise SpecError(f"group_protocol: {self.client} has no share consumer; 'share' (KIP-932) needs "
                            + needed_for("share"))
        version = self.client_version or self.family.default_version
        if version is not None and _version_tuple(version) < since:
            raise SpecError(f"client_version: {self.client} {version} has no share consumer; group_protocol 'share' "
                            f"needs {self.client} >= {dotted(since)}")
        if version is not None and not self.family.supports_series(version):
            raise SpecError(f"client_version: {self.client} runs kafka-clients {_series(self.family)}; "
                            f"got {version!r}")
        # What a share group decides on the broker, or has no meaning there: refused rather than ignored.
        unfit = {
            "assignors": bool(self.assignors), "remote_assignor": self.remote_assignor is not None,
            "static": self.static, "session_timeout_ms": self.session_timeout_ms is not None,
            "commit_mode": self.commit_mode != "auto", "auto_offset_reset": self.auto_offset_reset != "earliest",
        }
        if bad := [name for name, set_ in unfit.items() if set_]:
            raise SpecError(
                f"{', '.join(bad)}: not for group_protocol 'share': the broker assigns share partitions, has no "
                "static members, and the group's own settings (the scenario's share: record_lock_duration_ms, "
                "delivery_count_limit, auto_offset_reset, session_timeout_ms) govern locks, resets and sessions; "
                "a share member takes share_acknowledgement (implicit, explicit), release_every, reject_every, "
                "processing_ms_per_record, max_poll_records, max_poll_interval_ms")
        if (self.release_every or self.reject_every) and self.share_acknowledgement != "explicit":
            raise SpecError("release_every, reject_every: need share_acknowledgement 'explicit' (in 'implicit' mode "
                            "every record is accepted at the next poll)")

    def _check_streams(self) -> None:
        """A Kafka Streams instance: the Java client, the classic or the streams protocol, and none of the consumer
        runners' knobs (Streams polls, commits and assigns by its own rules)."""
        if self.streams is None:
            raise SpecError("group_protocol: 'streams' is Kafka Streams' rebalance protocol (KIP-1071), for a Kafka "
                            "Streams instance: add a streams: block (topology: stateless | stateful) and client: java")
        if self.family.streams is None:
            raise SpecError(f"streams: a Kafka Streams application runs on client "
                            f"{' or '.join(repr(n) for n in names(lambda f: f.streams is not None))} (kafka-streams); "
                            f"got {self.client!r}")
        version = self.java_version
        if not self.family.supports_streams_series(version):
            raise SpecError(f"client_version: {self.client} runs kafka-streams "
                            f"{_series(self.family, self.family.streams_series)}; got {version!r}")
        if self.group_protocol not in ("classic", "streams"):
            raise SpecError(f"group_protocol: a Kafka Streams instance runs 'classic' or 'streams' (KIP-1071); got "
                            f"{self.group_protocol!r}")
        unfit = {
            "assignors": bool(self.assignors), "remote_assignor": self.remote_assignor is not None,
            "commit_mode": self.commit_mode != "auto", "max_poll_records": self.max_poll_records != 500,
            "auto_offset_reset": self.auto_offset_reset != "earliest", "handler": self.handler is not None,
            "command": self.command is not None, "share_acknowledgement": self.share_acknowledgement != "implicit",
            "release_every": self.release_every is not None, "reject_every": self.reject_every is not None,
        }
        if bad := [name for name, set_ in unfit.items() if set_]:
            raise SpecError(f"{', '.join(bad)}: not for a Kafka Streams instance: Streams assigns tasks with its own "
                            "assignor, commits every commit.interval.ms and reads from the earliest offset; its own "
                            "settings go in client_config (e.g. commit.interval.ms, max.poll.records)")
        if self.group_protocol == "streams":
            if _version_tuple(version) < STREAMS_PROTOCOL_SINCE:
                raise SpecError(f"client_version: kafka-streams {version} has no production-ready group_protocol "
                                "'streams' (KIP-1071, from 4.2): use 4.2.0 or later, or group_protocol 'classic'")
            if self.static and _version_tuple(version) < STREAMS_PROTOCOL_STATIC_SINCE:
                raise SpecError(f"static: the streams protocol (KIP-1071) has static membership from kafka-streams 4.4 "
                                f"(with 4.4 brokers); got {version}: use client_version 4.4.0 or later, or "
                                "group_protocol 'classic' for a static Streams instance")
            if self.session_timeout_ms is not None:
                raise SpecError("session_timeout_ms: under group_protocol 'streams' the group's "
                                "streams.session.timeout.ms (a broker-side group config) applies; leave it unset")
            if ignored := [k for k in self.client_config if k in STREAMS_PROTOCOL_IGNORES]:
                raise SpecError("\n".join(
                    f"client_config.{k}: ignored under group_protocol 'streams' (KIP-1071 makes it a group config, "
                    "streams.*, on the broker); use group_protocol 'classic' to measure it" for k in ignored))

    def _check_java(self) -> None:
        version = self.java_version
        if self.is_command:
            # the program's own kafka-clients, under the agent (2.5 on): no VerifiableConsumer runs
            since = self.family.instrumented_since or ()
            if _version_tuple(version) < since:
                raise SpecError(f"client_version: testbed's Java agent instruments kafka-clients "
                                f"{'.'.join(map(str, since))} and later; got {version!r}")
            return
        if not self.family.supports_series(version):
            raise SpecError(f"client_version: java runs kafka-tools VerifiableConsumer {_series(self.family)}; "
                            f"got {version!r}")
        if self.commit_mode == "on_revoke":
            raise SpecError(
                "commit_mode: VerifiableConsumer commits either automatically ('auto') or after each "
                "batch ('sync'); 'on_revoke' is not supported for java"
            )
        if self.processing_ms_per_record:
            raise SpecError("processing_ms_per_record: VerifiableConsumer has no processing delay; use 0 for java")
        if self.group_protocol == "consumer" and self.assignors:
            raise SpecError(
                "assignors: the consumer protocol (KIP-848) assigns on the broker; leave assignors empty "
                f"and set remote_assignor ({', '.join(REMOTE_ASSIGNORS)})"
            )

    @property
    def is_share(self) -> bool:
        return self.group_protocol == "share"

    @property
    def commits_on_revoke(self) -> bool:
        """Whether the member commits what it processed when partitions are taken from it (and at its close)."""
        return self.commit_mode in ("on_revoke", "sync")

    @property
    def is_streams(self) -> bool:
        """A Kafka Streams application instance (``streams:``), whichever protocol it rebalances by."""
        return self.streams is not None

    def share_ack_type(self, nth: int) -> Literal["accept", "release", "reject"]:
        """How this member acknowledges the ``nth`` record it receives (from 1): reject, release, else accept."""
        if self.reject_every and nth % self.reject_every == 0:
            return "reject"
        if self.release_every and nth % self.release_every == 0:
            return "release"
        return "accept"

    @property
    def family(self) -> ClientFamily:
        """The declaration of this member's client (``testbed.clients``)."""
        return FAMILIES[self.client]

    @property
    def java_version(self) -> str:
        return self.client_version or DEFAULT_JAVA_VERSION

    @property
    def rebalance_protocol(self) -> Literal["eager", "cooperative", "consumer"] | None:
        """The protocol this member rebalances by: the consumer protocol (KIP-848), else the highest every listed
        assignor supports (cooperative, else eager); None for only custom classes testbed does not know."""
        if self.group_protocol == "consumer":
            return "consumer"
        if self.group_protocol == "share":
            return None  # share members do not rebalance partitions among themselves by a protocol of theirs
        if self.streams is not None:  # classic Streams rebalances cooperatively (since 2.4); KIP-1071 on the broker
            return "consumer" if self.group_protocol == "streams" else "cooperative"
        common = common_protocols(self.assignors, self.client)
        if common is None:
            return None
        return "cooperative" if "cooperative" in common else "eager"

    @property
    def is_cooperative(self) -> bool:
        """Whether this member rebalances incrementally: the consumer protocol, or a list whose assignors all
        support cooperative (a list that also holds an eager-only one runs eager, as in a double bounce's first
        bounce)."""
        return self.rebalance_protocol in ("cooperative", "consumer")


_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def env_placeholders(value: str) -> list[str]:
    """The ``{name}`` placeholders of a command member's env value ('{{' and '}}' are literal braces)."""
    return [m.group(1) for m in _PLACEHOLDER.finditer(value) if m.group(1) is not None]


def fill_env(env: dict[str, str], *, bootstrap_servers: str, group_id: str, topics: dict[str, str],
             run_dir: str = "") -> dict[str, str]:
    """A command member's env with its placeholders replaced; ``topics``: scenario topic name -> the run's name."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]  # '{{' -> '{', '}}' -> '}'
        if name == "bootstrap_servers":
            return bootstrap_servers
        if name == "group_id":
            return group_id
        if name == "run_dir":
            return run_dir
        if name.startswith(ENV_TOPIC_PLACEHOLDER) and name[len(ENV_TOPIC_PLACEHOLDER):] in topics:
            return topics[name[len(ENV_TOPIC_PLACEHOLDER):]]
        raise SpecError(f"env: unknown placeholder {{{name}}}; topics: {', '.join(sorted(topics))}")

    return {k: _PLACEHOLDER.sub(value, v) for k, v in env.items()}


def _series(declared: ClientFamily, series: tuple[str, ...] = ()) -> str:
    """'3.9.x, 4.x': the version series a family runs (``series``: these instead of its consumers')."""
    return ", ".join(s + "x" for s in series or declared.supported_series)


def _release(version: tuple[int, ...]) -> tuple[int, ...]:
    """(2, 12) -> (2, 12, 0): a version as its first release is named."""
    return version + (0,) * (3 - len(version))


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


__all__ = [
    "DEFAULT_JAVA_VERSION",
    "HOSTED_CLIENTS",
    "JAVA_SEED_ASSIGNORS",
    "MemberSpec",
    "PROGRAM_RESTART",
    "RESTART_POLICIES",
    "RUNNER_RESTART",
    "RestartPolicy",
    "SEED_ASSIGNORS",
    "SHARE_CLIENTS",
    "STREAMS_PROTOCOL_SINCE",
    "STREAMS_PROTOCOL_STATIC_SINCE",
    "StreamsSpec",
    "SUPPORTED_ASSIGNORS",
    "SpecError",
    "assignor_kind",
    "assignor_protocols",
    "env_placeholders",
    "fill_env",
    "common_protocols",
    "is_import_path",
    "java_seed_equivalent",
]
