"""A run's report draws one section per group kind the analysis wrote (config.group_kinds), a kind within another
inside that one's section, and asks each present kind, and no other, for its figures."""

from __future__ import annotations

from dataclasses import replace

import pytest

from testbed.report import kind_reports


class Outputs:
    """What ``group_kinds`` reads of a run's outputs: its config and its metrics."""

    def __init__(self, kinds: list[str]) -> None:
        self.kinds = kinds

    def config(self) -> dict:
        return {"group_kinds": self.kinds}

    def metric_values(self) -> dict:
        return {}


@pytest.fixture
def asked(monkeypatch) -> list[str]:
    """The kinds whose figures were computed, in order."""
    calls: list[str] = []
    reports = tuple(replace(k, figures=lambda out, kind=k.kind: calls.append(kind) or {f"{kind}_figure": 1})
                    for k in kind_reports.KIND_REPORTS)
    monkeypatch.setattr(kind_reports, "KIND_REPORTS", reports)
    return calls


@pytest.mark.parametrize(("kinds", "sections", "figures"), [
    (["consumer"], [("consumer", [])], ["consumer"]),
    (["share"], [("share", [])], ["share"]),
    (["consumer", "share"], [("share", []), ("consumer", [])], ["share", "consumer"]),
    (["consumer", "streams"], [("consumer", ["streams"])], ["consumer", "streams"]),
    ([], [("consumer", [])], ["consumer"]),  # written before the kinds were: its members formed consumer groups
])
def test_each_kind_draws_its_section_and_only_its_figures(asked, kinds, sections, figures) -> None:
    drawn, values = kind_reports.kind_sections(Outputs(kinds))
    assert [(s["kind"], [w["kind"] for w in s["within"]]) for s in drawn] == sections
    assert asked == figures and set(values) == {f"{k}_figure" for k in figures}
    assert all(s["template"] == f"sections/{s['kind']}.html.j2" for s in drawn)
