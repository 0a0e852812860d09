"""How to start a member: the command line of its runner, for the fleet to spawn.

Start it with ``start_new_session=True`` and signal the process group (``os.killpg``): SIGTERM
is a clean stop; SIGSTOP/SIGCONT pause and resume; SIGKILL kills, leaving the history intact up
to its last line. For the Java runner the group also holds the JVM.
"""

from __future__ import annotations

import sys

from .config import MemberConfig
from .envs import prepare, python_for
from .wheels import check_client_available

RUNNER_MODULES = {
    "confluent-kafka": "testbed.members.confluent",
    "kafka-python": "testbed.members.kafka_python",
    "java": "testbed.members.java",
}


def prepare_member(config: MemberConfig) -> None:
    """Everything that can fail before a run starts: the version exists, its install is built."""
    check_client_available(config.spec)
    prepare(config.spec.client, config.spec.client_version)


def runner_command(config: MemberConfig) -> list[str]:
    spec = config.spec
    # The Java runner is plain Python driving a JVM: it runs in the project's own interpreter.
    python = sys.executable if spec.client == "java" else str(python_for(spec.client, spec.client_version))
    return [python, "-m", RUNNER_MODULES[spec.client], "--config", config.model_dump_json()]
