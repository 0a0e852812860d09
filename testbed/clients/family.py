"""What a client family is: one frozen declaration of what testbed can do with it.

A family is a Kafka client library testbed runs members of (confluent-kafka, kafka-python, aiokafka, java). Its
declaration names its runners, says what it can do (assignors, group protocols and since which version, static
membership, stall, many members per process, a user's handler, a user's program under the instrumentation), how
its versions are installed, the defaults it runs with and the settings testbed owns. Every layer reads these declarations instead of keeping
a table of its own: ``testbed.clients`` holds the registry.

Stdlib only, and it runs as Python 3.8: the runners import it inside per-client-version virtualenvs, and the
instrumentation inside a user's program's interpreter (which may not import ``testbed.members``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Literal, Mapping, Optional, Tuple

from .owned import Owner

Version = Tuple[int, ...]
# The group protocols a spec may name: the classic rebalance protocol, KIP-848's consumer protocol, KIP-932's share
# groups, KIP-1071's streams protocol (a Kafka Streams instance).
GROUP_PROTOCOLS = ("classic", "consumer", "share", "streams")


@dataclass(frozen=True)
class Runner:
    """A runner of testbed's own: the module started as ``python -m <module>``, and the member class a member host
    runs in a thread of its own (None: the runner is never hosted)."""

    module: str
    member_class: Optional[str] = None


@dataclass(frozen=True)
class Installation:
    """How one version of the family is installed: a pip distribution into a virtualenv of its own, or a Maven
    artifact (``group:artifact``) fetched onto a classpath."""

    kind: str  # "pip" | "maven"
    package: str


@dataclass(frozen=True)
class Timeouts:
    """What a classic-protocol member runs with when its spec sets nothing: the newest versions' session timeout,
    max.poll.interval and heartbeat setting; ``older_session_timeouts``: (first version that no longer has it,
    session timeout) for older ones, lowest bound first."""

    session_timeout_ms: int
    max_poll_interval_ms: int
    heartbeat_key: str
    heartbeat_interval_ms: int
    older_session_timeouts: Tuple[Tuple[Version, int], ...] = ()

    def session_timeout_for(self, version: Optional[Version]) -> int:
        """The default session timeout of this version (None: the newest, the one the project installs)."""
        if version is not None:
            for below, timeout in self.older_session_timeouts:
                if version < below:
                    return timeout
        return self.session_timeout_ms


@dataclass(frozen=True)
class ClientFamily:
    """One client family, declared once (``testbed/clients/<family>.py``)."""

    name: str
    member: Runner
    installation: Installation
    timeouts: Timeouts
    # Classic-protocol assignors it runs (by protocol name or class name); custom import paths are the spec's rule.
    classic_assignors: Tuple[str, ...]
    # Each group protocol it runs, with the first version that runs it (() for every version).
    group_protocols: Dict[str, Version] = field(default_factory=lambda: {"classic": ()})
    share: Optional[Runner] = None  # the share-group member's runner (group_protocols has "share")
    streams: Optional[Runner] = None  # a Kafka Streams instance's runner
    host: Optional[str] = None  # the member host's module: None, one member per process
    host_runs_share: bool = False  # the host also runs share members
    static_since: Optional[Version] = ()  # static membership (KIP-345) from this version; None: never
    stall: bool = False  # its runner has a poll loop of its own, which testbed can stall
    handler: bool = False  # its runner calls a user's handler with each batch
    instrumented_since: Optional[Version] = None  # a user's program on it runs under testbed's instrumentation from this version
    # What instruments a user's program: "python" (testbed.instrument, a sitecustomize) or "jvm" (testbed's Java agent,
    # testbed.members.java.agent, through JAVA_TOOL_OPTIONS).
    program_runtime: Literal["python", "jvm"] = "python"
    default_version: Optional[str] = None  # None: the version installed in the project's own venv
    supported_series: Tuple[str, ...] = ()  # version prefixes it runs ("4." ...); empty: any version
    # The kafka-streams versions its Streams runner runs (empty: supported_series): a Streams application needs no
    # kafka-tools, so teams' older Streams versions run where the consumer runner's VerifiableConsumer does not.
    streams_series: Tuple[str, ...] = ()
    # The settings testbed decides for its members, which a spec's client_config may not set: a consumer's, a share
    # consumer's (None: the consumer's), a Kafka Streams instance's.
    owned_settings: Mapping[str, Owner] = field(default_factory=dict)
    owned_share_settings: Optional[Mapping[str, Owner]] = None
    owned_streams_settings: Optional[Mapping[str, Owner]] = None

    @property
    def hosted(self) -> bool:
        return self.host is not None

    @property
    def program(self) -> bool:
        """Whether a user's own program on this client can run as a member (a command member)."""
        return self.instrumented_since is not None

    def since(self, group_protocol: str) -> Optional[Version]:
        """The first version that runs ``group_protocol`` (() for every version); None: it never does."""
        return self.group_protocols.get(group_protocol)

    def runs(self, group_protocol: str) -> bool:
        return group_protocol in self.group_protocols

    def supports_series(self, version: str) -> bool:
        return not self.supported_series or version.startswith(self.supported_series)

    def supports_streams_series(self, version: str) -> bool:
        series = self.streams_series or self.supported_series
        return not series or version.startswith(series)


def dotted(version: Version) -> str:
    """(2, 15) -> '2.15'."""
    return ".".join(map(str, version))


__all__ = ["ClientFamily", "GROUP_PROTOCOLS", "Installation", "Runner", "Timeouts", "Version", "dotted"]
