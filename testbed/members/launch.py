"""How to start a member: the one place that readies a client install and builds a runner's command line.

Start the command with ``start_new_session=True`` and signal the process group (``os.killpg``): SIGTERM
is a clean stop; SIGSTOP/SIGCONT pause and resume; SIGKILL kills, leaving the history intact up to
its last line. For the Java runner the group also holds the JVM.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..cache import pythonpath_with_testbed
from ..clients import FAMILIES
from ..errors import ConfigError
from ..instrument.launch import instrumented_env
from .config import MemberConfig
from .envs import prepare, python_for
from .java import agent as java_agent
from .member_checks import check_member
from .program_check import check_program
from .spec import HOSTED_CLIENTS, MemberSpec, fill_env
from .wheels import check_client_available

# Each family's runners, as its declaration names them (testbed.clients).
RUNNER_MODULES = {name: f.member.module for name, f in FAMILIES.items()}
# Share-group members (KIP-932) run a share consumer of their own runner.
SHARE_RUNNER_MODULES = {name: f.share.module for name, f in FAMILIES.items() if f.share is not None}
# A Kafka Streams instance (``streams:``) runs testbed's Streams application.
STREAMS_RUNNER_MODULES = {name: f.streams.module for name, f in FAMILIES.items() if f.streams is not None}


def runner_module(spec: MemberSpec) -> str:
    if spec.is_streams:
        return STREAMS_RUNNER_MODULES[spec.client]
    return (SHARE_RUNNER_MODULES if spec.is_share else RUNNER_MODULES)[spec.client]


def prepare_spec(spec: MemberSpec) -> None:
    """Everything that can fail before a member starts: the version exists as a wheel, its install is built;
    a command member's program runs in an interpreter that has a client version testbed instruments."""
    if spec.is_command:
        check_program(spec)
        return
    try:
        check_client_available(spec)
    except ConfigError as exc:  # "client_version: ...": named where the scenario says it
        raise ConfigError(f"members.{spec.name}.{exc}") from None
    prepare(spec.client, spec.client_version, spec.is_share, spec.is_streams)
    if problems := check_member(spec):  # client_config and handler, checked by the client in its own version
        raise ConfigError("\n".join(problems))


def runner_command(config: MemberConfig, config_arg: str | None = None) -> list[str]:
    """The runner's command line; ``config_arg`` is the path of the config as a JSON file (default: inline JSON)."""
    spec = config.spec
    # A Maven-installed family's runner is plain Python driving a JVM: it runs in the project's own interpreter.
    python = (sys.executable if spec.family.installation.kind == "maven"
              else str(python_for(spec.client, spec.client_version)))
    return [python, "-m", runner_module(spec), "--config", config_arg or config.model_dump_json()]


@dataclass(frozen=True)
class Launch:
    """How to start one member process: its command line, what its environment adds to the harness's, its
    working directory."""

    command: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None


def member_launch(config: MemberConfig, config_path: Path) -> Launch:
    """A runner of ours, or the user's own program (a command member) under testbed's instrumentation.

    The program learns the run only through its environment: the spec's ``env`` with its placeholders filled,
    then the instrumentation's variables: for a Python program its sitecustomize first on PYTHONPATH and the member's
    config file, for a JVM program testbed's Java agent in JAVA_TOOL_OPTIONS and the agent's config file."""
    spec = config.spec
    if not spec.is_command:
        return Launch(runner_command(config, str(config_path)),
                      {"PYTHONPATH": pythonpath_with_testbed(), "PYTHONUNBUFFERED": "1"})
    own = fill_env(spec.env, bootstrap_servers=config.bootstrap_servers, group_id=config.group_id,
                   topics=config.topic_names, run_dir=str(config.run_dir.resolve()) if config.run_dir else "")
    if spec.family.program_runtime == "jvm":
        agent_config = config_path.with_suffix(".agent.properties")
        java_agent.write_agent_config(agent_config, member_id=config.member_id, history_path=config.history_path,
                                      spec=spec.name, command=list(spec.command or ()))
        env = {**own, **java_agent.agent_env(agent_config, {**os.environ, **own})}
    else:
        env = {**own, **instrumented_env(config_path, {**os.environ, **own})}
    return Launch(list(spec.command or ()), env, os.path.abspath(spec.cwd) if spec.cwd else None)


def host_command(spec: MemberSpec) -> list[str]:
    """A member host's command line (``testbed.members.host``), in the interpreter of the spec's client."""
    if spec.is_command:
        raise ValueError("command: a command member is its own program, one per process (members_per_process 1)")
    declared = spec.family
    if declared.host is None or (spec.is_share and not declared.host_runs_share) or spec.is_streams:
        share_hosts = " or ".join(n for n, f in FAMILIES.items() if f.host_runs_share)
        raise ValueError(f"client: members of {spec.client} ({spec.group_protocol}) run one per process; hosted: "
                         f"{', '.join(HOSTED_CLIENTS)} (share members: {share_hosts} only; no Streams instances)")
    if declared.installation.kind == "maven":  # a JVM of KafkaConsumers behind a wrapper in the project's interpreter
        return [sys.executable, "-m", declared.host, "--version", spec.java_version]
    return [str(python_for(spec.client, spec.client_version)), "-m", declared.host]
