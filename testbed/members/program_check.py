"""Whether a command member's program can start, checked before a run starts it (and by ``testbed validate``)."""

from __future__ import annotations

import os

from ..errors import ConfigError
from ..instrument.launch import preflight as program_preflight
from .java import agent as java_agent
from .spec import MemberSpec


def check_program(spec: MemberSpec, *, build_agent: bool = True) -> None:
    """A Python program: start its interpreter in the instrumentation's preflight mode (it reports its client and
    exits before the program's first line); the env values are unfilled (nothing runs that reads them). A JVM
    program: its java, its jar and the kafka-clients it carries, read without running it; and, with
    ``build_agent`` (a run; not ``testbed validate``), the agent is built."""
    cwd = os.path.abspath(spec.cwd) if spec.cwd else None
    if cwd is not None and not os.path.isdir(cwd):
        raise ConfigError(f"members.{spec.name}.cwd: {cwd} is not a directory")
    env = {**os.environ, **spec.env}
    if spec.family.program_runtime == "jvm":
        problem = java_agent.preflight(list(spec.command or ()), cwd, env, spec.client_version,
                                       spec.family.instrumented_since or ())
        if problem is None and build_agent:
            java_agent.agent_jar()
    else:
        problem = program_preflight(list(spec.command or ()), cwd, env, spec.client, spec.client_version,
                                    timeout_s=min(spec.start_timeout_s, 60.0))
    if problem is not None:
        raise ConfigError(f"members.{spec.name}.{problem}")
