"""Things built once into the cache (images, client installations, tools) and reused by every run: a lock per
thing, so that two runs needing the same one build it once and the second waits, then finds it."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager

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
