"""Things built once into the cache (images, client installations, tools, the import root of child interpreters)
and reused by every run: a lock per thing, so that two runs needing the same one build it once and the second
waits, then finds it."""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .package_files import PACKAGE_DIR
from .settings import settings


@contextmanager
def build_lock(name: str) -> Iterator[None]:
    lock_dir = settings().cache_dir / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@functools.cache
def import_root() -> Path:
    """A folder whose only importable entry is this ``testbed`` package, for the PYTHONPATH of the processes
    testbed starts in other interpreters (client virtualenvs of other versions, a user's own program).

    Not the package's parent folder: installed, that is this interpreter's whole site-packages, and first on a
    child's PYTHONPATH it would shadow the child's own packages (a member pinned to confluent-kafka 2.3.0 would
    import this venv's 2.16). One folder per package location, so a checkout and an installed wheel sharing the
    cache each import their own code."""
    digest = hashlib.sha256(str(PACKAGE_DIR).encode()).hexdigest()[:16]
    root = settings().cache_dir / "import-roots" / digest
    link = root / "testbed"
    if not (link.is_symlink() and link.resolve() == PACKAGE_DIR):
        root.mkdir(parents=True, exist_ok=True)
        # Made beside it and renamed over it: another run reading the link never sees it missing.
        staged = root / f".testbed-{os.getpid()}"
        staged.unlink(missing_ok=True)
        staged.symlink_to(PACKAGE_DIR, target_is_directory=True)
        os.replace(staged, link)
    return root


def pythonpath_with_testbed(existing: str | None = None) -> str:
    """``existing`` PYTHONPATH with the import root first."""
    return os.pathsep.join(p for p in (str(import_root()), existing) if p)


def remembered(path: Path) -> Any | None:
    """What ``remember`` kept at ``path``; None when nothing (or something unreadable) is there."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def remember(path: Path, value: Any) -> None:
    """Keep ``value`` (JSON) at ``path`` for later commands; a cache that cannot be written only makes them slower."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside it and renamed over it: a reader in another process never sees half a file.
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".tmp") as out:
            json.dump(value, out)
        os.replace(out.name, path)
    except OSError:
        pass
