"""Whether a client version has a wheel this interpreter installs: wheel tags, PyPI's answers, the cache; no network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.tags import compatible_tags, cpython_tags

from testbed.errors import ConfigError
from testbed.members import wheels
from testbed.members.spec import MemberSpec
from testbed.members.wheels import check_client_available, wheel_fits

# CPython 3.11 on glibc 2.36, x86_64 (Debian bookworm), whatever interpreter runs the tests.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(36, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64"]
CP311_LINUX = frozenset([*cpython_tags((3, 11), platforms=PLATFORMS),
                         *compatible_tags((3, 11), interpreter="cp311", platforms=PLATFORMS)])


@pytest.mark.parametrize(
    ("filename", "fits"),
    [
        ("confluent_kafka-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl", True),
        ("confluent_kafka-1.9.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", False),
        ("confluent_kafka-2.3.0-cp311-cp311-macosx_11_0_arm64.whl", False),
        ("kafka_python-2.0.2-py2.py3-none-any.whl", True),
        ("cryptography-42.0.0-cp39-abi3-manylinux_2_28_x86_64.whl", True),
        ("confluent-kafka-1.9.2.tar.gz", False),
        ("confluent_kafka-2.12.0-cp312-cp312-manylinux_2_28_x86_64.whl", False),
        ("confluent_kafka-2.12.0-cp311-cp311-musllinux_1_2_x86_64.whl", False),
        ("confluent_kafka-2.12.0-cp311-cp311-manylinux_2_28_aarch64.whl", False),
        ("confluent_kafka-9.0.0-cp311-cp311-manylinux_2_40_x86_64.whl", False),  # needs a newer glibc
        ("something-1.0-cp312-abi3-manylinux_2_28_x86_64.whl", False),  # abi3 from 3.12 on
        ("pure-1.0-py3-none-manylinux_2_17_x86_64.whl", True),
        ("not-a-wheel.whl", False),
    ],
)
def test_wheel_fits_by_its_tags(filename: str, fits: bool) -> None:
    assert wheel_fits(filename, CP311_LINUX) is fits


def test_by_default_the_tags_are_this_interpreters() -> None:
    assert wheel_fits("kafka_python-2.0.2-py2.py3-none-any.whl")
    assert not wheel_fits("confluent_kafka-2.3.0-cp311-cp311-win_amd64.whl")


def _cached(tmp_path: Path, client: str, version: str, files: list[str]) -> Path:
    path = tmp_path / "pypi-files" / f"{client}-{version}.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(files))
    return tmp_path


@pytest.fixture
def pypi(monkeypatch):
    """PyPI's answers by URL (None: 404); a URL not given fails the test."""
    answers: dict[str, dict | None] = {}

    def get_json(url: str, timeout_s: float) -> dict | None:
        assert url in answers, f"unexpected request {url}"
        return answers[url]

    monkeypatch.setattr(wheels, "_get_json", get_json)
    return answers


def test_version_without_wheel_is_refused_from_the_cached_answer(tmp_path: Path, pypi) -> None:
    cache = _cached(tmp_path, "confluent-kafka", "1.9.2",
                    ["confluent_kafka-1.9.2-cp310-cp310-manylinux_2_17_x86_64.whl", "confluent-kafka-1.9.2.tar.gz"])
    with pytest.raises(ConfigError, match="client_version: confluent-kafka 1.9.2 has no wheel"):
        check_client_available(MemberSpec(client="confluent-kafka", client_version="1.9.2"), cache_dir=cache,
                               tags=CP311_LINUX)


def test_version_with_wheel_passes_from_the_cached_answer(tmp_path: Path, pypi) -> None:
    cache = _cached(tmp_path, "confluent-kafka", "2.3.0", ["confluent_kafka-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl"])
    check_client_available(MemberSpec(client="confluent-kafka", client_version="2.3.0"), cache_dir=cache,
                           tags=CP311_LINUX)


def test_version_missing_from_pypi_is_refused_and_not_cached(tmp_path: Path, pypi) -> None:
    pypi["https://pypi.org/pypi/kafka-python/9.9.9/json"] = None
    pypi["https://pypi.org/pypi/kafka-python/json"] = {"releases": {"2.0.2": []}}
    with pytest.raises(ConfigError, match="kafka-python 9.9.9 does not exist on PyPI"):
        check_client_available(MemberSpec(client="kafka-python", client_version="9.9.9"), cache_dir=tmp_path)
    assert not (tmp_path / "pypi-files").exists()


def test_a_short_version_finds_the_release_published_with_zeros_and_is_cached(tmp_path: Path, pypi) -> None:
    pypi["https://pypi.org/pypi/confluent-kafka/2.3/json"] = None
    pypi["https://pypi.org/pypi/confluent-kafka/json"] = {"releases": {
        "2.2.0": [{"filename": "confluent_kafka-2.2.0-cp311-cp311-macosx_11_0_arm64.whl"}],
        "2.3.0": [{"filename": "confluent_kafka-2.3.0-cp311-cp311-manylinux_2_28_x86_64.whl"}],
        "not a version": []}}
    spec = MemberSpec(client="confluent-kafka", client_version="2.3")
    check_client_available(spec, cache_dir=tmp_path, tags=CP311_LINUX)
    pypi.clear()  # the second check reads the cache only
    check_client_available(spec, cache_dir=tmp_path, tags=CP311_LINUX)


def test_a_release_document_answers_without_the_project_document(tmp_path: Path, pypi) -> None:
    pypi["https://pypi.org/pypi/kafka-python/2.0.2/json"] = {
        "urls": [{"filename": "kafka_python-2.0.2-py2.py3-none-any.whl"}]}
    check_client_available(MemberSpec(client="kafka-python", client_version="2.0.2"), cache_dir=tmp_path)


def test_a_version_that_is_no_version_is_refused_before_asking(tmp_path: Path, pypi) -> None:
    with pytest.raises(ConfigError, match="'latest' is not a version number"):
        check_client_available(MemberSpec(client="kafka-python", client_version="latest"), cache_dir=tmp_path)


@pytest.mark.parametrize("spec", [MemberSpec(client="java", client_version="4.1.1"), MemberSpec(client="kafka-python")])
def test_java_and_the_project_venvs_own_version_need_no_answer(tmp_path: Path, pypi, spec: MemberSpec) -> None:
    check_client_available(spec, cache_dir=tmp_path)


def test_a_version_found_to_fit_is_not_asked_of_pypi_or_its_cache_again(tmp_path: Path, pypi) -> None:
    """`testbed validate` of a file with a pinned client: the second check needs neither PyPI nor the release's
    cached file names (nor, so, packaging to read them)."""
    spec = MemberSpec(client="kafka-python", client_version="2.0.2")
    cache = _cached(tmp_path, "kafka-python", "2.0.2", ["kafka_python-2.0.2-py2.py3-none-any.whl"])
    check_client_available(spec, cache_dir=cache)
    (cache / "pypi-files" / "kafka-python-2.0.2.json").unlink()  # no release files, and PyPI answers nothing
    check_client_available(spec, cache_dir=cache)
    missing = MemberSpec(client="kafka-python", client_version="2.0.3")
    pypi["https://pypi.org/pypi/kafka-python/2.0.3/json"] = None
    pypi["https://pypi.org/pypi/kafka-python/json"] = {"releases": {}}
    for _ in range(2):  # a version PyPI lacks is asked again each time: it may be published later
        with pytest.raises(ConfigError, match="does not exist on PyPI"):
            check_client_available(missing, cache_dir=cache)
