"""Client installations per version: one virtualenv per (client, version), one classpath per kafka-tools.

Built once under the cache dir (``settings().cache_dir``, TESTBED_CACHE_DIR) and reused; a build holds a
file lock so two fleets never build the same one at once, and a ``.ready`` marker is written last so a
build killed halfway is redone.
A venv gets the client, pydantic, and a .pth line putting this project on sys.path: the runners
import only the client, the stdlib, pydantic and testbed.history / testbed.members.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

from testbed.errors import TestbedError

from ..cache import build_lock
from ..clients import FAMILIES, names
from ..settings import settings
from .spec import DEFAULT_JAVA_VERSION, STREAMS_PROTOCOL_SINCE, _version_tuple

PYTHON_CLIENTS = names(lambda f: f.installation.kind == "pip")  # a virtualenv per version
PYDANTIC_REQUIREMENT = "pydantic>=2.7,<3"
READY = ".ready"
JAVA_TOOLS_ARTIFACT = FAMILIES["java"].installation.package.partition(":")[2]  # org.apache.kafka:kafka-tools
# VerifiableConsumer logs through slf4j 1.7; this backend keeps the JVM's own log off stdout.
JAVA_LOG_BACKEND = (
    ("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"),
    ("org.apache.logging.log4j", "log4j-core", "2.24.3"),
)
LOG4J2_PROPERTIES = """\
status = error
appender.err.type = Console
appender.err.name = STDERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.err.ref = STDERR
"""


class EnvBuildError(TestbedError):
    """A client installation could not be built; the message carries the installer's last output."""


def _run(cmd: list[str], what: str, *, cwd: Path | None = None, timeout_s: float = 900) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise EnvBuildError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")


def companions(client: str, version: str) -> list[str]:
    """Requirements a client version needs beside its own, where its metadata allows what it cannot run with:
    aiokafka before 0.9 imports kafka-python 2.0's protocol code (``kafka.conn.collect_hosts``, gone in 2.1) yet
    asks only ``kafka-python>=2.0.2``."""
    if client == "aiokafka" and _version_tuple(version) < (0, 9):
        return ["kafka-python==2.0.2"]
    return []


def venv_dir(client: str, version: str) -> Path:
    return settings().cache_dir / "venvs" / f"{client}-{version}"


def python_for(client: str, version: str | None) -> Path:
    """The interpreter that runs ``client==version``; None means the project's own venv."""
    if client not in PYTHON_CLIENTS:
        raise EnvBuildError(f"client: python_for serves {', '.join(PYTHON_CLIENTS)}, got {client!r}")
    if version is None:
        return Path(sys.executable)
    root = venv_dir(client, version)
    python = root / "bin" / "python"
    if (root / READY).exists():
        return python
    with build_lock(f"venv-{client}-{version}"):
        if (root / READY).exists():  # another fleet built it while we waited
            return python
        if root.exists():
            shutil.rmtree(root)
        base = getattr(sys, "_base_executable", sys.executable)
        _run([base, "-m", "venv", str(root)], f"creating the venv for {client} {version}")
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "--only-binary", ":all:",
             f"{FAMILIES[client].installation.package}=={version}",
             *companions(client, version), PYDANTIC_REQUIREMENT],
            f"installing {client}=={version}",
        )
        # No testbed in it: whoever starts this interpreter puts testbed's import root on its PYTHONPATH
        # (testbed.package_files), so every venv runs the code of the testbed that starts it, installed or not.
        (root / READY).write_text(f"{client}=={version}\n")
    return python



# ---- Java: kafka-tools classpaths from Maven Central ---------------------------------------------


def _pom(artifact: str, version: str) -> str:
    deps = [("org.apache.kafka", artifact, version), *JAVA_LOG_BACKEND]
    body = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in deps
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>testbed</groupId><artifactId>{artifact}-classpath</artifactId><version>{version}</version>"
        f"<packaging>pom</packaging><dependencies>{body}</dependencies></project>"
    )


def java_dir(version: str) -> Path:
    return settings().cache_dir / "java" / version


def java_classpath(version: str | None = None) -> str:
    """A ``-cp`` value for kafka-tools ``version`` (jars fetched once with mvn into the cache)."""
    version = version or DEFAULT_JAVA_VERSION
    return _maven_classpath(JAVA_TOOLS_ARTIFACT, version, java_dir(version))


def java_streams_classpath(version: str | None = None) -> str:
    """A ``-cp`` value for kafka-streams ``version`` (kafka-clients, RocksDB's JNI jar, a log backend)."""
    version = version or DEFAULT_JAVA_VERSION
    return _maven_classpath("kafka-streams", version, java_dir(version) / "streams")


def _maven_classpath(artifact: str, version: str, root: Path) -> str:
    """org.apache.kafka:``artifact`` ``version`` with its runtime dependencies and the log backend, copied once
    into ``root/lib`` by mvn: a ``-cp`` value."""
    classpath = f"{root / 'lib'}/*"
    if (root / READY).exists():
        return classpath
    if shutil.which("mvn") is None:
        raise EnvBuildError(f"mvn is not on PATH; install Maven (apt-get install -y maven) to fetch {artifact}")
    with build_lock(f"java-{artifact}-{version}"):
        if (root / READY).exists():
            return classpath
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        (root / "pom.xml").write_text(_pom(artifact, version))
        _run(
            ["mvn", "-q", "-B", "dependency:copy-dependencies", f"-DoutputDirectory={root / 'lib'}",
             "-DincludeScope=runtime"],
            f"fetching {artifact} {version} from Maven Central",
            cwd=root,
        )
        (root / READY).write_text(f"{artifact} {version}\n")
    return classpath


# The Java programs of the java family's runners, each folder compiled against the member's Kafka version.
JAVA_SOURCES = Path(__file__).with_name("java") / "src"
JAVA_HOST_SOURCE = JAVA_SOURCES / "host" / "TestbedMemberHost.java"
JAVA_HOST_CLASS = "TestbedMemberHost"
# The seed assignors in Java (package testbed.assignors; docs/assignors.md), on every Java member's classpath.
JAVA_ASSIGNOR_SOURCES = JAVA_SOURCES / "assignors"
# The share-group member (KIP-932, a KafkaShareConsumer): kafka-clients >= 4.1 only.
JAVA_SHARE_SOURCE = JAVA_SOURCES / "share" / "TestbedShareMember.java"
JAVA_SHARE_OFFSETS_SOURCE = JAVA_SOURCES / "share" / "TestbedShareOffsets.java"
# A Kafka Streams application of testbed's own (testbed.members.java.streams): kafka-streams of the spec's version.
JAVA_STREAMS_SOURCE = JAVA_SOURCES / "streams" / "TestbedStreamsApp.java"
# The streams protocol's consumer wrapper (ConsumerWrapper, an internal class of kafka-streams 4.1 and later),
# compiled where the streams protocol runs: its StreamsRebalanceListener is 4.2's (4.1's returned Optional<Exception>).
JAVA_STREAMS_WRAPPER_SOURCE = JAVA_SOURCES / "streams" / "TestbedStreamsConsumerWrapper.java"
STREAMS_WRAPPER_SINCE = STREAMS_PROTOCOL_SINCE
# The classic protocol's main consumer with close(CloseOptions) (kafka-clients 4.1+; StreamThread calls it from 4.2
# on), so that a closing instance's ownership ends when that consumer closes.
JAVA_STREAMS_CLASSIC_SOURCE = JAVA_SOURCES / "streams" / "TestbedClassicConsumer.java"
STREAMS_CLASSIC_CLOSE_SINCE = (4, 1)


def _compiled(version: str | None, what: str, sources: list[Path], classpath: Callable[[str], str] | None = None) -> Path:
    """``sources`` compiled against kafka-clients ``version`` (or the ``classpath`` of that version: default
    kafka-tools'), once per version and sources (the cache key holds their hash): the directory of the classes."""
    version = version or DEFAULT_JAVA_VERSION
    digest = hashlib.sha256(b"".join(s.read_bytes() for s in sorted(sources))).hexdigest()[:12]
    root = java_dir(version) / f"{what}-{digest}"
    if (root / READY).exists():
        return root
    against = (classpath or java_classpath)(version)
    with build_lock(f"java-{what}-{version}"):
        if (root / READY).exists():
            return root
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        _run(["javac", "-nowarn", "-cp", against, "-d", str(root), *map(str, sorted(sources))],
             f"compiling {what} ({', '.join(s.name for s in sources)}) against kafka-clients {version}")
        (root / READY).write_text(f"{what} for {version}\n")
    return root


def java_host_classes(version: str | None = None) -> Path:
    """The member host's classes (``java/src/host/TestbedMemberHost.java``) compiled against kafka-clients ``version``."""
    return _compiled(version, "host", [JAVA_HOST_SOURCE])


def java_assignor_classes(version: str | None = None) -> Path:
    """The seed assignors in Java (``java/src/assignors/*.java``, package ``testbed.assignors``) compiled against
    kafka-clients ``version``."""
    return _compiled(version, "assignors", sorted(JAVA_ASSIGNOR_SOURCES.glob("*.java")))


def java_share_classes(version: str | None = None) -> Path:
    """The share member (``java/src/share/TestbedShareMember.java``) compiled against kafka-clients ``version``."""
    return _compiled(version, "share", [JAVA_SHARE_SOURCE])


def java_share_offsets_classes(version: str | None = None) -> Path:
    """The share-group offsets lister (``java/src/share/TestbedShareOffsets.java``, with the share member whose JSON
    quoting it uses) compiled against kafka-clients ``version``."""
    return _compiled(version, "share-offsets", [JAVA_SHARE_SOURCE, JAVA_SHARE_OFFSETS_SOURCE])


def java_streams_classes(version: str | None = None) -> Path:
    """The Streams application (``java/src/streams/TestbedStreamsApp.java``) compiled against kafka-streams ``version``."""
    version = version or DEFAULT_JAVA_VERSION
    numbers = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    sources = ([JAVA_STREAMS_SOURCE] + ([JAVA_STREAMS_CLASSIC_SOURCE] if numbers >= STREAMS_CLASSIC_CLOSE_SINCE else [])
               + ([JAVA_STREAMS_WRAPPER_SOURCE] if numbers >= STREAMS_WRAPPER_SINCE else []))
    return _compiled(version, "streams-app", sources, java_streams_classpath)


def java_member_classpath(version: str | None = None) -> str:
    """A Java member's ``-cp``: the seed assignors, then kafka-tools ``version`` (the host adds its own classes)."""
    return f"{java_assignor_classes(version)}:{java_classpath(version)}"


def java_log_config(version: str | None = None) -> Path:
    """The log4j2 configuration every JVM of testbed's runs with (``version``: kept for callers; one file serves all,
    so a kafka-streams version without kafka-tools fetched has it too). Written once, atomically: fleets start
    JVMs in parallel."""
    path = settings().cache_dir / "java" / "log4j2.properties"
    if not path.exists() or path.read_text() != LOG4J2_PROPERTIES:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}")
        partial.write_text(LOG4J2_PROPERTIES)
        partial.replace(path)
    return path


def prepare(client: str, version: str | None, share: bool = False, streams: bool = False) -> None:
    """Build what a member of this client and version needs, before any member starts."""
    if client == "java" and streams:
        java_streams_classes(version)
    elif client == "java" and share:
        java_share_classes(version)
    elif client == "java":
        java_host_classes(version)  # the kafka-tools classpath, and the host compiled against it
        java_assignor_classes(version)
    else:
        python_for(client, version)


__all__ = ["EnvBuildError", "JAVA_SOURCES", "java_assignor_classes", "java_classpath", "java_host_classes", "java_log_config",
           "java_member_classpath", "java_share_classes", "java_share_offsets_classes",
           "java_streams_classes", "java_streams_classpath", "prepare", "python_for", "venv_dir"]
