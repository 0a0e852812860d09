"""Which Kafka versions exist: a release number's form (checked by the scenario model, offline) and whether Maven
Central serves it (asked once per version; a served version is remembered in the cache, a missing one asked
again next time, as it may be published later). Light on imports: ``testbed validate`` asks it."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from xml.etree import ElementTree

from ..errors import ConfigError
from ..settings import settings

MAVEN = "https://repo1.maven.org/maven2/org/apache/kafka/kafka_2.13"
VERSIONS_HINT = (
    "list the versions Maven Central serves with `testbed kafka-versions` "
    f"(or read {MAVEN}/maven-metadata.xml)"
)
RELEASE = re.compile(r"^\d+\.\d+\.\d+$")


def release_form_problem(version: str) -> str | None:
    """Why ``version`` is not a Kafka release number (the form alone), or None."""
    if RELEASE.match(version):
        return None
    return f"{version!r} is not a release number like 4.3.1; {VERSIONS_HINT}"


def list_kafka_versions() -> list[str]:
    with urllib.request.urlopen(f"{MAVEN}/maven-metadata.xml", timeout=20) as resp:
        root = ElementTree.fromstring(resp.read())
    return [v.text for v in root.iter("version") if v.text and RELEASE.match(v.text)]


def check_kafka_version(version: str, field: str = "kafka_version") -> None:
    """Refuse a version Maven Central does not serve, before any build starts; ``field``: where the version was
    given (``cluster.kafka_version``, ``steps.3.broker_upgrade.to``), for the message."""
    if problem := release_form_problem(version):
        raise ConfigError(f"{field}: {problem}")
    served = settings().cache_dir / "kafka-versions-served" / version
    if served.exists():
        return
    url = f"{MAVEN}/{version}/kafka_2.13-{version}.pom"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20).close()
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise ConfigError(f"{field}: Kafka version {version} is not served by Maven Central; {VERSIONS_HINT}") \
                from None
        raise
    served.parent.mkdir(parents=True, exist_ok=True)
    served.touch()
