"""Hangs: unexplained pauses of at least hang_ms, by the member that kept the partition."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.group.pauses import CATALOGUE, PAUSE_SCHEMA, Pauses
from testbed.analysis.settings import AnalysisSettings

COLUMNS = ["topic", "partition", "kind", "start_ms", "end_ms", "pause_ms", "open", "cause", "last_member"]


def _pauses(rows):
    """The table as the analysis writes it: the columns not given (contributing causes, the host) empty."""
    return pd.DataFrame(rows, columns=COLUMNS).reindex(columns=PAUSE_SCHEMA.names)


def pause_measures(pauses, stop_the_world, **settings):
    return CATALOGUE.measure(Pauses(pauses, stop_the_world, AnalysisSettings(**settings)))


def test_only_unexplained_pauses_past_the_bound_are_hangs():
    pauses = _pauses([
        ("t", 0, "pause", 0, 12_000, 12_000, False, "none", "A"),            # hang of A
        ("t", 1, "pause", 0, 11_000, 11_000, False, "none", "A"),            # A again: one member
        ("t", 2, "pause", 0, 9_999, 9_999, False, "none", "B"),              # under the bound
        ("t", 3, "pause", 0, 30_000, 30_000, False, "rebalance", "C"),       # explained
        ("t", 4, "pause", 0, 25_000, 25_000, False, "member_freeze", "C"),   # explained
        ("t", 5, "startup", 0, 40_000, 40_000, False, "startup", None),      # start-up is not a hang
    ])
    v = pause_measures(pauses, pauses.iloc[0:0], min_pause_ms=1000, hang_ms=10_000)
    assert (v["hung_members"].value, v["max_hang_ms"].value) == (1, 12_000)
    v = pause_measures(pauses, pauses.iloc[0:0], min_pause_ms=1000, hang_ms=5_000)
    assert (v["hung_members"].value, v["max_hang_ms"].value) == (2, 12_000)


def test_no_pause_is_a_measured_zero_hang():
    v = pause_measures(_pauses([]), _pauses([]), min_pause_ms=1000)
    assert (v["hung_members"].value, v["max_hang_ms"].value) == (0, 0)
    assert not v["hung_members"].unknown
