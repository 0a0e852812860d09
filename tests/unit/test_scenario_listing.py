"""``testbed list``'s rows come from the cache while a file and the code are those they were made from, and are
made again when either changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testbed.scenario import listing, loader
from testbed.scenario.listing import ListedScenario, list_scenarios

pytestmark = pytest.mark.usefixtures("fresh_settings")

VALID = """
name: small
description: Two members. Then more words.
tags: [smoke]
topics: [{name: events, partitions: 2}]
members: {c: {client: confluent-kafka, assignors: [range]}}
fleet: [{spec: c, count: 2}]
matrix: {fleet.0.count: [2, 3]}
steps: [{wait_stable: {timeout_s: 30}}]
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TESTBED_CACHE_DIR", str(tmp_path / "cache"))
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "small.yaml").write_text(VALID)
    (scenarios / "broken.yaml").write_text(VALID.replace("count: 2}", "count: many}"))
    return scenarios


def test_a_second_listing_validates_nothing_and_shows_the_same(folder: Path, monkeypatch) -> None:
    first = list_scenarios(folder)
    assert first[1] == ListedScenario("small", ("smoke",), 2, "Two members")
    assert first[0].runs is None and first[0].name == str(folder / "broken.yaml") and "invalid scenario" in first[0].summary

    def no_validation(*_):
        raise AssertionError("validated again")

    monkeypatch.setattr(loader, "expand", no_validation)
    assert list_scenarios(folder) == first


def test_an_edited_file_or_other_code_is_validated_again(folder: Path, monkeypatch) -> None:
    list_scenarios(folder)
    small = folder / "small.yaml"
    small.write_text(VALID.replace("[2, 3]", "[2, 3, 4]"))
    assert list_scenarios(folder)[1].runs == 3, "the edited file's row"

    calls = []
    expand = loader.expand
    monkeypatch.setattr(loader, "expand", lambda path: calls.append(path.name) or expand(path))
    monkeypatch.setattr(listing, "sources_fingerprint", lambda *_: "other code")
    assert [row.runs for row in list_scenarios(folder)] == [None, 3]
    assert sorted(calls) == ["broken.yaml", "small.yaml"], "other code validates every file again"


def test_an_unwritable_cache_still_lists(folder: Path, monkeypatch) -> None:
    cache = Path(os.environ["TESTBED_CACHE_DIR"])
    cache.parent.mkdir(exist_ok=True)
    cache.write_text("a file where the cache folder would be")
    assert [row.runs for row in list_scenarios(folder)] == [None, 2]
