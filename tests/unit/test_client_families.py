"""The client families (testbed.clients): each declared once, and every table that depends on the client read off
that declaration. A toy family shows the claim: registered, the spec's validation and refusals name it with no other
edit."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

from testbed.clients import FAMILIES, FAMILY_NAMES, ClientName, family, names, needed_for, running
from testbed.clients.family import ClientFamily, Installation, Runner, Timeouts
from testbed.members.host import HOST_MODULE

CLIENTS_DIR = Path(__file__).resolve().parents[2] / "testbed" / "clients"
ROOT = CLIENTS_DIR.parents[1]


def runners(declared: ClientFamily) -> list[Runner]:
    return [r for r in (declared.member, declared.share, declared.streams) if r is not None]


def module_source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"{module} does not exist"
    return Path(spec.origin).read_text()


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_each_declared_runner_and_member_class_exists(name: str) -> None:
    """Found without importing it: a runner imports its client library, which only its own venv may hold."""
    declared = FAMILIES[name]
    assert declared.name == name
    for runner in runners(declared):
        source = module_source(runner.module)
        if runner.member_class is not None:
            classes = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef)}
            assert runner.member_class in classes, f"{runner.module} has no class {runner.member_class}"
    if declared.host is not None:
        module_source(declared.host)
    if declared.host == HOST_MODULE:  # the Python host runs each member's class in a thread
        assert declared.member.member_class is not None
        assert not declared.host_runs_share or declared.share.member_class is not None


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_each_declaration_is_coherent(name: str) -> None:
    declared = FAMILIES[name]
    assert declared.installation.kind in ("pip", "maven")
    assert set(declared.group_protocols) <= {"classic", "consumer", "share", "streams"}
    assert "classic" in declared.group_protocols
    assert (declared.share is not None) == declared.runs("share")
    assert not declared.host_runs_share or declared.share is not None
    assert declared.default_version is None or declared.supports_series(declared.default_version)
    assert declared.classic_assignors and len(set(declared.classic_assignors)) == len(declared.classic_assignors)


def test_the_tables_of_every_layer_are_read_off_the_declarations() -> None:
    from testbed.history.events import Started
    from testbed.instrument.launch import SUPPORTED
    from testbed.instrument.preflight_report import CLIENT_DISTRIBUTIONS
    from testbed.members.defaults import HEARTBEAT_SETTINGS, default_timeouts
    from testbed.members.envs import PYTHON_CLIENTS
    from testbed.members.launch import RUNNER_MODULES, SHARE_RUNNER_MODULES
    from testbed.members.owned_settings import owned_settings
    from testbed.members.spec import (DEFAULT_JAVA_VERSION, HANDLER_CLIENTS, HOSTED_CLIENTS, PROGRAM_CLIENTS,
                                      SHARE_CLIENTS, SUPPORTED_ASSIGNORS, MemberSpec)
    from testbed.scenario.roster import STALLABLE_CLIENTS

    assert get_args(ClientName) == FAMILY_NAMES == ("confluent-kafka", "kafka-python", "aiokafka", "java")
    assert MemberSpec.model_json_schema()["properties"]["client"]["enum"] == list(FAMILY_NAMES)
    assert get_args(Started.model_fields["client"].annotation) == FAMILY_NAMES
    assert RUNNER_MODULES == {n: f.member.module for n, f in FAMILIES.items()}
    assert set(SHARE_RUNNER_MODULES) == set(SHARE_CLIENTS) == set(running("share"))
    assert HOSTED_CLIENTS == names(lambda f: f.hosted) == FAMILY_NAMES
    assert STALLABLE_CLIENTS == HANDLER_CLIENTS == ("confluent-kafka", "kafka-python", "aiokafka")
    assert PROGRAM_CLIENTS == FAMILY_NAMES  # Python programs under testbed.instrument, JVM ones under the Java agent
    assert {n: f.program_runtime for n, f in FAMILIES.items() if f.program} == {
        "confluent-kafka": "python", "kafka-python": "python", "aiokafka": "python", "java": "jvm"}
    assert tuple(SUPPORTED) == CLIENT_DISTRIBUTIONS == names(lambda f: f.program and f.program_runtime == "python")
    assert PYTHON_CLIENTS == names(lambda f: f.installation.kind == "pip")
    assert DEFAULT_JAVA_VERSION == family("java").default_version
    for name, declared in FAMILIES.items():
        assert SUPPORTED_ASSIGNORS[name][:len(declared.classic_assignors)] == declared.classic_assignors
        assert HEARTBEAT_SETTINGS[name] == (declared.timeouts.heartbeat_key, declared.timeouts.heartbeat_interval_ms)
        assert default_timeouts(name, None) == (declared.timeouts.session_timeout_ms,
                                                declared.timeouts.max_poll_interval_ms)
        assert owned_settings(name) == declared.owned_settings and owned_settings(name)  # each owns its settings
        assert owned_settings(name, share=True) == (declared.owned_share_settings or declared.owned_settings)


def test_the_registry_runs_as_python_3_8_on_the_stdlib_alone() -> None:
    """The instrumentation imports it in a user's program's interpreter, the runners in their virtualenvs."""
    for path in sorted(CLIENTS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level:
                assert node.module in sys.stdlib_module_names or node.module == "__future__", (path, node.module)
            if isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in sys.stdlib_module_names for a in node.names), path


def test_refusals_name_the_families_that_can() -> None:
    assert needed_for("consumer") == "confluent-kafka >= 2.12 or java"
    assert needed_for("share") == "confluent-kafka >= 2.15 or java >= 4.1"
    with pytest.raises(KeyError, match="one of confluent-kafka, kafka-python, aiokafka, java; got 'nope'"):
        family("nope")


TOY = """
from typing import Literal
import testbed.clients as clients
from testbed.clients.family import ClientFamily, Installation, Runner, Timeouts
from testbed.clients.owned import Owner
toy = ClientFamily(
    name="toy", member=Runner("toy_runner"), installation=Installation("pip", "toy-kafka"),
    timeouts=Timeouts(session_timeout_ms=20_000, max_poll_interval_ms=60_000, heartbeat_key="hb",
                      heartbeat_interval_ms=1_000),
    classic_assignors=("range",), group_protocols={"classic": (), "share": (1, 5)}, static_since=(1, 1),
    owned_settings={"hb": Owner("testbed's heartbeat", "leave it to the toy")})
clients.FAMILIES = {**clients.FAMILIES, "toy": toy}
clients.FAMILY_NAMES = tuple(clients.FAMILIES)
clients.ClientName = Literal[clients.FAMILY_NAMES]

from testbed.members.spec import MemberSpec

def refusal(**fields):
    try:
        MemberSpec(**fields)
    except ValueError as exc:
        return str(exc)
    return None

print(json.dumps({
    "accepted": refusal(client="toy", assignors=["range"], client_version="1.6", static=True),
    "assignor": refusal(client="toy", assignors=["roundrobin"]),
    "consumer": refusal(client="toy", group_protocol="consumer"),
    "static": refusal(client="toy", client_version="1.0", static=True),
    "poll": refusal(client="toy", max_poll_interval_ms=15_000),
    "share_elsewhere": refusal(client="kafka-python", group_protocol="share"),
    "share_old": refusal(client="toy", group_protocol="share", client_version="1.4"),
    "handler": refusal(client="toy", handler="pkg.mod:handle"),
    "owned": refusal(client="toy", client_config={"hb": 5, "fetch": 1}),
}))
"""


def test_a_new_family_is_picked_up_by_the_spec_without_other_edits() -> None:
    """A toy family registered before the spec is imported (a fresh interpreter): the spec accepts it, and every
    refusal takes its allowed values from the declarations."""
    out = subprocess.run([sys.executable, "-c", "import json\n" + textwrap.dedent(TOY)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["accepted"] is None
    assert "unknown assignor 'roundrobin' for toy; supported: range" in found["assignor"]
    assert ("group_protocol: toy supports only 'classic', 'share'; 'consumer' (KIP-848) needs confluent-kafka >= "
            "2.12 or java") in found["consumer"]
    assert "static: toy 1.0 has no group_instance_id (static membership, KIP-345, from toy 1.1)" in found["static"]
    assert "below the session timeout (20000 ms)" in found["poll"]
    assert "'share' (KIP-932) needs confluent-kafka >= 2.15 or java >= 4.1 or toy >= 1.5" in found["share_elsewhere"]
    assert "client_version: toy 1.4 has no share consumer; group_protocol 'share' needs toy >= 1.5" in found["share_old"]
    assert "(confluent-kafka, kafka-python, aiokafka); this spec is toy (classic)" in found["handler"]
    assert found["owned"].count("client_config.") == 1
    assert "client_config.hb: set by testbed (testbed's heartbeat); leave it to the toy" in found["owned"]


def test_a_toy_registry_is_read_by_the_lookups() -> None:
    toy = ClientFamily(name="toy", member=Runner("toy_runner"), installation=Installation("pip", "toy-kafka"),
                       timeouts=Timeouts(20_000, 60_000, "hb", 1_000), classic_assignors=("range",),
                       group_protocols={"classic": (), "consumer": (3,)}, stall=True)
    registry = {**FAMILIES, "toy": toy}
    assert needed_for("consumer", registry) == "confluent-kafka >= 2.12 or java or toy >= 3"
    assert names(lambda f: f.stall, registry) == ("confluent-kafka", "kafka-python", "aiokafka", "toy")
    assert family("toy", registry) is toy
