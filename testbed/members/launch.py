"""How to start a member: the one place that readies a client install and builds a runner's command line.

Start the command with ``start_new_session=True`` and signal the process group (``os.killpg``): SIGTERM
is a clean stop; SIGSTOP/SIGCONT pause and resume; SIGKILL kills, leaving the history intact up to
its last line. For the Java runner the group also holds the JVM.
"""

from __future__ import annotations

import sys

from ..errors import ConfigError
from .config import MemberConfig
from .envs import prepare, python_for
from .member_checks import check_member
from .spec import HOSTED_CLIENTS, MemberSpec
from .wheels import check_client_available

RUNNER_MODULES = {
    "confluent-kafka": "testbed.members.confluent",
    "kafka-python": "testbed.members.kafka_python",
    "java": "testbed.members.java",
}
# Share-group members (KIP-932) run a share consumer of their own runner.
SHARE_RUNNER_MODULES = {
    "confluent-kafka": "testbed.members.confluent_share",
    "java": "testbed.members.java_share",
}


def runner_module(spec: MemberSpec) -> str:
    return (SHARE_RUNNER_MODULES if spec.is_share else RUNNER_MODULES)[spec.client]


def prepare_spec(spec: MemberSpec) -> None:
    """Everything that can fail before a member starts: the version exists as a wheel, its install is built."""
    check_client_available(spec)
    prepare(spec.client, spec.client_version, spec.is_share)
    if problems := check_member(spec):  # client_config and handler, checked by the client in its own version
        raise ConfigError("\n".join(problems))


def runner_command(config: MemberConfig, config_arg: str | None = None) -> list[str]:
    """The runner's command line; ``config_arg`` is the path of the config as a JSON file (default: inline JSON)."""
    spec = config.spec
    # The Java runner is plain Python driving a JVM: it runs in the project's own interpreter.
    python = sys.executable if spec.client == "java" else str(python_for(spec.client, spec.client_version))
    return [python, "-m", runner_module(spec), "--config", config_arg or config.model_dump_json()]


def host_command(spec: MemberSpec) -> list[str]:
    """A member host's command line (``testbed.members.host``), in the interpreter of the spec's client."""
    if spec.client not in HOSTED_CLIENTS or (spec.is_share and spec.client == "java"):
        raise ValueError(f"client: members of {spec.client} ({spec.group_protocol}) run one per process; hosted: "
                         f"{', '.join(HOSTED_CLIENTS)} (share members: confluent-kafka only)")
    if spec.client == "java":  # a JVM of KafkaConsumers behind a wrapper in the project's interpreter
        return [sys.executable, "-m", "testbed.members.java_host", "--version", spec.java_version]
    return [str(python_for(spec.client, spec.client_version)), "-m", "testbed.members.host"]
