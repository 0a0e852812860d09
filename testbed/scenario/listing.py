"""What ``testbed list`` shows of each scenario file, remembered between commands.

Listing a folder validates every file in it (each matrix point: about 8 ms a file, 0.4 s for the 52 shipped ones on a
slow day), and the validation needs the scenario model's classes (0.2 s to build). A file's row depends on its bytes
and on testbed's code only (validation reads nothing else: the checks against Maven Central, PyPI and the members'
programs are ``testbed validate``'s), so it is kept per folder in the cache under the file's size and modification
time and a fingerprint of the package's sources: an edited file, or other code, is validated again.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from pathlib import Path

from ..cache import remember, remembered
from ..errors import TestbedError
from ..package_files import PACKAGE_DIR, sources_fingerprint
from ..settings import settings


@dataclass(frozen=True)
class ListedScenario:
    name: str  # the file's stem; its path when it is invalid
    tags: tuple[str, ...]
    runs: int | None  # its matrix points; None: the file is invalid
    summary: str  # the description's first sentence, or the first line of why the file is invalid


def _describe(path: Path) -> ListedScenario:
    from .loader import expand

    try:
        runs = expand(path)
    except TestbedError as exc:
        return ListedScenario(str(path), (), None, str(exc).splitlines()[0])
    scenario = runs[0].scenario
    return ListedScenario(path.stem, tuple(scenario.tags), len(runs), scenario.description.strip().split(". ")[0])


def _key(path: Path) -> str:
    stat = path.stat()
    return f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}"


def list_scenarios(folder: Path) -> list[ListedScenario]:
    """A row for each scenario file of ``folder`` (``*.yaml``, by name), from the cache where the file and the code
    are those it was made from."""
    files = sorted(folder.glob("*.yaml"))
    store = (settings().cache_dir / "scenario-listing"
             / f"{hashlib.sha256(str(folder.resolve()).encode()).hexdigest()[:24]}.json")
    code = sources_fingerprint(PACKAGE_DIR)
    kept = remembered(store)
    known = kept["files"] if isinstance(kept, dict) and kept.get("code") == code else {}
    rows: dict[str, dict] = {}
    for path in files:
        key = _key(path)
        row = known.get(key)
        rows[key] = row if isinstance(row, dict) else asdict(_describe(path))
    if rows != known:  # only this folder's files as they are now: the store never grows past them
        remember(store, {"code": code, "files": rows})
    return [ListedScenario(r["name"], tuple(r["tags"]), r["runs"], r["summary"]) for r in rows.values()]
