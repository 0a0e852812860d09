"""A member spec's client settings and handler, checked before anything starts by the client library itself.

The owned settings are refused by ``MemberSpec`` (``owned_settings``); what is left of ``client_config`` only the
client knows: whether a key exists in the member's version and whether its value parses. So the harness asks
the client, without connecting, in the version the member will run:

- Python clients: ``python -m testbed.members.preflight`` in the member's interpreter (``envs.python_for``), which
  also imports the handler there;
- Java: ``java/src/check/ConsumerConfigCheck.java`` compiled against the member's kafka-clients (``envs._compiled``),
  given the properties file the runner would write.

Each answer becomes ``members.<spec>.client_config.<key>: <the client's own message>`` or
``members.<spec>.handler: <the import error>``. A spec with nothing to check (no client_config, no handler) starts
nothing, so runs without them cost no time; command members run the user's program with its own settings and are
checked by the instrumentation's preflight instead. Each distinct spec is checked once per process.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..cache import pythonpath_with_testbed
from ..errors import ConfigError
from ..settings import settings
from .client_settings import java_settings, properties_text, streams_settings
from .config import MemberConfig
from .envs import (
    JAVA_SOURCES,
    EnvBuildError,
    _compiled,
    java_classpath,
    java_log_config,
    java_member_classpath,
    java_streams_classes,
    java_streams_classpath,
    prepare,
    python_for,
)
from .program_check import check_program
from .spec import MemberSpec
from .wheels import check_client_available

STREAMS_MAIN_CLASS = "TestbedStreamsApp"
JAVA_CHECK_SOURCE = JAVA_SOURCES / "check" / "ConsumerConfigCheck.java"
JAVA_CHECK_CLASS = "ConsumerConfigCheck"
CHECK_TIMEOUT_S = 120.0
# Settings the seed assignors in Java read from the consumer's configs (FailoverAssignor.PRIORITY_KEYS): not
# ConsumerConfig's, yet a member listing such an assignor may set them.
JAVA_ASSIGNOR_SETTINGS = {"assignment.consumer.priority": "FailoverAssignor"}

_checked: dict[str, list[str]] = {}


def needs_check(spec: MemberSpec) -> bool:
    """Whether the client has anything to say about this spec (its client_config or its handler)."""
    return not spec.is_command and bool(spec.client_config or spec.handler)


def preflight_config(spec: MemberSpec) -> MemberConfig:
    """The config the check builds the settings from: the spec in a member of no run. The loopback port 1 is
    never listened on, should a client try it."""
    return MemberConfig(member_id="preflight", group_id="testbed-preflight", topics=["testbed-preflight"],
                        bootstrap_servers="127.0.0.1:1", spec=spec, history_path=Path(os.devnull))


def check_member(spec: MemberSpec) -> list[str]:
    """The client's refusals of this spec's client_config and handler, one ``members.<spec>...`` line each;
    none when it takes them (or has nothing to check). The member's client install must exist (``prepare``)."""
    if not needs_check(spec):
        return []
    key = spec.model_dump_json()
    if key not in _checked:
        config = preflight_config(spec)
        answer = _java_answer(config) if spec.client == "java" else _python_answer(config)
        _checked[key] = describe(spec, answer)
    return list(_checked[key])


def check_specs(specs: Iterable[MemberSpec]) -> list[str]:
    """Every refusal of these specs (each distinct spec once) that a run's ``prepare_spec`` would make: a client
    version PyPI does not have, a program that cannot start or lacks its client, settings and handlers its client
    refuses (building the client installs those checks need); for ``testbed validate``, which starts nothing else."""
    lines: list[str] = []
    seen: set[str] = set()
    for spec in specs:
        if spec.model_dump_json() in seen:
            continue
        seen.add(spec.model_dump_json())
        try:
            if spec.is_command:
                check_program(spec, build_agent=False)
                continue
            check_client_available(spec)
            if needs_check(spec):
                prepare(spec.client, spec.client_version, spec.is_share, spec.is_streams)
                lines += check_member(spec)
        except (ConfigError, EnvBuildError) as exc:
            lines.append(str(exc) if str(exc).startswith("members.")
                         else f"members.{spec.name}.{exc}" if str(exc).startswith("client_version:")
                         else f"members.{spec.name}: {exc}")
    return lines


def describe(spec: MemberSpec, answer: dict[str, Any]) -> list[str]:
    """An answer of the preflight (or the Java check) as refusal lines."""
    at = f"members.{spec.name or spec.client}"
    lines = [f"{at}.client_config{'.' + e['key'] if e.get('key') else ''}: {e['message']}"
             for e in answer.get("errors", [])]
    if answer.get("handler"):
        lines.append(f"{at}.handler: {answer['handler']}")
    return lines


def _python_answer(config: MemberConfig) -> dict[str, Any]:
    spec = config.spec
    python = python_for(spec.client, spec.client_version)
    env = {**os.environ, "PYTHONPATH": pythonpath_with_testbed(os.environ.get("PYTHONPATH"))}
    cmd = [str(python), "-m", "testbed.members.preflight", "--config", config.model_dump_json()]
    return _answer(cmd, env, f"{spec.client} {spec.client_version or '(project venv)'}")


def _streams_answer(config: MemberConfig) -> dict[str, Any]:
    """A Streams instance's settings, checked by testbed's Streams application in its kafka-streams version."""
    spec = config.spec
    version = spec.java_version
    classpath = f"{java_streams_classes(version)}:{java_streams_classpath(version)}"
    with tempfile.NamedTemporaryFile("w", prefix="testbed-check-", suffix=".properties") as props:
        props.write(properties_text(streams_settings(config, tempfile.gettempdir())))
        props.flush()
        cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(version)}",
               "-cp", classpath, STREAMS_MAIN_CLASS, "--check", props.name, ",".join(spec.client_config)]
        return _answer(cmd, None, f"kafka-streams {version}")


def _java_answer(config: MemberConfig) -> dict[str, Any]:
    spec = config.spec
    if spec.is_streams:
        return _streams_answer(config)
    version = spec.java_version
    # The member's classpath, so that the class names of partition.assignment.strategy (the seed assignors too)
    # load as the member's consumer loads them.
    classpath = java_classpath(version) if spec.is_share else java_member_classpath(version)
    checker = _compiled(version, "check", [JAVA_CHECK_SOURCE])
    read_by_assignors = [k for k, cls in JAVA_ASSIGNOR_SETTINGS.items() if any(cls in a for a in spec.assignors)]
    with tempfile.NamedTemporaryFile("w", prefix="testbed-check-", suffix=".properties") as props:
        props.write(properties_text(java_settings(config)))
        props.flush()
        cmd = ["java", *settings().java_opts.split(), f"-Dlog4j2.configurationFile={java_log_config(version)}",
               "-cp", f"{checker}:{classpath}", JAVA_CHECK_CLASS, props.name, "share" if spec.is_share else "consumer",
               ",".join(spec.client_config), ",".join(read_by_assignors)]
        return _answer(cmd, None, f"kafka-clients {version}")


def _answer(cmd: list[str], env: dict[str, str] | None, what: str) -> dict[str, Any]:
    """The check's JSON line (the last line of its output that is one: a library may print before it)."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"errors": [{"key": None, "message": f"the check in {what} did not answer in {CHECK_TIMEOUT_S:.0f} s"}]}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                break
    tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
    return {"errors": [{"key": None, "message": f"the check in {what} failed (exit {proc.returncode}): {tail}"}]}


__all__ = ["check_member", "check_specs", "describe", "needs_check", "preflight_config"]
