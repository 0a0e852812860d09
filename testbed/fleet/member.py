"""A member as the fleet drives it, however it is housed: a process of its own (``MemberProcess``), one of
many in a member host process (``HostedMember``) or a process on a node of a Ray cluster (``PlacedMember``). The
fleet, its waits and its actions speak to this interface only; where housing matters (which members one signal
reaches, which process a replacement may join, where a network cut's rules go), the member says so itself."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..faults.network import RuleTable
from ..members.config import MemberConfig
from ..members.spec import MemberSpec
from .exits import ExitCallback, ExitCause
from .process import ProcessState


class MemberHost(Protocol):
    """A process that hosts many members (``HostProcess`` here, ``PlacedHost`` on a node of a Ray cluster)."""

    name: str
    log_path: Path

    def alive(self) -> bool: ...

    def close(self) -> None:
        """End it once its members are gone (they were stopped or killed): it exits by itself, else is killed."""
        ...


class Member(Protocol):
    config: MemberConfig
    state: ProcessState
    exit_code: int | None

    @property
    def member_id(self) -> str: ...

    @property
    def pid(self) -> int | None: ...

    @property
    def node_name(self) -> str | None:
        """The node of a Ray cluster it runs on (``testbed.placement``); None on this machine."""
        ...

    @property
    def network_rules(self) -> RuleTable | None:
        """Where a network cut of it puts its rules: None for this machine's iptables."""
        ...

    @property
    def host(self) -> MemberHost | None:
        """The host process it shares with other members; None for a process of its own."""
        ...

    @property
    def exit_info(self) -> dict[str, Any] | None:
        """The member_exit detail, once ended."""
        ...

    @property
    def ended_how(self) -> str | None:
        """How it ended, in words; None while it runs."""
        ...

    def cohosted(self) -> Sequence[Member]:
        """The live members a signal to its process reaches: itself, or every member of its host."""
        ...

    def start(self) -> None: ...

    def alive(self) -> bool: ...

    def request_stop(self) -> None: ...

    def stop(self, timeout_s: float = 30.0) -> int | None: ...

    def kill(self, cause: ExitCause = "killed") -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def stall(self, on: bool) -> None: ...

    def log_tail(self, lines: int) -> list[str]: ...

    def wait_exit_recorded(self, timeout_s: float = ...) -> bool: ...


class Placer(Protocol):
    """Puts the fleet's members somewhere other than this machine (``testbed.placement.cluster.RayPlacer``)."""

    def new_member(self, config: MemberConfig, config_path: Path, on_exit: ExitCallback, *, gid: int | None,
                   placement: object, host: MemberHost | None = None) -> Member:
        """A member, not yet started, for ``config``: in ``host`` (one ``new_host`` gave) where it has one, else
        in a process of its own at its slot's earlier member's place again, where that fits ``placement``."""
        ...

    def new_host(self, name: str, spec: MemberSpec, log_path: Path, *, gid: int | None,
                 placement: object) -> MemberHost:
        """A started, empty member host for members of ``spec``, where ``placement`` allows."""
        ...


__all__ = ["Member", "MemberHost", "Placer"]
