"""Images built once and reused: the JRE base and one Kafka image per version (recipes in testbed/brokers/recipes, `docker/` in a checkout).

Tags carry a hash of the recipe, so a changed recipe gives a new tag and thus a rebuild, and an
unchanged one is found and reused. No registry is needed: the base is built with debootstrap and
`docker import`, unless the TESTBED_BASE_IMAGE setting names a public JRE image to pull.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

from ..cache import build_lock
from ..errors import ImageBuildError
from ..settings import PROJECT_LABEL, PROJECT_NAME, settings
from .versions import VERSIONS_HINT, check_kafka_version

log = logging.getLogger(__name__)
LAUNCHER_JAR = "testbed-kafka-start.jar"  # the name entrypoint.sh and class-archive.sh look for


def recipe_hash(directory: Path, *extra: str) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        h.update(path.relative_to(directory).as_posix().encode())
        h.update(path.read_bytes())
    for item in extra:
        h.update(item.encode())
    return h.hexdigest()[:12]


def debian_mirror() -> str:
    """The Debian mirror apt already uses (deb822 .sources or the classic sources.list)."""
    if settings().debian_mirror:
        return settings().debian_mirror
    candidates = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in candidates:
        for line in path.read_text().splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    sources = Path("/etc/apt/sources.list")
    if sources.exists():
        for line in sources.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[0] == "deb" and "security" not in parts[1]:
                return parts[-3] if parts[1].startswith("[") else parts[1]
    return "http://deb.debian.org/debian"


def _image_exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


def ensure_base_image(client: docker.DockerClient) -> str:
    """The JRE image Kafka images are built FROM."""
    if settings().base_image:
        if not _image_exists(client, settings().base_image):
            client.images.pull(settings().base_image)
        return settings().base_image
    recipe = settings().docker_dir / "base"
    tag = f"testbed/jre:{recipe_hash(recipe)}"
    with build_lock("base"):
        if _image_exists(client, tag):
            return tag
        proc = subprocess.run(
            ["bash", str(recipe / "build.sh"), tag, debian_mirror()], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise ImageBuildError(f"building the JRE base image {tag} failed:\n{proc.stderr[-3000:]}")
    return tag


def _kafka_jars(version: str) -> Path:
    """The broker classpath of one version from Maven Central, cached across builds."""
    out = settings().cache_dir / "kafka-jars" / version
    done = out / ".complete"
    if done.exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    pom = settings().docker_dir / "kafka" / "pom.xml"
    proc = subprocess.run(
        ["mvn", "-q", "-B", "-U", "-f", str(pom), f"-Dkafka.version={version}",
         "dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={out}"],
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        missing = re.findall(r"(org\.apache\.kafka:[\w.-]+:jar:[\w.-]+) was not found", proc.stdout + proc.stderr)
        why = f"Maven Central lacks {', '.join(sorted(set(missing)))}" if missing else proc.stdout[-2000:]
        raise ImageBuildError(
            f"cannot fetch the Kafka {version} broker classpath from Maven Central: {why}. "
            f"Choose another version; {VERSIONS_HINT}"
        )
    done.touch()
    return out


def _compile_launcher(ctx: Path) -> None:
    """The build context's ``launcher/``: TestbedKafkaStart.java compiled into a jar (the storage's format and the
    node in one JVM; a jar, as the JVM's class-data archive refuses a directory on the class path). Left empty without
    a ``javac`` on this machine: the image then formats in a JVM of its own (entrypoint.sh)."""
    out = ctx / "launcher"
    out.mkdir()
    javac = shutil.which("javac")
    if javac is None:
        log.warning("no javac: the Kafka image formats each node's storage in a JVM of its own (0.3 s more per start)")
        return
    with tempfile.TemporaryDirectory(prefix="testbed-launcher-") as classes:
        proc = subprocess.run([javac, "--release", "11", "-d", classes, str(ctx / "TestbedKafkaStart.java")],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise ImageBuildError(f"compiling the Kafka image's launcher failed:\n{proc.stderr[-3000:]}")
        with zipfile.ZipFile(out / LAUNCHER_JAR, "w") as jar:
            for path in sorted(Path(classes).rglob("*.class")):
                jar.write(path, path.relative_to(classes).as_posix())


def kafka_image_tag(version: str, base: str) -> str:
    return f"testbed/kafka:{version}-{recipe_hash(settings().docker_dir / 'kafka', version, base)}"


def ensure_kafka_image(version: str | None = None) -> str:
    """Build (once) and return the tag of the Kafka image for ``version``."""
    version = version or settings().kafka_version
    client = docker.from_env()
    try:
        base = ensure_base_image(client)
        base_id = client.images.get(base).id
        tag = kafka_image_tag(version, base_id)
        with build_lock(f"kafka-{version}"):
            if _image_exists(client, tag):
                return tag
            check_kafka_version(version)
            jars = _kafka_jars(version)
            with tempfile.TemporaryDirectory(prefix="testbed-kafka-") as ctx:
                shutil.copytree(settings().docker_dir / "kafka", ctx, dirs_exist_ok=True)
                shutil.copytree(jars, Path(ctx) / "libs", ignore=shutil.ignore_patterns(".complete"))
                _compile_launcher(Path(ctx))
                try:
                    client.images.build(
                        path=ctx, tag=tag, buildargs={"BASE": base}, rm=True, network_mode="none",
                        labels={PROJECT_LABEL: PROJECT_NAME, "io.testbed.kafka-version": version},
                    )
                except BuildError as exc:
                    log = "".join(str(c.get("stream", c.get("error", ""))) for c in exc.build_log)
                    raise ImageBuildError(f"building {tag} failed: {exc}\n{log[-3000:]}") from None
        return tag
    finally:
        client.close()
