"""Network faults on loopback: iptables rules that cut a member or a broker off, and nothing else.

Each cut is a set of DROP rules in the OUTPUT chain on ``lo`` (every loopback packet passes it),
labelled with an iptables comment naming the owning harness (pid and start time, as containers and
child processes are marked, ``testbed.children``) and the cut. ``NetworkFaults`` removes its rules
when it closes, also on Ctrl-C; rules whose owner is gone (a crashed run) are removed by the next
start and by ``testbed clean``, so a machine is never left partitioned.

What iptables can tell apart on loopback (docs/faults.md):
- a member, by the group id its process runs under (``--gid-owner``): the fleet starts each member of a
  run with member cuts under its own gid (``member_gid``), still as root, so it reads everything it did
  before; only its packets to the brokers' ports drop.
- a broker, by its ports: every packet to or from its client and controller ports drops, so no
  client and no other broker reaches it; its own connections out to the other brokers stay up
  (brokers share one uid in their containers), the "grey" failure in which the controller still
  sees a healthy broker that clients cannot reach.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..children import is_alive, owner_identity, owner_mark, parse_owner_mark
from ..errors import ConfigError, TestbedError
from ..history.events import Action
from ..history.harness import HarnessLog
from ..service import Service

log = logging.getLogger(__name__)

CHAIN = "OUTPUT"
TAG = "testbed-net"
MULTIPORT_MAX = 15  # iptables' multiport match takes at most 15 ports
_COMMENT = re.compile(r'--comment\s+"?' + TAG + r' owner=(\S+?) cut=([^"\s]+)"?')
GID_BASE = 1_000_000
GIDS_PER_RUN = 1_000


def member_gid(slot: int, owner_pid: int | None = None) -> int:
    """The gid a member in ``slot`` runs under when its run cuts members off: one per (harness, slot), above
    every gid a Debian system allocates, so that a rule matches that member's packets and nobody else's.
    A slot's replacements share it: a cut follows the slot, as a partition follows the host a restarted
    process comes back on."""
    if not 0 <= slot < GIDS_PER_RUN:
        raise ConfigError(f"a run with member network cuts has at most {GIDS_PER_RUN} member slots, got slot {slot}")
    pid = owner_identity()[0] if owner_pid is None else owner_pid
    return GID_BASE + (pid % 1_000_000) * GIDS_PER_RUN + slot


def unavailable() -> str | None:
    """Why network faults cannot be injected here, or None when they can."""
    if os.geteuid() != 0:
        return "network faults need root (iptables); run as root"
    if shutil.which("iptables") is None:
        return "network faults need iptables (Debian package 'iptables'; ./setup.sh installs it)"
    return None


CUT_ACTIONS = {"member": (Action.MEMBER_PARTITION, Action.MEMBER_HEAL),
               "broker": (Action.BROKER_PARTITION, Action.BROKER_HEAL)}


@dataclass(frozen=True)
class Cut:
    """Packets to drop: TCP on loopback to (``both_ways``: and from) ``ports``, only ``gid``'s if given,
    each with probability ``loss`` (None: all of them). ``name`` is the target as the history names it
    (member id, ``broker-<n>``); ``detail`` goes into the harness action."""

    name: str
    scope: Literal["member", "broker"]
    ports: tuple[int, ...]
    gid: int | None = None
    both_ways: bool = False
    loss: float | None = None
    detail: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # Where the packets leave: loopback here; None (any interface) for a member on another node, whose packets to
    # the brokers leave by whatever interface reaches them (its gid singles them out)
    interface: str | None = "lo"
    # Where the rules go: this machine's iptables, or the node a placed member runs on (testbed.placement)
    table: RuleTable | None = field(default=None, hash=False, compare=False)

    def __post_init__(self) -> None:
        if not self.ports or len(self.ports) > MULTIPORT_MAX:
            raise ConfigError(f"a cut names 1..{MULTIPORT_MAX} ports, got {len(self.ports)}")
        if self.loss is not None and not 0 < self.loss < 1:
            raise ConfigError(f"loss must be a probability between 0 and 1 (exclusive), got {self.loss}")
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise ConfigError(f"a cut's name must be letters, digits, '_', '.' or '-', got {self.name!r}")

    def rules(self, comment: str) -> list[list[str]]:
        """The rule specifications (without ``-A CHAIN``), one per direction."""
        ports = ",".join(str(p) for p in self.ports)
        owner = ["-m", "owner", "--gid-owner", str(self.gid)] if self.gid is not None else []
        loss = (["-m", "statistic", "--mode", "random", "--probability", f"{self.loss:.4f}"]
                if self.loss is not None else [])
        directions = ("--dports", "--sports") if self.both_ways else ("--dports",)
        interface = ["-o", self.interface] if self.interface else []
        return [[*interface, "-p", "tcp", *owner, "-m", "multiport", d, ports, *loss,
                 "-m", "comment", "--comment", comment, "-j", "DROP"] for d in directions]


class RuleTable(Protocol):
    """Where a cut's rules are inserted and deleted: ``iptables`` with these arguments, on some machine."""

    def iptables(self, *args: str) -> None: ...


def _iptables(*args: str) -> None:
    proc = subprocess.run(["iptables", "-w", "5", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TestbedError(f"iptables {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")


def _listed_rules() -> list[str]:
    """Our rules in the chain, as ``iptables -S`` prints them (``-A OUTPUT ...``)."""
    if shutil.which("iptables") is None or os.geteuid() != 0:
        return []
    proc = subprocess.run(["iptables", "-w", "5", "-S", CHAIN], capture_output=True, text=True)
    return [line for line in proc.stdout.splitlines() if TAG in line and line.startswith(f"-A {CHAIN} ")]


def _delete(listed: str) -> None:
    _iptables("-D", *shlex.split(listed)[1:])


def reap_leftover_rules(*, owner_pid: int | None = None) -> list[str]:
    """Remove the rules whose owning harness is gone (only ``owner_pid``'s, if given); returns a description
    of each one removed."""
    removed = []
    for line in _listed_rules():
        m = _COMMENT.search(line)
        owner = parse_owner_mark(m[1]) if m else None
        if owner is not None and is_alive(*owner):
            continue
        if owner_pid is not None and (owner is None or owner[0] != owner_pid):
            continue
        try:
            _delete(line)
            removed.append(f"iptables rule {m[2] if m else '?'} of owner {m[1] if m else '?'}")
        except TestbedError as exc:
            removed.append(f"iptables rule {line!r} (failed: {exc})")
    return removed


@dataclass
class NetworkFaults(Service):
    """The cuts a run has in place; ``heal`` removes one (or all), ``close`` all of them. Each cut and heal
    is written to ``harness`` (``member_partition``/``member_heal``, ``broker_partition``/``broker_heal``)
    before it is made, like every harness action."""

    harness: HarnessLog | None = None
    cuts: dict[str, tuple[Cut, list[list[str]]]] = field(default_factory=dict)  # name -> cut, its installed rules

    def start(self) -> None:
        why = unavailable()
        if why:
            raise ConfigError(why)
        reaped = reap_leftover_rules()
        if reaped:
            log.warning("removed network cuts an earlier run left: %s", ", ".join(reaped))

    def cut(self, cut: Cut) -> None:
        if cut.name in self.cuts:
            raise ConfigError(f"{cut.name} is already cut off; heal it first")
        rules = cut.rules(f"{TAG} owner={owner_mark()} cut={cut.name}")
        if self.harness is not None:
            self.harness.record(CUT_ACTIONS[cut.scope][0], cut.name, ports=list(cut.ports), loss=cut.loss,
                                both_ways=cut.both_ways, **({"gid": cut.gid} if cut.gid is not None else {}),
                                **cut.detail)
        installed: list[list[str]] = []
        self.cuts[cut.name] = (cut, installed)
        iptables = cut.table.iptables if cut.table is not None else _iptables
        for rule in rules:
            iptables("-I", CHAIN, *rule)  # first in the chain: ahead of any ACCEPT
            installed.append(rule)

    def heal(self, names: Sequence[str] | None = None) -> list[str]:
        """Remove the named cuts (default: every one); returns the names healed."""
        healed = []
        for name in list(self.cuts) if names is None else names:
            if name not in self.cuts:
                raise ConfigError(f"{name} is not cut off; cut off now: {', '.join(self.cuts) or 'nothing'}")
            cut, installed = self.cuts.pop(name)
            if self.harness is not None:
                self.harness.record(CUT_ACTIONS[cut.scope][1], name)
            iptables = cut.table.iptables if cut.table is not None else _iptables
            for rule in installed:
                try:
                    iptables("-D", CHAIN, *rule)
                except TestbedError as exc:  # keep healing the rest; a leftover is reaped at the next start
                    log.error("healing %s: %s", name, exc)
            healed.append(name)
        return healed

    def close(self) -> None:
        self.heal()
