"""The steps a scenario file may list: one model a kind, each with the category of what it acts on.

``category`` groups the kinds for the checks that hold for a whole group (broker and network steps need a
cluster the testbed starts; a member step names a member the fleet has then).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Union, get_args

from pydantic import Field, field_validator, model_validator

from .base import MemberCount, ScenarioPart

StopMode = Literal["clean", "hard"]
StepCategory = Literal["wait", "fleet", "member", "broker", "network", "topic"]


class StepModel(ScenarioPart):
    category: ClassVar[StepCategory]


class WaitStable(StepModel):
    category: ClassVar[StepCategory] = "wait"
    kind: Literal["wait_stable"] = "wait_stable"
    members: int | None = Field(default=None, ge=0, description="default: every live member")
    timeout_s: float = Field(default=120, gt=0)


class Wait(StepModel):
    category: ClassVar[StepCategory] = "wait"
    kind: Literal["wait"] = "wait"
    seconds: float = Field(gt=0)


class RollingBounce(StepModel):
    category: ClassVar[StepCategory] = "fleet"
    kind: Literal["rolling_bounce"] = "rolling_bounce"
    to: str | None = Field(default=None, description="member spec to bounce into; default: the same spec")
    interval_s: float = Field(default=0, ge=0)
    mode: StopMode = "clean"
    wait_stable: bool = True
    stable_timeout_s: float = Field(default=120, gt=0)
    count: int | None = Field(default=None, ge=1, description="bounce only the first count live members; default: all")


class MemberStep(StepModel):
    category: ClassVar[StepCategory] = "member"
    member: str = Field(description="member id, e.g. m0")


def _whole_process() -> Any:
    return Field(default=False, description=(
        "required when the member shares its process (members_per_process > 1): it hits every member there"))


ShareMoment = Literal["holding_records", "acks_in_flight"]


def _when() -> Any:
    return Field(default=None, description=(
        "share members: act at that moment, by the member's history (waited for up to when_timeout_s): "
        "'holding_records' (records acquired and not yet acknowledged), 'acks_in_flight' (acknowledgements sent "
        "and not yet answered); None: at once"))


class Kill(MemberStep):
    kind: Literal["kill"] = "kill"
    whole_process: bool = _whole_process()
    when: ShareMoment | None = _when()
    when_timeout_s: float = Field(default=30, gt=0)


class StopMember(MemberStep):
    kind: Literal["stop"] = "stop"


class Pause(MemberStep):
    kind: Literal["pause"] = "pause"
    seconds: float | None = Field(default=None, gt=0, description="resume after this long; None: stay paused")
    whole_process: bool = _whole_process()
    when: ShareMoment | None = _when()
    when_timeout_s: float = Field(default=30, gt=0)


class Resume(MemberStep):
    kind: Literal["resume"] = "resume"


class Stall(MemberStep):
    """Stop the member's poll loop from polling while its client's threads (heartbeats) run on: a slow
    handler, which max.poll.interval.ms is there to catch (members of the client families whose runners have a poll
    loop of their own: ``stall`` in their declaration, testbed.clients)."""

    kind: Literal["stall"] = "stall"
    seconds: float | None = Field(default=None, gt=0, description="end the stall after this long; None: until unstall")


class Unstall(MemberStep):
    kind: Literal["unstall"] = "unstall"


class ScaleOut(MemberCount, StepModel):
    category: ClassVar[StepCategory] = "fleet"
    kind: Literal["scale_out"] = "scale_out"


class ScaleIn(StepModel):
    category: ClassVar[StepCategory] = "fleet"
    kind: Literal["scale_in"] = "scale_in"
    count: int = Field(ge=1)
    mode: StopMode = "clean"


COORDINATOR = "coordinator"
BrokerId = Annotated[int, Field(ge=1, le=3)]


class BrokerStep(StepModel):
    """A step on the cluster's brokers: one node (``BrokerNodeStep``), or several in turn."""

    category: ClassVar[StepCategory] = "broker"


class BrokerNodeStep(BrokerStep):
    broker: BrokerId | Literal["coordinator"] = Field(
        description="node id 1..3, or 'coordinator': the broker coordinating the run's group when the step "
                    "starts (for broker_start and broker_unpause: the one an earlier step took down as such)")


class BrokerKill(BrokerNodeStep):
    kind: Literal["broker_kill"] = "broker_kill"


class BrokerStop(BrokerNodeStep):
    kind: Literal["broker_stop"] = "broker_stop"


class BrokerStart(BrokerNodeStep):
    kind: Literal["broker_start"] = "broker_start"


class BrokerPause(BrokerNodeStep):
    """Freeze the broker's processes (docker pause): its connections stay open but nothing answers."""

    kind: Literal["broker_pause"] = "broker_pause"
    seconds: float | None = Field(default=None, gt=0, description="unpause after this long; None: stay paused")


class BrokerUnpause(BrokerNodeStep):
    kind: Literal["broker_unpause"] = "broker_unpause"


class BrokerRestart(BrokerNodeStep):
    kind: Literal["broker_restart"] = "broker_restart"
    mode: StopMode = "clean"


class BrokerRollingRestart(BrokerStep):
    kind: Literal["broker_rolling_restart"] = "broker_rolling_restart"
    mode: StopMode = "clean"


KAFKA_RELEASE = r"^\d+\.\d+\.\d+$"


def kafka_release(version: str) -> str:
    """``version`` if it has a Kafka release number's form (whether Maven Central serves it is asked before a run
    starts: ``testbed.brokers.versions``)."""
    if not re.match(KAFKA_RELEASE, version):
        raise ValueError(f"must be a Kafka release number like 4.3.1 (`testbed kafka-versions` lists them), "
                         f"got {version!r}")
    return version


class BrokerUpgrade(BrokerStep):
    """Replace brokers, one at a time, by Kafka ``to`` on the same data (KRaft metadata and logs), waiting
    until the cluster is ready after each (brokers of both versions serve meanwhile); then, with
    ``finalize``, raise the cluster's feature levels (metadata.version, group.version, ...) to the
    defaults of ``to``'s release, as ``kafka-features.sh upgrade --release-version`` does."""

    kind: Literal["broker_upgrade"] = "broker_upgrade"
    to: str = Field(description="the Kafka version to run, e.g. 4.3.1")
    brokers: list[BrokerId] | None = Field(default=None, min_length=1,
                                            description="node ids to upgrade, in this order; default: all")
    interval_s: float = Field(default=0, ge=0, description="time under load between one broker ready and the next")
    finalize: bool = Field(default=True, description="raise the feature levels once every broker runs `to`")

    @field_validator("to")
    @classmethod
    def _release(cls, to: str) -> str:
        return kafka_release(to)


class NetworkStep(StepModel):
    category: ClassVar[StepCategory] = "network"


def _network_target(member: str | None, broker: int | str | None) -> str | None:
    """How a network step names what it cuts or heals (None: nothing named, i.e. every cut)."""
    if member is not None:
        return f"member {member}"
    return f"broker {broker}" if broker is not None else None


class Partition(NetworkStep):
    """Cut a member or a broker off the network for a while (iptables on loopback; docs/faults.md).

    A member loses the brokers (all, or only its group's coordinator): its packets to them drop. A
    broker loses everyone: every packet to and from its client and controller ports drops, while its
    own connections out to the other brokers stay up. With ``loss`` each packet drops at random with
    that probability instead."""

    kind: Literal["partition"] = "partition"
    member: str | None = Field(default=None, description="member id whose packets to the brokers drop")
    broker: BrokerId | Literal["coordinator"] | None = Field(
        default=None, description="node id 1..3, or 'coordinator' (the run's group coordinator when the step starts)")
    brokers: Literal["all", "coordinator"] | None = Field(
        default=None, description="with member: the brokers it loses, all (default) or only the group's coordinator")
    loss: float | None = Field(default=None, gt=0, lt=1, description="drop each packet with this probability")
    seconds: float | None = Field(default=None, gt=0, description="heal after this long; None: until a heal step")
    whole_process: bool = _whole_process()

    @model_validator(mode="after")
    def _one_target(self) -> "Partition":
        if (self.member is None) == (self.broker is None):
            raise ValueError("partition: name exactly one of member (a member id) or broker (1..3 or 'coordinator')")
        if self.broker is not None and self.brokers is not None:
            raise ValueError("partition.brokers: only with member (which brokers the member loses)")
        return self

    @property
    def target(self) -> str:
        return _network_target(self.member, self.broker) or ""


class Latency(NetworkStep):
    """Delay every response of a broker to its clients by ``ms`` (+- ``jitter_ms``): a Toxiproxy in front of
    each broker's client listener, which the brokers advertise (docs/faults.md). Replication and the
    controller quorum are not delayed."""

    kind: Literal["latency"] = "latency"
    broker: BrokerId | Literal["coordinator"] = Field(
        description="node id 1..3, or 'coordinator' (the run's group coordinator when the step starts)")
    ms: int = Field(gt=0, le=120_000, description="added to every response")
    jitter_ms: int = Field(default=0, ge=0, description="each response's delay varies by up to this much")
    seconds: float | None = Field(default=None, gt=0, description="end after this long; None: until a heal step")

    @property
    def target(self) -> str:
        return _network_target(None, self.broker) or ""


class Heal(NetworkStep):
    """End a partition or latency made without ``seconds``: of that member or broker, or every one in place."""

    kind: Literal["heal"] = "heal"
    member: str | None = None
    broker: BrokerId | Literal["coordinator"] | None = None

    @model_validator(mode="after")
    def _at_most_one_target(self) -> "Heal":
        if self.member is not None and self.broker is not None:
            raise ValueError("heal: name a member, or a broker, or neither (every partition in place)")
        return self

    @property
    def target(self) -> str | None:
        return _network_target(self.member, self.broker)


class AddPartitions(StepModel):
    category: ClassVar[StepCategory] = "topic"
    kind: Literal["add_partitions"] = "add_partitions"
    topic: str
    total: int = Field(ge=2, description="the topic's new partition count")


class Drain(StepModel):
    category: ClassVar[StepCategory] = "wait"
    kind: Literal["drain"] = "drain"
    timeout_s: float = Field(default=120, gt=0)


Step = Annotated[
    Union[WaitStable, Wait, RollingBounce, Kill, StopMember, Pause, Resume, Stall, Unstall, ScaleOut, ScaleIn, BrokerKill,
          BrokerStop, BrokerStart, BrokerPause, BrokerUnpause, BrokerRestart, BrokerRollingRestart, BrokerUpgrade,
          Partition, Latency, Heal, AddPartitions, Drain],
    Field(discriminator="kind"),
]
STEP_MODELS: tuple[type[StepModel], ...] = get_args(get_args(Step)[0])


def kinds_of(category: StepCategory) -> tuple[str, ...]:
    """The step kinds of one category, as a file names them."""
    return tuple(model.model_fields["kind"].default for model in STEP_MODELS if model.category == category)
