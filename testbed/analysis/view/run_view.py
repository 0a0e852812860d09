"""A saved run as the stages read it: its files, the members' events, the harness's actions and windows, every
member's ``started`` event, and which group kind each member belongs to; read once, then narrowed to one group
kind's members (:class:`GroupView`) for that kind's stages.

A group kind other than the default claims its members (share groups: ``share.split``); the default kind (the
consumer group) reads every member no other kind claims, so a member whose kind cannot be told is measured as
a consumer-group member, as it always was.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ...errors import TestbedError
from ...run.metrics import Windows
from ..spark.session import check_executors_see
from ..spark.location import is_remote
from ..spark.sources import RunFiles, input_bytes, locate, read_ack_lines, read_member_events
from ..spark.side_by_side import side_by_side
from .clocks import clock_note, member_offsets_ms
from .harness import NO_HARNESS_LOG, HarnessAction, exits, kills, not_aimed_at, read_actions, windows
from .host import HostLoad, read_host
from .lives import MemberEvent, MemberLife, member_lives
from .started import started_fields

T = TypeVar("T")
CONTROL_NAMES = ("started", "assigned", "revoked", "lost", "stopped")
CLOCK_STEP_MS = 1_000


@dataclass(frozen=True)
class MemberSummary:
    """One member's whole history in brief: its last event, how far its wall clock moved against its monotonic
    one (None: it wrote no monotonic time), the names of the events it wrote, and how many of its commits failed
    (``committed`` with an error) and how many ``error`` events it wrote."""

    last: int | None
    drift: int | None
    names: frozenset[str]
    failed_commits: int = 0
    errors: int = 0


@dataclass(frozen=True)
class InputSizes:
    """Bytes of the run's inputs: the acks (one line per record) are by far the largest; the queries over them
    run in a session of their own sized by them, the rest are sized by the other histories."""

    histories: int  # member, harness and broker logs
    acks: int


@dataclass
class RunView:
    """Everything of a run that more than one stage reads. ``claimed``: group kind -> the members it claims
    (the default kind's members are the others)."""

    spark: SparkSession
    root: str
    files: RunFiles
    sizes: InputSizes
    events: DataFrame  # every member's events, persisted until :meth:`release`
    actions: list[HarnessAction]
    windows: Windows
    control_rows: list[Row]  # every member's control events (CONTROL_NAMES), every field, in file order
    member_summary: dict[str, MemberSummary]  # each member's, the one query the views read their members' from
    host: HostLoad | None = None  # the host's samples; None: the run has none (the host is unknown)
    claimed: dict[str, frozenset[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _groups: dict[str | None, GroupView] = field(default_factory=dict, repr=False)

    def claim(self, claims: Mapping[str, Callable[[RunView], frozenset[str]]]) -> None:
        """Decide once which members each group kind claims."""
        self.claimed = {kind: claim(self) for kind, claim in claims.items()}
        self._groups.clear()

    def group(self, kind: str | None) -> GroupView:
        """The view of one kind's members; ``None``: the default kind (every member no kind claims)."""
        if kind not in self._groups:
            others = frozenset().union(*(m for k, m in self.claimed.items() if k != kind))
            self._groups[kind] = GroupView(self, self.claimed.get(kind) if kind is not None else None, others)
        return self._groups[kind]

    @cached_property
    def started_rows(self) -> dict[str, dict[str, Any]]:
        """Each member's (last) ``started`` event, every field."""
        return {r["member"]: r.asDict() for r in self.control_rows if r["name"] == "started"}

    @cached_property
    def last_event_ms(self) -> int:
        """Where a run without harness windows ends: the default kind's members' last event, else (no such
        member wrote one) any member's."""
        last = (max(self.group(None).last_ms.values(), default=None)
                or max((m.last for m in self.member_summary.values() if m.last is not None), default=None))
        if last is None:
            raise TestbedError(f"{self.root}: the member histories (history/members/*.jsonl) hold no event with a "
                               "name and a timestamp: nothing to analyse")
        return int(last)

    @property
    def cutoff_ms(self) -> int:
        """The end of the final drain, else of the run, else its last event: what is not done by then is not done."""
        return self.windows.drain_end_ms or self.windows.run_end_ms or self.last_event_ms

    def release(self) -> None:
        self.events.unpersist()


@dataclass
class GroupView:
    """One group kind's part of a run: its members' events, the harness's actions but those aimed at another
    kind's members, and (each queried once, when first read) its members' control events, ``started`` fields,
    last events and lives."""

    run: RunView
    members: frozenset[str] | None  # None: every member no other kind claims
    others: frozenset[str]
    _once: dict[str, Any] = field(default_factory=dict, repr=False)

    def once(self, key: str, compute: Callable[[], T]) -> T:
        """What ``compute`` gives, computed the first time ``key`` is asked for: a result the stages of two kinds
        read off this view (a kind within another reads the outer kind's view: ``group_kind``)."""
        if key not in self._once:
            self._once[key] = compute()
        return self._once[key]

    @cached_property
    def events(self) -> DataFrame:
        if self.members is not None:
            return self.run.events.filter(F.col("member").isin(*sorted(self.members)))
        if not self.others:
            return self.run.events
        return self.run.events.filter(~F.col("member").isin(*sorted(self.others)))

    @cached_property
    def actions(self) -> list[HarnessAction]:
        return not_aimed_at(self.run.actions, self.others)

    def has(self, member: str) -> bool:
        """Whether ``member`` is one of this kind's (the Python side of :attr:`events`' filter)."""
        return member in self.members if self.members is not None else member not in self.others

    @cached_property
    def _control(self) -> tuple[dict[str, list[MemberEvent]], dict[str, dict[str, Any]]]:
        """Each member's control events in file order, and its ``started`` fields (read with the run view)."""
        by_member: dict[str, list[MemberEvent]] = defaultdict(list)
        started: dict[str, dict[str, Any]] = {}
        for r in self.run.control_rows:
            if not self.has(r["member"]):
                continue
            parts = tuple((p[0], int(p[1])) for p in (r["partitions"] or []))
            by_member[r["member"]].append(MemberEvent(r["ts_ms"], r["member"], r["name"], parts, r["seq"]))
            if r["name"] == "started":
                started[r["member"]] = started_fields(r.asDict())
        return dict(by_member), started

    @property
    def control(self) -> dict[str, list[MemberEvent]]:
        return self._control[0]

    @property
    def started(self) -> dict[str, dict[str, Any]]:
        """Each member's STARTED_FIELDS (``view.started``)."""
        if self.members is not None:  # a claimed kind: its members' rows, read with the claim
            return {m: started_fields(row) for m, row in self.run.started_rows.items() if m in self.members}
        return self._control[1]

    @property
    def present(self) -> bool:
        """Whether the run has members of this kind; the default kind: some started member no kind claims, or
        no member of another kind."""
        if self.members is not None:
            return bool(self.members)
        return not self.others or bool(set(self.run.started_rows) - self.others)

    @property
    def group_ids(self) -> set[str]:
        return {s["group_id"] for s in self.started.values() if s.get("group_id")}

    @cached_property
    def summary(self) -> dict[str, MemberSummary]:
        """Each of this kind's members' :class:`MemberSummary`."""
        return {m: s for m, s in self.run.member_summary.items() if self.has(m)}

    @cached_property
    def last_ms(self) -> dict[str, int]:
        """Each member's last event."""
        return {m: s.last for m, s in self.summary.items()}

    @cached_property
    def lives(self) -> dict[str, MemberLife]:
        return member_lives(self.control, self.last_ms, kills(self.actions),
                            exits(self.actions), self.run.windows.run_end_ms)

    def clock_steps(self) -> list[str]:
        """A wall clock that stepped during the run shows as a change in (wall - monotonic) within one file."""
        return [f"member {m}: wall clock moved {int(s.drift)} ms against the monotonic clock during the "
                "run; its timings may be off by that much"
                for m, s in self.run.member_summary.items()
                if self.has(m) and s.drift is not None and s.drift > CLOCK_STEP_MS]

    def ack_lines(self, session: SparkSession) -> DataFrame | None:
        """The producers' ack lines of this kind's topics (every one when no other kind is in the run); None
        without an ack log."""
        if self.run.files.acks is None:
            return None
        acks = read_ack_lines(session, self.run.files.acks)
        if not self.others:
            return acks
        mine = self.members if self.members is not None else set(self.run.started_rows) - self.others
        topics = {t for m in mine for t in (self.run.started_rows[m].get("topics") or []) if m in self.run.started_rows}
        return acks.filter(F.col("topic").isin(*sorted(topics)))


def locate_inputs(spark: SparkSession, run_dir: str | Path) -> tuple[str, RunFiles, InputSizes]:
    """The run directory's inputs and their sizes (the Spark settings of the queries over them depend on them)."""
    root = str(run_dir).rstrip("/")
    # Spark qualifies a relative path against the driver's working directory; the executors' check needs it whole
    check_executors_see(spark, root if is_remote(root) else str(Path(root.removeprefix("file://")).resolve()))
    files = locate(spark, root)
    sizes = InputSizes(input_bytes(spark, [p for p in (files.members, files.harness, files.brokers) if p]),
                       input_bytes(spark, [files.acks]) if files.acks else 0)
    return root, files, sizes


def read_view(spark: SparkSession, root: str, files: RunFiles, sizes: InputSizes) -> RunView:
    """The small inputs read (the harness's actions, every member's control events: ``started``, assignments,
    ``stopped``); the member events are persisted for the stages' queries."""
    actions = read_actions(spark, files.harness)
    events = read_member_events(spark, files.members)
    if shifts := member_offsets_ms(actions):  # members on other machines: onto the harness's clock
        shift = F.create_map(*[F.lit(v) for member, ms in sorted(shifts.items()) for v in (member, ms)])
        events = events.withColumn("ts_ms", F.col("ts_ms") - F.coalesce(shift[F.col("member")], F.lit(0)))
    events = events.persist(StorageLevel.MEMORY_AND_DISK)
    control_rows, summary, host = side_by_side(
        spark, lambda: events.filter(F.col("name").isin(*CONTROL_NAMES)).collect(), lambda: member_summary(events),
        lambda: read_host(spark, files.host))
    notes = [] if files.harness else [NO_HARNESS_LOG]
    if note := clock_note(actions):
        notes.append(note)
    return RunView(spark, root, files, sizes, events, actions, windows(actions), control_rows, summary, host=host,
                   notes=notes)


def member_summary(events: DataFrame) -> dict[str, MemberSummary]:
    """Each member's last event, wall-clock drift, event names and failure counts, in one query."""
    offset = F.col("ts_ms") - F.col("mono_ms")
    named = F.col("name")
    rows = events.groupBy("member").agg(
        F.max("ts_ms").alias("last"), (F.max(offset) - F.min(offset)).alias("drift"),
        F.collect_set("name").alias("names"),
        F.count(F.when((named == "committed") & F.col("error").isNotNull(), True)).alias("failed_commits"),
        F.count(F.when(named == "error", True)).alias("errors")).collect()
    return {r["member"]: MemberSummary(r["last"], r["drift"], frozenset(r["names"]), r["failed_commits"],
                                       r["errors"]) for r in rows}
