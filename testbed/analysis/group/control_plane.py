"""The control-plane stage: from the members' callbacks and lives to ownership intervals (ended at a stalled
client's give-up), duplicate ownership, rebalance episodes and revocations; their tables and figures.

Pure Python over the (small) control events of the consumer group's members (``view.run_view.GroupView``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property

import pandas as pd
import pyarrow as pa

from ..intervals import OwnershipInterval, SharedSpan
from ..settings import AnalysisSettings
from ..stage import Catalogue, Measured, Metric
from ..view.harness import stable_at_ms
from ..view.lives import MemberLife
from ..view.run_view import GroupView
from . import stalls
from .episodes import Episode, rebalance_episodes
from .ownership import Revocation, duplicate_ownership, ownership_intervals, revocations

TP = tuple[str, int]
SCHEMAS: dict[str, pa.Schema] = {
    "ownership_intervals": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("member", pa.string()), ("start_ms", pa.int64()),
         ("end_ms", pa.int64()), ("duration_ms", pa.int64()), ("end_reason", pa.string())]
    ),
    "revocations": pa.schema(
        [("ts_ms", pa.int64()), ("member", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
         ("kind", pa.string()), ("category", pa.string()), ("needless", pa.bool_()), ("episode_id", pa.int64()),
         ("member_pause_ms", pa.int64())]
    ),
    "duplicate_ownership": pa.schema(
        [("topic", pa.string()), ("partition", pa.int32()), ("start_ms", pa.int64()), ("end_ms", pa.int64()),
         ("duration_ms", pa.int64()), ("members", pa.string()), ("within_clock_uncertainty", pa.bool_())]
    ),
}


@dataclass
class ControlPlane:
    """What the members' callbacks say: who owned what when, the episodes, the revocations."""

    lives: dict[str, MemberLife]
    intervals: list[OwnershipInterval]
    shared: dict[TP, list[SharedSpan]]
    episodes: list[Episode]
    revocations: list[Revocation]
    joined: dict[str, int]  # member -> its first assignment

    @cached_property
    def tables(self) -> dict[str, pd.DataFrame]:
        intervals = pd.DataFrame([{**asdict(iv), "duration_ms": iv.duration_ms} for iv in self.intervals],
                                 columns=SCHEMAS["ownership_intervals"].names)
        shared = pd.DataFrame([{"topic": tp[0], "partition": tp[1], "start_ms": s.start, "end_ms": s.end,
                                "duration_ms": s.length, "members": ",".join(sorted(s.members))}
                               for tp, spans in sorted(self.shared.items()) for s in spans],
                              columns=SCHEMAS["duplicate_ownership"].names)
        revs = pd.DataFrame([asdict(r) for r in self.revocations], columns=SCHEMAS["revocations"].names)
        return {"ownership_intervals": intervals, "duplicate_ownership": shared, "revocations": revs}

    @property
    def shared_table(self) -> pd.DataFrame:
        return self.tables["duplicate_ownership"]

    @property
    def revocation_table(self) -> pd.DataFrame:
        return self.tables["revocations"]

    def count_revocations(self, column: str, value: str) -> int:
        return int((self.revocation_table[column] == value).sum())

    @property
    def member_pauses(self) -> pd.Series:
        """Each member's pause between a revocation and its next assignment (once per callback)."""
        revs = self.revocation_table
        return revs.drop_duplicates(["ts_ms", "member"])["member_pause_ms"].dropna() if len(revs) else pd.Series(dtype=float)


CATALOGUE: Catalogue[ControlPlane] = Catalogue(
    Metric("partitions", "count", "distinct partitions ever assigned",
           lambda c: len({(iv.topic, iv.partition) for iv in c.intervals})),
    Metric("duplicate_ownership_ms", "ms", "total time, summed over partitions, during which ≥2 members each held the "
           "same partition",
           lambda c: int(c.shared_table["duration_ms"].sum()), better="lower"),
    Metric("duplicate_ownership_episodes", "count", "maximal spans (per partition) of duplicate ownership",
           lambda c: len(c.shared_table)),
    Metric("duplicate_ownership_longest_ms", "ms", "longest span of duplicate ownership",
           lambda c: int(c.shared_table["duration_ms"].max()) if len(c.shared_table) else 0),
    Metric("revocations_live", "partitions", "partitions taken by a revoke callback from members that stay alive "
           "(assigned again later, never stop, or keep other partitions after the revoke)",
           lambda c: c.count_revocations("category", "live"), better="lower"),
    Metric("revocations_shutdown", "partitions", "partitions revoked from a member that then stops without a new "
           "assignment and holds no other partition after the revoke",
           lambda c: c.count_revocations("category", "shutdown")),
    Metric("needless_revocations", "partitions", "revoked from m and given back to m in the same rebalance episode, "
           "nobody else owning it meanwhile",
           lambda c: int(c.revocation_table["needless"].astype(bool).sum()), better="lower"),
    Metric("partitions_lost", "partitions", "partitions taken by a `lost` callback",
           lambda c: c.count_revocations("kind", "lost")),
    Metric("member_pause_total_ms", "ms", "sum over live members' revocations: from the revoke to the member's next "
           "assignment",
           lambda c: int(c.member_pauses.sum())),
    Metric("max_member_pause_ms", "ms", "longest member pause: from a live member's revoke to its next assignment",
           lambda c: int(c.member_pauses.max()) if len(c.member_pauses) else 0),
)


def control_plane(view: GroupView, settings: AnalysisSettings) -> ControlPlane:
    run, lives, by_member = view.run, view.lives, view.control
    intervals = [iv for m, evs in by_member.items() for iv in ownership_intervals(evs, lives[m])]
    stall_end = run.windows.run_end_ms or run.last_event_ms
    intervals = stalls.end_at_give_ups(intervals, stalls.client_give_ups(view.actions, stall_end))
    windows = run.windows
    teardown_after = windows.drain_end_ms if windows.drain_end_ms is not None else windows.run_end_ms
    events = [e for evs in by_member.values() for e in evs]
    episodes = rebalance_episodes(events, lives, gap_ms=settings.episode_gap_ms, teardown_after_ms=teardown_after,
                                  bounce_windows=windows.bounces, stable_at_ms=stable_at_ms(view.actions))
    joined = {m: min(e.ts for e in evs if e.name == "assigned") for m, evs in by_member.items()
              if any(e.name == "assigned" for e in evs)}
    return ControlPlane(lives, intervals, duplicate_ownership(intervals), episodes,
                        revocations(by_member, lives, intervals, episodes), joined)


def measured(found: ControlPlane) -> Measured:
    return Measured(CATALOGUE.measure(found), dict(found.tables))
