"""testbed's Java agent for a user's JVM program (a ``client: java`` command member): built once, attached without
changing the program's command, and the preflight that refuses what it cannot instrument before anything starts.

The agent (``src/agent``, ByteBuddy shaded into one jar) weaves recording into ``KafkaConsumer`` as the program loads
it and writes the member's history as ``testbed.instrument`` does for Python programs (docs/your-consumer.md, "JVM
programs"). It is built by Maven from Maven Central into the cache once per source hash, under the build lock, like the
Java classpaths (``testbed.members.envs``).

Attached through ``JAVA_TOOL_OPTIONS`` (``-javaagent:<jar>``), which every ``java`` start reads, so ``java -jar app.jar``,
a launcher script or a Spring Boot fat jar runs as it is. Which member the JVM is and where its history goes is a
properties file named by ``TESTBED_INSTRUMENT_AGENT``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ...cache import build_lock
from ...instrument.launch import version_tuple
from ...settings import settings
from ..client_settings import properties_text
from ..envs import READY, EnvBuildError, _run

AGENT_SOURCES = Path(__file__).with_name("src") / "agent"
AGENT_JAR = "testbed-agent.jar"
CONFIG_ENV = "TESTBED_INSTRUMENT_AGENT"
# The oldest Java the agent's classes run on (its pom's maven.compiler.release).
MIN_JAVA = 11
KAFKA_CLIENTS_JAR = re.compile(r"(?:^|/)kafka-clients-(\d+\.\d+[^/]*?)\.jar$")


def _sources() -> list[Path]:
    return sorted(p for p in AGENT_SOURCES.rglob("*") if p.is_file())


def agent_jar() -> Path:
    """The agent's jar, built once per source hash (``mvn package``): EnvBuildError names what failed."""
    digest = hashlib.sha256(b"".join(p.relative_to(AGENT_SOURCES).as_posix().encode() + p.read_bytes()
                                     for p in _sources())).hexdigest()[:12]
    root = settings().cache_dir / "java" / f"agent-{digest}"
    jar = root / "target" / AGENT_JAR
    if any(ch.isspace() for ch in str(jar)):
        raise EnvBuildError(f"testbed's Java agent would be at {jar}: JAVA_TOOL_OPTIONS splits at spaces, so the cache "
                            "directory (TESTBED_CACHE_DIR) must be a path without them")
    if (root / READY).exists():
        return jar
    if shutil.which("mvn") is None:
        raise EnvBuildError("mvn is not on PATH; install Maven (apt-get install -y maven) to build testbed's Java agent")
    with build_lock("java-agent"):
        if (root / READY).exists():
            return jar
        if root.exists():
            shutil.rmtree(root)
        shutil.copytree(AGENT_SOURCES, root)
        _run(["mvn", "-q", "-B", "package"], "building testbed's Java agent (ByteBuddy from Maven Central)", cwd=root)
        if not jar.is_file():
            raise EnvBuildError(f"building testbed's Java agent: mvn package left no {jar}")
        (root / READY).write_text("testbed-agent\n")
    return jar


def write_agent_config(path: Path, *, member_id: str, history_path: Path, spec: str | None,
                       command: Sequence[str]) -> None:
    """The properties file the agent reads (``AgentConfig.java``), escaped as ``Properties.load`` reads it."""
    rows = {"member_id": member_id, "history_path": str(history_path), "command_json": json.dumps(list(command))}
    if spec is not None:
        rows["spec"] = spec
    path.write_text(properties_text(rows), encoding="utf-8")


def agent_env(agent_config: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The environment additions that attach the agent to every ``java`` the program starts: ``-javaagent`` first in
    ``JAVA_TOOL_OPTIONS`` (the program's own options kept after it)."""
    own = base.get("JAVA_TOOL_OPTIONS", "").strip()
    return {"JAVA_TOOL_OPTIONS": f"-javaagent:{agent_jar()}" + (f" {own}" if own else ""),
            CONFIG_ENV: str(agent_config)}


def jvm_attach(config_dir: Path, member_id: str, history_path: Path, command: Sequence[str],
               base: Mapping[str, str]) -> dict[str, str]:
    """``testbed instrument``'s attach for a JVM program (``testbed.instrument.launch.run_instrumented``)."""
    config = config_dir / "agent.properties"
    write_agent_config(config, member_id=member_id, history_path=history_path, spec=None, command=command)
    return agent_env(config, base)


# ---- the preflight: what can be known before the program starts ------------------------------------------------


def java_major(java: str) -> int | None:
    """The major version of ``java`` (``java -version``: '1.8.0_402' is 8, '17.0.15' 17); None if it does not say."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60,
                             env={k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not found:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major


def kafka_clients_in(path: Path) -> str | None:
    """The kafka-clients version a jar or class path entry holds: a ``kafka-clients-X.jar`` itself, one nested in a
    fat jar (Spring Boot's ``BOOT-INF/lib``), or a shaded copy (its ``kafka/kafka-version.properties``); None when it
    has none."""
    if found := KAFKA_CLIENTS_JAR.search(path.name if path.is_file() else ""):
        return found.group(1)
    if path.is_dir():
        for jar in sorted(path.glob("kafka-clients-*.jar")):
            if found := KAFKA_CLIENTS_JAR.search(jar.name):
                return found.group(1)
        return None
    if not path.is_file() or not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as jar:
        for name in jar.namelist():
            if found := KAFKA_CLIENTS_JAR.search(name):
                return found.group(1)
        try:
            properties = jar.read("kafka/kafka-version.properties").decode(errors="replace")
        except KeyError:
            return None
    found = re.search(r"^version=(\S+)", properties, re.M)
    return found.group(1) if found else None


def _class_path(command: Sequence[str], cwd: Path) -> tuple[Path | None, list[Path]]:
    """The ``-jar`` file and the ``-cp`` entries of a ``java`` command line (relative to ``cwd``)."""
    jar, entries = None, []
    args = list(command[1:])
    for i, arg in enumerate(args):
        if arg == "-jar" and i + 1 < len(args):
            jar = cwd / args[i + 1]
            break
        if arg in ("-cp", "-classpath", "--class-path") and i + 1 < len(args):
            for entry in args[i + 1].split(os.pathsep):
                entries.extend(sorted((cwd / entry[:-2]).glob("*.jar")) if entry.endswith("/*") else [cwd / entry])
        if not arg.startswith("-"):
            break  # the main class: what follows is the program's own arguments
    return jar, entries


def preflight(command: Sequence[str], cwd: str | None, env: Mapping[str, str], client_version: str | None,
              since: tuple[int, ...]) -> str | None:
    """What is wrong with running ``command`` under the agent, for the user (None: nothing found). Checked: the
    command exists, a ``java`` is found (the command's own, else the one on PATH) and is new enough, a ``-jar`` file
    exists, and the kafka-clients it carries (when the jar or class path shows it) is one the agent instruments and
    the spec's ``client_version``. A launcher script's Kafka version shows only once it runs: the agent then refuses
    it at its first KafkaConsumer (an ``error`` the run stops at)."""
    where = Path(cwd) if cwd else Path.cwd()
    path = env.get("PATH", os.environ.get("PATH", ""))
    program = command[0]
    resolved = shutil.which(program, path=path) if os.sep not in program else str(where / program)
    if resolved is None or not os.path.exists(resolved):
        return f"command: {program!r} is not found (PATH={path})"
    is_java = os.path.basename(program) == "java"
    java = resolved if is_java else shutil.which("java", path=path)
    if java is None:
        return f"command: no java on PATH for {program!r} to start (PATH={path}); testbed's agent needs Java {MIN_JAVA}+"
    major = java_major(java)
    if major is None:
        return f"command: {java} -version did not say its version"
    if major < MIN_JAVA:
        return f"command: {java} is Java {major}; testbed's Java agent needs Java {MIN_JAVA} or later"
    if not is_java:
        return None
    jar, entries = _class_path(command, where)
    if jar is not None and not jar.is_file():
        return f"command: -jar {jar}: no such file"
    found = next((v for v in (kafka_clients_in(p) for p in ([jar] if jar else []) + entries) if v), None)
    if found is None:
        return None
    minimum = ".".join(map(str, since))
    if version_tuple(found) < since:
        return f"command: the program carries kafka-clients {found}; testbed's Java agent instruments {minimum} and later"
    if client_version is not None and version_tuple(found) != version_tuple(client_version):
        return f"command: the program carries kafka-clients {found}, the spec says client_version {client_version}"
    return None


__all__ = ["AGENT_SOURCES", "CONFIG_ENV", "MIN_JAVA", "agent_env", "agent_jar", "java_major", "jvm_attach",
           "kafka_clients_in", "preflight", "write_agent_config"]
