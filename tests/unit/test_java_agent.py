"""The Python side of testbed's Java agent: what the preflight reads from a JVM program's command line and jars
without running it, and the member config the agent reads. The agent itself runs on real brokers in
tests/integration/test_java_program.py."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from testbed.members.java.agent import _class_path, kafka_clients_in, preflight, write_agent_config
from testbed.members.spec import MemberSpec
from testbed.scenario.model import Scenario

SINCE = (2, 5)


def _jar(path: Path, entries: dict[str, str]) -> Path:
    with zipfile.ZipFile(path, "w") as jar:
        for name, text in entries.items():
            jar.writestr(name, text)
    return path


def test_the_kafka_clients_version_is_read_from_jars_fat_jars_shaded_jars_and_directories(tmp_path: Path) -> None:
    assert kafka_clients_in(_jar(tmp_path / "kafka-clients-3.9.1.jar", {"a": ""})) == "3.9.1"
    fat = _jar(tmp_path / "service.jar", {"BOOT-INF/lib/kafka-clients-4.1.1.jar": "", "BOOT-INF/lib/x-1.jar": ""})
    assert kafka_clients_in(fat) == "4.1.1"
    shaded = _jar(tmp_path / "uber.jar", {"kafka/kafka-version.properties": "commitId=abc\nversion=3.7.0\n"})
    assert kafka_clients_in(shaded) == "3.7.0"
    lib = tmp_path / "lib"
    lib.mkdir()
    _jar(lib / "kafka-clients-2.8.0.jar", {"a": ""})
    assert kafka_clients_in(lib) == "2.8.0"
    assert kafka_clients_in(_jar(tmp_path / "other.jar", {"a/B.class": ""})) is None
    assert kafka_clients_in(tmp_path / "missing.jar") is None


def test_the_jar_and_class_path_are_read_up_to_the_main_class(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    _jar(tmp_path / "lib" / "kafka-clients-4.1.1.jar", {"a": ""})
    jar, entries = _class_path(["java", "-Xmx1g", "-cp", "app.jar:lib/*", "Main", "-jar", "x.jar"], tmp_path)
    assert jar is None and entries == [tmp_path / "app.jar", tmp_path / "lib" / "kafka-clients-4.1.1.jar"]
    jar, entries = _class_path(["java", "-jar", "service.jar", "--server.port=0"], tmp_path)
    assert jar == tmp_path / "service.jar" and entries == []


def _fake_java(tmp_path: Path, version: str) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    java = bin_dir / "java"
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2024-01-16' >&2\n")
    java.chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("version, major", [("1.8.0_402", 8), ("17.0.15", 17), ("21", 21)])
def test_a_java_too_old_for_the_agent_is_refused_naming_it(tmp_path: Path, version: str, major: int) -> None:
    _jar(tmp_path / "app.jar", {"BOOT-INF/lib/kafka-clients-4.1.1.jar": ""})
    problem = preflight(["java", "-jar", "app.jar"], str(tmp_path), {"PATH": _fake_java(tmp_path, version)}, None,
                        SINCE)
    if major < 11:
        assert problem == f"command: {tmp_path}/bin/java is Java 8; testbed's Java agent needs Java 11 or later"
    else:
        assert problem is None


def test_a_program_with_a_kafka_clients_the_agent_does_not_instrument_is_refused(tmp_path: Path) -> None:
    path = {"PATH": _fake_java(tmp_path, "17.0.15")}
    _jar(tmp_path / "old.jar", {"BOOT-INF/lib/kafka-clients-2.4.1.jar": ""})
    assert preflight(["java", "-jar", "old.jar"], str(tmp_path), path, None, SINCE) == (
        "command: the program carries kafka-clients 2.4.1; testbed's Java agent instruments 2.5 and later")
    _jar(tmp_path / "new.jar", {"BOOT-INF/lib/kafka-clients-4.1.1.jar": ""})
    assert "the spec says client_version 3.9.1" in preflight(["java", "-jar", "new.jar"], str(tmp_path), path, "3.9.1",
                                                             SINCE)
    assert preflight(["java", "-jar", "none.jar"], str(tmp_path), path, None, SINCE) == (
        f"command: -jar {tmp_path}/none.jar: no such file")
    launcher = tmp_path / "run.sh"
    launcher.write_text("#!/bin/sh\nexec java -jar new.jar\n")
    launcher.chmod(0o755)
    no_java = preflight(["./run.sh"], str(tmp_path), {"PATH": str(tmp_path / "empty")}, None, SINCE)
    assert no_java is not None and no_java.startswith("command: no java on PATH for './run.sh' to start")
    assert preflight(["./run.sh"], str(tmp_path), path, None, SINCE) is None  # its Kafka version shows when it runs


def test_the_agent_config_escapes_what_java_properties_would_read_otherwise(tmp_path: Path) -> None:
    path = tmp_path / "m0.agent.properties"
    write_agent_config(path, member_id="m0", history_path=Path("/runs/a\\b/m0.jsonl"), spec=" app",
                       command=["java", "-jar", "é.jar"])
    assert path.read_text(encoding="utf-8").splitlines() == [
        "member_id=m0", "history_path=/runs/a\\\\b/m0.jsonl", 'command_json=["java", "-jar", "\\\\u00e9.jar"]',
        "spec=\\ app"]


def test_a_java_program_is_a_command_member_and_cannot_be_stalled() -> None:
    spec = MemberSpec(name="app", client="java", command=["java", "-jar", "app.jar"])
    assert spec.is_command and spec.family.program_runtime == "jvm"
    scenario = {"name": "t", "topics": [{"name": "events", "partitions": 2}], "members": {"app": spec.model_dump()},
                "fleet": [{"spec": "app", "count": 2}], "steps": ["wait_stable", {"stall": {"member": "m0"}}]}
    with pytest.raises(ValueError, match="steps.1.stall.member"):
        Scenario.model_validate(scenario)
