"""Where an analysis service lives: a private folder per version of the code and environment it analyses with.

A service runs the analysis code it was started from, with the settings (``TESTBED_*``) and interpreter of the
process that started it. A client finds the one that would analyse exactly as it would itself: the folder's name is
a fingerprint of the package's sources, the interpreter and the environment that shapes the analysis, so an edited
checkout, another virtualenv or another Spark setting gets a service of its own, never an old one. The folder is
in the temp directory (a Unix socket's path has a 108-byte limit a deep cache directory can exceed) and only its
user may enter it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ...children import OWNER_ENV, is_alive
from ...package_files import PACKAGE_DIR, sources_fingerprint
from ...settings import RUN_ONLY_SETTINGS, env_name

# Marks that name who started a process, not how it analyses: a run and the pytest worker beside it share a service.
SESSION_ENV = "TESTBED_PYTEST_SESSION"
_NOT_SHAPING = {OWNER_ENV, SESSION_ENV, *(env_name(name) for name in RUN_ONLY_SETTINGS)}
# Not SPARK_* or PYSPARK_* at large: PySpark sets some in the process that starts a session (SPARK_LOCAL_IP,
# SPARK_BUFFER_SIZE, PYSPARK_PYTHON...), which would part a pytest worker from the runs it starts.
_SHAPING = {"JAVA_HOME", "SPARK_HOME", "SPARK_CONF_DIR", "HADOOP_CONF_DIR"}


def _shaping(environment: dict[str, str]) -> list[str]:
    return sorted(f"{k}={v}" for k, v in environment.items()
                  if (k.startswith("TESTBED_") or k in _SHAPING) and k not in _NOT_SHAPING)


def services_root() -> Path:
    return Path(tempfile.gettempdir()) / f"testbed-analysis-{os.getuid()}"


@dataclass(frozen=True)
class ServiceState:
    """What a running service says of itself, in its folder's ``state.json`` (written once it listens)."""

    pid: int
    started: str  # the process's start time: with the pid, it names the process even after the pid is reused
    authkey: str  # hex; the folder is the user's alone, and the key keeps anything else from talking to it
    session: str | None  # the pytest session that started it (which ends it), None for a run's
    idle_s: float

    def alive(self) -> bool:
        return is_alive(self.pid, self.started)


@dataclass(frozen=True)
class ServicePlace:
    folder: Path
    # The environment the fingerprint was taken of, which a service started here gets: never another one (a
    # variable set meanwhile by another thread, say) under this folder's name.
    environment: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def socket(self) -> Path:
        return self.folder / "socket"

    @property
    def state_file(self) -> Path:
        return self.folder / "state.json"

    @property
    def log(self) -> Path:
        return self.folder / "service.log"

    @property
    def previous_log(self) -> Path:
        """The log of the service before this one, when it did not end by itself (killed)."""
        return self.folder / "service.previous.log"

    @property
    def spark_log(self) -> Path:
        return self.folder / "spark.log"

    @property
    def lock_name(self) -> str:
        return f"analysis-service-{self.folder.name}"

    def state(self) -> ServiceState | None:
        """The service's own word, only from a folder no other user could have written (its key and socket are
        trusted with pickles)."""
        if not _private(self.folder.parent) or not _private(self.folder):
            return None
        try:
            return ServiceState(**json.loads(self.state_file.read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def write_state(self, state: ServiceState) -> None:
        """Written beside it and renamed over it, readable by its user only: a client never reads half a key."""
        partial = self.state_file.with_suffix(".tmp")
        partial.write_text(json.dumps(asdict(state)))
        partial.chmod(0o600)
        os.replace(partial, self.state_file)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
        except OSError:
            return "(no log)"


def current_place() -> ServicePlace:
    """The folder of the service that analyses as this process would."""
    environment = dict(os.environ)
    fingerprint = sources_fingerprint(PACKAGE_DIR, os.path.realpath(sys.executable), *_shaping(environment))
    return ServicePlace(services_root() / fingerprint, environment)


def every_place() -> list[ServicePlace]:
    """Every service folder of this user, whatever code it was started from (``testbed clean`` ends them all)."""
    root = services_root()
    return sorted((ServicePlace(p) for p in root.iterdir() if p.is_dir()), key=lambda p: p.folder) if root.is_dir() else []


def _private(folder: Path) -> bool:
    """Owned by this user and closed to everyone else (the temp directory is shared)."""
    try:
        info = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def make_folder(place: ServicePlace) -> None:
    for folder in (place.folder.parent, place.folder):
        folder.mkdir(mode=0o700, exist_ok=True)
        if not _private(folder):
            raise PermissionError(f"{folder} is not a folder of this user's alone: not starting a service there")
