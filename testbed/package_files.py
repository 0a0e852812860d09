"""Where testbed's own files are, installed from a wheel or run from a checkout alike.

Every file testbed needs at run time (image recipes, Java sources, templates, the instrumentation's
sitecustomize) ships inside the ``testbed`` package, so its paths are taken from the package's own folder and never
from the folders around it: in site-packages the folder beside ``testbed`` is other packages' (``docker`` there is
the Docker SDK). The import root that gives child interpreters this package is made in the cache
(``testbed.cache.import_root``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
RECIPES_DIR = PACKAGE_DIR / "brokers" / "recipes"  # the image recipes; `docker/` in a checkout links here


def sources_fingerprint(folder: Path, *extra: str) -> str:
    """A name for the code under ``folder`` as it is now (each ``.py`` file's path, size and modification time,
    the folder itself, the package's version) and ``extra``: what was derived from that code and kept (metric
    names, a warm analysis process) is used again only while the code it came from is unchanged."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256(str(folder).encode())  # a checkout and an installed wheel sharing a cache
    try:
        digest.update(version("kafka-rebalance-testbed").encode())
    except PackageNotFoundError:  # run from a checkout that is not installed: the sources' stats say it all
        pass
    for path in sorted(folder.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    for item in extra:
        digest.update(f"{item}\0".encode())
    return digest.hexdigest()[:24]


def compile_package(folder: Path = PACKAGE_DIR) -> bool:
    """Write the bytecode of every module under ``folder`` that lacks it or whose source changed since; False where
    some could not be written (a read-only install, where pip wrote it at install time).

    Python writes it on import, except where ``PYTHONDONTWRITEBYTECODE`` is set (container images often set it, and
    so does the shell of this project's development machine): every process testbed starts (members, Locust's, the
    analysis service) then compiled the modules it imports again, about 0.3 s of CPU each (docs/figures.md)."""
    import compileall

    return compileall.compile_dir(folder, quiet=2)
