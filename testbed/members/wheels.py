"""Whether PyPI has a Python client version as a wheel this machine installs, asked once per version.

A member venv is built from the interpreter that runs testbed (``envs.python_for``) with
``pip install --only-binary :all:``, so a version is usable when one of its wheels carries a tag that
interpreter supports (``packaging.tags.sys_tags``). Versions compare as PEP 440 versions, so ``2.3``
finds the release ``2.3.0``. The release's file names are cached under the cache dir, and a version found
to fit is remembered for this interpreter (its cache tag, platform and C library), so that a later check of it
needs neither PyPI nor ``packaging`` (whose import is a tenth of a `testbed validate`); another interpreter
decides again.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import urllib.error
import urllib.request
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..settings import settings
from .spec import MemberSpec

if TYPE_CHECKING:
    from packaging.tags import Tag
    from packaging.version import Version

PYPI_RELEASE_URL = "https://pypi.org/pypi/{name}/{version}/json"
PYPI_PROJECT_URL = "https://pypi.org/pypi/{name}/json"


@lru_cache(maxsize=1)
def interpreter_tags() -> frozenset[Tag]:
    from packaging.tags import sys_tags

    return frozenset(sys_tags())


def wheel_fits(filename: str, tags: Iterable[Tag] | None = None) -> bool:
    """True if ``filename`` is a wheel with a tag of ``tags`` (default: this interpreter's)."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        _, _, _, wheel_tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:  # an sdist, or not a wheel's name at all
        return False
    return not wheel_tags.isdisjoint(frozenset(tags) if tags is not None else interpreter_tags())


def _get_json(url: str, timeout_s: float) -> dict | None:
    """The decoded answer, or None on 404."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise ConfigError(f"client_version: PyPI did not answer {url}: {exc}") from exc
    except urllib.error.URLError as exc:
        raise ConfigError(f"client_version: PyPI is unreachable ({exc.reason}); cannot check {url}") from exc


def release_files(client: str, version: Version, timeout_s: float) -> list[str] | None:
    """The file names of ``client==version`` on PyPI; None if PyPI has no such release."""
    release = _get_json(PYPI_RELEASE_URL.format(name=client, version=version), timeout_s)
    if release is not None:
        return [f.get("filename", "") for f in release.get("urls") or []]
    # Some PyPI mirrors serve only the project document; its 'releases' has every version's files,
    # under the version as it was published (2.3.0 for a request of 2.3).
    releases = (_get_json(PYPI_PROJECT_URL.format(name=client), timeout_s) or {}).get("releases") or {}
    for published, files in releases.items():
        if _version_or_none(published) == version:
            return [f.get("filename", "") for f in files]
    return None


def _version_or_none(text: str) -> Version | None:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except InvalidVersion:
        return None


def check_client_available(spec: MemberSpec, *, cache_dir: Path | None = None, timeout_s: float = 10.0,
                           tags: Iterable[Tag] | None = None) -> None:
    """Refuse a Python client version that PyPI does not have as a wheel for this interpreter.

    Network is used once per (client, version); the release's files are cached under ``cache_dir/pypi-files``.
    """
    if spec.client == "java" or spec.client_version is None:
        return
    root = (cache_dir or settings().cache_dir) / "pypi-files"
    # A wheel's manylinux tag also depends on the C library: a cache shared with another machine decides again.
    libc = (os.confstr("CS_GNU_LIBC_VERSION") or "libc").replace(" ", "")
    interpreter = f"{sys.implementation.cache_tag}-{sysconfig.get_platform()}-{libc}"
    fits = root / "fits" / f"{spec.client}-{spec.client_version.replace('/', '_')}-{interpreter}"
    if tags is None and fits.exists():
        return
    version = _version_or_none(spec.client_version)
    if version is None:
        raise ConfigError(f"client_version: {spec.client_version!r} is not a version number (PEP 440), e.g. 2.3.0")
    cache = root / f"{spec.client}-{version}.json"
    if cache.exists():
        files = json.loads(cache.read_text())
    else:
        files = release_files(spec.client, version, timeout_s)
        if files is not None:  # a missing version may be published later: ask again next time
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps(files))
    if files is None:
        raise ConfigError(f"client_version: {spec.client} {spec.client_version} does not exist on PyPI")
    if not any(wheel_fits(name, tags) for name in files):
        from packaging.tags import sys_tags

        tag = next(iter(sys_tags()))
        raise ConfigError(
            f"client_version: {spec.client} {spec.client_version} has no wheel for this Python "
            f"({tag.interpreter}, {tag.platform}); confluent-kafka has CPython 3.11 wheels from 2.0.2 on"
        )
    if tags is None:
        fits.parent.mkdir(parents=True, exist_ok=True)
        fits.touch()
