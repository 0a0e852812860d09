"""Shared helpers of the fleet integration tests (this module holds no tests itself).

Two views of one group are compared: the brokers' (admin API, through ``Fleet.describe``) and the
members' own (their saved histories, replayed). A group is only called right when both agree.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from testbed.fleet import BounceOptions, Fleet
from testbed.history.events import Event, HarnessAction, Started
from testbed.run.layout import RunDir
from testbed.history.writer import read_events
from testbed.waits import wait_until

PARTITIONS = 12
MEMBERS = 3  # as many as show a group forming and a bounce handing partitions on; each more costs CI a process per group
# Short enough that a hung rebalance fails the test instead of eating CI time; 60 s was too short for Java and
# kafka-python groups on a CI machine whose JVMs started 3-4 times slower than usual, at a load of 15-33 on its
# 2 cores (2026-12-05; docs/testing.md, "The machine's condition").
STABLE_TIMEOUT_S = 90.0
BOUNCE = BounceOptions(stable_timeout_s=STABLE_TIMEOUT_S)

TopicPartition = tuple[str, int]


def member_events(run_dir: RunDir, member_id: str) -> list[Event]:
    path = run_dir.member_log(member_id)
    return list(read_events(path)) if path.exists() else []


def replay_ownership(events: Iterable[Event]) -> set[TopicPartition]:
    """What a member owns after its callbacks: assigned adds, revoked and lost take away.

    Holds for eager clients too: they revoke everything before each (full) assignment.
    """
    owned: set[TopicPartition] = set()
    for event in events:
        if event.name == "assigned":
            owned |= {tuple(tp) for tp in event.partitions}
        elif event.name in ("revoked", "lost"):
            owned -= {tuple(tp) for tp in event.partitions}
    return owned


def history_ownership(fleet: Fleet) -> dict[str, set[TopicPartition]]:
    """Each live member's replayed ownership, keyed by member id."""
    return {p.member_id: replay_ownership(member_events(fleet.run_dir, p.member_id)) for p in fleet.live()}


def ownership_problems(fleet: Fleet, partitions: set[TopicPartition]) -> list[str]:
    """Why the histories and the admin view do not (yet) show every partition owned once; [] if they do."""
    problems: list[str] = []
    from_history = history_ownership(fleet)
    owners: dict[TopicPartition, list[str]] = {}
    for member_id, owned in from_history.items():
        for tp in owned:
            owners.setdefault(tp, []).append(member_id)
    missing = sorted(partitions - set(owners))
    shared = {tp: who for tp, who in owners.items() if len(who) > 1}
    if missing:
        problems.append(f"history: no live owner of {missing}")
    if shared:
        problems.append(f"history: several owners {shared}")
    view = fleet.describe()
    from_admin = {m.client_id: set(m.partitions) for m in view.members}
    if from_admin != from_history:
        problems.append(f"admin view {_fmt(from_admin)} != history {_fmt(from_history)} (state {view.state})")
    return problems


def _fmt(owned: dict[str, set[TopicPartition]]) -> str:
    return "{" + ", ".join(f"{m}: {sorted(p for _, p in tps)}" for m, tps in sorted(owned.items())) + "}"


def wait_owned_once(fleet: Fleet, timeout_s: float = STABLE_TIMEOUT_S) -> None:
    """Stable (the fleet checks the admin view and its own incremental replay of the histories), then a full
    replay of every history agrees too: an independent check of the fleet's reading."""
    fleet.wait_stable(timeout_s=timeout_s)
    partitions = fleet.admin.partitions_of(fleet.topics)
    last: list[list[str]] = [[]]

    def agree() -> bool:
        last[0] = ownership_problems(fleet, partitions)
        return not last[0]

    wait_until(agree, timeout_s=timeout_s, interval_s=0.3,
               what=f"histories of group {fleet.group_id} matching the admin view, every partition owned once",
               diagnostics=lambda: "\n".join(last[0]) + "\n" + fleet.diagnostics())


def started_pids(run_dir: RunDir) -> dict[str, list[int]]:
    """Every process a member's history says it ran: the runner and, for Java, its JVM."""
    pids: dict[str, list[int]] = {}
    for path in sorted(run_dir.members.glob("*.jsonl")):
        for event in read_events(path):
            if isinstance(event, Started):
                extra = event.model_extra or {}
                pids[path.stem] = [event.pid] + ([extra["jvm_pid"]] if extra.get("jvm_pid") else [])
    return pids


def living(pids: Iterable[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


def assert_no_process_left(run_dir: RunDir) -> None:
    pids = started_pids(run_dir)
    assert pids, f"no member of {run_dir.root} wrote a started event"
    left = {m: living(p) for m, p in pids.items() if living(p)}
    assert not left, f"member processes still alive after the fleet closed: {left}"


def harness_actions(run_dir: RunDir) -> list[HarnessAction]:
    return [e for e in read_events(run_dir.harness_log) if isinstance(e, HarnessAction)]


@contextmanager
def fleet_on(bootstrap: str, topic: str, root: Path, label: str) -> Iterator[Fleet]:
    """A fleet on its own group and run dir; on exit, no member process may be left."""
    run_dir = RunDir(root / label)
    with Fleet(bootstrap, f"g-{label}-{uuid.uuid4().hex[:6]}", [topic], run_dir, stop_timeout_s=20) as fleet:
        yield fleet
    assert_no_process_left(run_dir)


@dataclass
class ConcurrentGroups:
    """Runs one scenario per group in threads (groups are independent) and reports every failure."""

    max_workers: int
    failures: dict[str, str] = field(default_factory=dict)

    def run(self, scenarios: dict[str, Callable[[], None]]) -> None:
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            futures = {label: pool.submit(fn) for label, fn in scenarios.items()}
            for label, future in futures.items():
                exc = future.exception()
                if exc is not None:
                    self.failures[label] = f"{type(exc).__name__}: {exc}"

    def assert_all_passed(self) -> None:
        assert not self.failures, "\n\n".join(f"[{k}] {v}" for k, v in self.failures.items())


