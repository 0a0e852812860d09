"""The ``rebalance_episodes`` table: each client-side episode beside the coordinator's view of it, with
its pause decomposed into detection, coordination, delivery and first record.

Per episode, four instants in order:
  t0  trigger: the latest member freeze (SIGSTOP) since the previous episode ended, else the
      episode's first client event (a join, leave, death or fencing: kills and crashes are deaths);
  t1  the coordinator's first reaction for the run's group (classic ``Preparing to rebalance``,
      consumer protocol ``Bumped group epoch``) from just before t0 to the episode's end;
  t2  the end of its coordination (the last ``Stabilized`` or target assignment in that window);
  t3  the last member's assignment callback (the episode's end);
  t4  the last resumption of a partition paused during the episode.
detection = t1 - t0, coordination = t2 - t1, delivery = t3 - t2, first record = t4 - t3, each
clamped at 0 (the broker can react before the client-visible trigger, and a partition can resume
before the last member is assigned) and null when an instant is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from ...history.events import Action
from ..intervals import percentile
from ..stage import Catalogue, Measured, Metric, Unknown
from .broker_logs import BrokerReaction
from .episodes import Episode
from .movement import Movement
from .ownership import Revocation

# A frozen, stalled or partitioned member leaves no event of its own: the group notices it only at its session
# timeout (frozen, partitioned) or its max.poll.interval (stalled). So do partitioned brokers' clients.
TRIGGER_FAULTS = (Action.MEMBER_PAUSE, Action.MEMBER_STALL, Action.MEMBER_PARTITION, Action.BROKER_PARTITION)
BROKER_LEAD_MS = 1_000  # the coordinator may log a join a little before the member's own event


def trigger_times(episodes: Sequence[Episode], harness: list[dict[str, Any]]) -> dict[int, int]:
    out: dict[int, int] = {}
    prev_end: int | None = None
    for ep in episodes:
        faults = [h["ts_ms"] for h in harness if h["kind"] in TRIGGER_FAULTS
                  and (prev_end is None or h["ts_ms"] > prev_end) and h["ts_ms"] <= ep.start_ms]
        out[ep.episode_id] = max(faults) if faults and not ep.teardown else ep.start_ms
        prev_end = ep.end_ms
    return out


def _clamped(a: int | None, b: int | None) -> int | None:
    return max(0, b - a) if a is not None and b is not None else None


def episode_frame(episodes: Sequence[Episode], revs: Sequence[Revocation], pauses: pd.DataFrame,
                  stop_the_world: pd.DataFrame, reactions: Sequence[BrokerReaction],
                  harness: list[dict[str, Any]], moves: dict[int, Movement]) -> pd.DataFrame:
    triggers = trigger_times(episodes, harness)
    real = pauses[pauses["kind"] == "pause"] if len(pauses) else pauses
    rows = []
    for ep in episodes:
        ep_revs = [r for r in revs if r.episode_id == ep.episode_id]
        ep_pauses = real[real["episode_id"] == ep.episode_id] if len(real) else real
        lengths = [float(v) for v in ep_pauses["pause_ms"]] if len(ep_pauses) else []
        ep_stw = stop_the_world[(stop_the_world["kind"] == "pause") & (stop_the_world["episode_id"] == ep.episode_id)] \
            if len(stop_the_world) else stop_the_world
        t0, t3 = triggers[ep.episode_id], ep.end_ms
        mine = [r for r in reactions if t0 - BROKER_LEAD_MS <= r.reaction_ms <= t3]
        t1 = mine[0].reaction_ms if mine else None
        done = [r.coordinated_ms for r in mine if r.coordinated_ms is not None]
        t2 = max(done) if done else None
        resumed = [int(e) for e, o in zip(ep_pauses["end_ms"], ep_pauses["open"]) if not o] if len(ep_pauses) else []
        t4 = max(resumed) if resumed else None
        broker_duration = t2 - t1 if t1 is not None and t2 is not None else None
        move = moves.get(ep.episode_id)
        rows.append({
            "episode_id": ep.episode_id, "start_ms": ep.start_ms, "end_ms": ep.end_ms, "duration_ms": ep.end_ms - ep.start_ms,
            "trigger": ep.trigger, "trigger_ms": t0, "teardown": ep.teardown, "during_bounce": ep.during_bounce,
            "settled": ep.settled, "formation": ep.formation, "members_assigned": len(ep.members_assigned),
            "revocations": sum(r.kind == "revoked" for r in ep_revs),
            "revocations_live": sum(r.category == "live" for r in ep_revs),
            "needless_revocations": sum(r.needless for r in ep_revs),
            "partitions_lost": sum(r.kind == "lost" for r in ep_revs),
            "partitions_paused": int(ep_pauses[["topic", "partition"]].drop_duplicates().shape[0]) if len(ep_pauses) else 0,
            "pause_p50_ms": percentile(lengths, 50), "pause_p99_ms": percentile(lengths, 99),
            "pause_max_ms": max(lengths) if lengths else None,
            "stop_the_world_ms": int(ep_stw["pause_ms"].sum()) if len(ep_stw) else 0,
            "broker_protocol": mine[0].protocol if mine else None,
            "broker_prepare_ms": t1, "broker_stabilized_ms": t2, "broker_duration_ms": broker_duration,
            "broker_generation": mine[-1].generation if mine else None, "broker_reactions": len(mine),
            "duration_difference_ms": (ep.end_ms - ep.start_ms) - broker_duration if broker_duration is not None else None,
            "detection_ms": _clamped(t0, t1), "coordination_ms": _clamped(t1, t2),
            "delivery_ms": _clamped(t2, t3), "first_record_ms": _clamped(t3, t4),
            "partitions_moved": move.moved if move else None, "partitions_moved_min": move.moved_min if move else None,
            "assignment_spread": move.spread if move else None,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


COLUMNS = [
    "episode_id", "start_ms", "end_ms", "duration_ms", "trigger", "trigger_ms", "teardown", "during_bounce", "settled",
    "formation", "members_assigned", "revocations", "revocations_live", "needless_revocations", "partitions_lost",
    "partitions_paused", "pause_p50_ms", "pause_p99_ms", "pause_max_ms", "stop_the_world_ms", "broker_protocol",
    "broker_prepare_ms", "broker_stabilized_ms", "broker_duration_ms", "broker_generation", "broker_reactions",
    "duration_difference_ms", "detection_ms", "coordination_ms", "delivery_ms", "first_record_ms",
    "partitions_moved", "partitions_moved_min", "assignment_spread",
]

SCHEMA = pa.schema(
    [("episode_id", pa.int64()), ("start_ms", pa.int64()), ("end_ms", pa.int64()), ("duration_ms", pa.int64()),
     ("trigger", pa.string()), ("trigger_ms", pa.int64()), ("teardown", pa.bool_()), ("during_bounce", pa.bool_()),
     ("settled", pa.bool_()), ("formation", pa.bool_()), ("members_assigned", pa.int64()), ("revocations", pa.int64()),
     ("revocations_live", pa.int64()), ("needless_revocations", pa.int64()), ("partitions_lost", pa.int64()),
     ("partitions_paused", pa.int64()), ("pause_p50_ms", pa.float64()), ("pause_p99_ms", pa.float64()),
     ("pause_max_ms", pa.float64()), ("stop_the_world_ms", pa.int64()), ("broker_protocol", pa.string()),
     ("broker_prepare_ms", pa.int64()), ("broker_stabilized_ms", pa.int64()), ("broker_duration_ms", pa.int64()),
     ("broker_generation", pa.int64()), ("broker_reactions", pa.int64()), ("duration_difference_ms", pa.int64()),
     ("detection_ms", pa.int64()), ("coordination_ms", pa.int64()), ("delivery_ms", pa.int64()),
     ("first_record_ms", pa.int64())]
)  # the movement columns stay in memory: they are the figures' source, the table keeps its documented columns


@dataclass
class Episodes:
    """The ``rebalance_episodes`` table (with the movement columns)."""

    frame: pd.DataFrame

    @property
    def live(self) -> pd.DataFrame:
        """Changes to a running group: neither its formation nor its teardown."""
        eps = self.frame
        return eps[~(eps["teardown"].astype(bool) | eps["formation"].astype(bool))] if len(eps) else eps

    def total(self, column: str) -> int:
        return int(self.live[column].sum()) if len(self.live) else 0

    def longest(self) -> int:
        return int(self.live["duration_ms"].max()) if len(self.live) else 0

    def unsettled(self) -> Unknown | None:
        """A running group's episode that never settled leaves the movement figures unknown (nothing to compare)."""
        live = self.live
        unsettled = live[live["partitions_moved"].isna()] if len(live) else live
        return Unknown(f"rebalance episode {int(unsettled['episode_id'].iloc[0])} never settled") if len(unsettled) else None

    def moved(self, column: str) -> int | Unknown:
        return self.unsettled() or self.total(column)

    def spread_max(self) -> int | None | Unknown:
        spreads = self.live["assignment_spread"].dropna() if len(self.live) else pd.Series(dtype=float)
        return self.unsettled() or (int(spreads.max()) if len(spreads) else None)


CATALOGUE: Catalogue[Episodes] = Catalogue(
    Metric("rebalance_episodes", "count", "rebalance episodes of the running group (not its formation or teardown): "
           "first trigger to the last member's assignment",
           lambda e: len(e.live), better="lower"),
    Metric("rebalance_total_ms", "ms", "sum of the rebalance episodes' durations",
           lambda e: e.total("duration_ms"), better="lower"),
    Metric("rebalance_max_ms", "ms", "longest rebalance episode", lambda e: e.longest()),
    Metric("partitions_moved", "partitions", "partitions whose owner after a rebalance episode differs from their "
           "owner before it, summed",
           lambda e: e.moved("partitions_moved")),
    Metric("partitions_moved_min", "partitions", "the fewest moves a balanced assignment needed in each episode, "
           "summed (a perfectly sticky assignor)",
           lambda e: e.moved("partitions_moved_min")),
    Metric("assignment_spread_max", "partitions", "largest max - min partitions per live member after any rebalance "
           "episode",
           lambda e: e.spread_max(),
           none="no rebalance of the running group left a live member"),
)


def measured(found: Episodes) -> Measured:
    return Measured(CATALOGUE.measure(found), {"rebalance_episodes": found.frame})
