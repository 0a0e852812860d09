"""Loading the instrumentation into a program's interpreter: sitecustomize, lazy patches, failures, preflight.

Each test starts a real Python (this venv's: it has both clients) with the environment
``testbed.instrument.launch.instrumented_env`` gives, and a small program printing what it sees.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import aiokafka
import kafka

import testbed
from testbed.instrument.confluent import client_version
from testbed.instrument.launch import SITE_DIR, check_report, instrumented_env, preflight
from testbed.cache import import_root

INSTRUMENT_DIR = SITE_DIR.parent
PROGRAM_SIDE = sorted(p for p in INSTRUMENT_DIR.rglob("*.py") if p.name != "launch.py")


def run_program(code: str, tmp_path: Path, *, config: dict | None = None, extra_path: list[Path] | None = None,
                env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TESTBED_INSTRUMENT")}
    if extra_path:
        base["PYTHONPATH"] = os.pathsep.join(str(p) for p in extra_path)
    config_path = tmp_path / "config.json"
    if config is not None:
        config_path.write_text(json.dumps(config))
    child = {**base, **instrumented_env(config_path, base), **(env or {})}
    if config is None:
        del child["TESTBED_INSTRUMENT"]
    return subprocess.run([sys.executable, "-c", code], env=child, capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)


def last_json(out: subprocess.CompletedProcess) -> dict:
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def config_for(tmp_path: Path) -> dict:
    return {"member_id": "m0", "history_path": str(tmp_path / "history" / "m0.jsonl")}


SEES = """
import json, sys
{imports}
print(json.dumps({{"hooks": "testbed.instrument.hooks" in sys.modules,
                  "confluent": "confluent_kafka" in sys.modules, "kafka": "kafka" in sys.modules, **{extra}}}))
"""


def test_a_program_that_imports_no_client_gets_none_imported_and_no_history(tmp_path: Path) -> None:
    seen = last_json(run_program(SEES.format(imports="", extra="{}"), tmp_path, config=config_for(tmp_path)))
    assert seen == {"hooks": True, "confluent": False, "kafka": False}
    assert not (tmp_path / "history").exists()


def test_the_clients_are_patched_as_the_program_imports_them(tmp_path: Path) -> None:
    imports = ("from confluent_kafka import Consumer\nfrom kafka import KafkaConsumer\n"
               "import confluent_kafka, kafka.consumer, kafka.consumer.group")
    extra = ("{'consumer': Consumer.__mro__[1].__name__, 'c_type': type(Consumer.__mro__[1]).__name__,"
             " 'same': KafkaConsumer is kafka.KafkaConsumer is kafka.consumer.KafkaConsumer"
             " is kafka.consumer.group.KafkaConsumer,"
             " 'kafka_base': KafkaConsumer.__mro__[1].__module__, 'patched': Consumer.__module__}")
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path, config=config_for(tmp_path)))
    assert seen["consumer"] == "Consumer" and seen["patched"] == "testbed.instrument.confluent"
    assert seen["same"] is True and seen["kafka_base"] == "kafka.consumer.group"


def test_the_deserializing_consumer_is_patched_and_isinstance_answers_as_before(tmp_path: Path) -> None:
    imports = ("from confluent_kafka import Consumer, DeserializingConsumer\n"
               "from confluent_kafka.cimpl import Consumer as CType\n"
               "d = DeserializingConsumer({'group.id': 'g'})\n"
               "c = Consumer({'group.id': 'g'})")
    extra = ("{'patched': type(d).__module__, 'is_consumer': isinstance(d, Consumer) and isinstance(c, CType),"
             " 'subscripted': DeserializingConsumer[str, bytes] is DeserializingConsumer}")
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path, config=config_for(tmp_path)))
    assert seen["patched"] == "testbed.instrument.confluent"
    assert seen["is_consumer"] is True and seen["subscripted"] is True


def test_a_submodule_imported_first_is_patched_too(tmp_path: Path) -> None:
    imports = "from kafka.consumer.group import KafkaConsumer"
    extra = "{'patched': KafkaConsumer.__module__}"
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path, config=config_for(tmp_path)))
    assert seen["patched"] == "testbed.instrument.kafka_python"


def test_the_client_reads_its_own_package_files_through_the_real_loader(tmp_path: Path) -> None:
    """kafka-python 3 reads its protocol schemas with importlib.resources, which asks the package's loader."""
    imports = "import kafka, importlib.resources\nfiles = importlib.resources.files('kafka')"
    extra = "{'loader': type(kafka.__spec__.loader).__name__, 'readable': files.joinpath('__init__.py').is_file()}"
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path, config=config_for(tmp_path)))
    assert seen["loader"] == "SourceFileLoader" and seen["readable"] is True


def test_without_a_config_nothing_is_installed(tmp_path: Path) -> None:
    imports = "from confluent_kafka import Consumer"
    extra = "{'patched': Consumer.__module__}"
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path))
    assert seen["hooks"] is False and seen["patched"] != "testbed.instrument.confluent"


def test_the_sitecustomize_it_hides_still_runs(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import builtins\nbuiltins.OTHER_SITECUSTOMIZE = __file__\n")
    code = "import builtins, json; print(json.dumps(getattr(builtins, 'OTHER_SITECUSTOMIZE', None)))"
    for config in (config_for(tmp_path), None):
        out = run_program(code, tmp_path, config=config, extra_path=[other])
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == str(other / "sitecustomize.py")


def test_the_instrumentation_imports_only_the_stdlib_and_itself(tmp_path: Path) -> None:
    """It runs in the program's interpreter: no pydantic, no testbed module outside testbed.instrument but the client
    families' declarations (testbed.clients, stdlib only)."""
    code = ("import sys, json\n"
            "import confluent_kafka, kafka\n"
            "from testbed.instrument import confluent, kafka_python, processed\n"
            "print(json.dumps(sorted(sys.modules)))")
    plain = set(last_json(run_program(code.replace("from testbed.instrument import confluent, kafka_python, "
                                                   "processed\n", ""), tmp_path)))
    instrumented = set(last_json(run_program(code, tmp_path, config=config_for(tmp_path))))
    added = {name for name in instrumented - plain if name.split(".")[0] not in sys.stdlib_module_names}
    assert {name for name in added if not name.startswith(("testbed.instrument", "testbed.clients."))} <= {
        "testbed", "testbed.clients"}
    assert "pydantic" not in instrumented


def test_the_program_side_parses_as_python_3_8() -> None:
    """A program's interpreter may be older than testbed's; only launch.py runs in testbed's."""
    assert len(PROGRAM_SIDE) > 10
    for path in PROGRAM_SIDE:
        ast.parse(path.read_text(), filename=str(path), feature_version=(3, 8))


def test_a_config_that_cannot_be_read_is_said_and_the_program_runs(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{not json")
    code = "print('program ran')"
    child = {**os.environ, **instrumented_env(tmp_path / "config.json", os.environ)}
    out = subprocess.run([sys.executable, "-c", code], env=child, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "program ran"
    assert "testbed instrument: loading failed: JSONDecodeError" in out.stderr


def test_a_failed_patch_is_said_recorded_as_fatal_and_the_program_runs_unpatched(tmp_path: Path) -> None:
    fake = tmp_path / "fake"
    (fake / "confluent_kafka").mkdir(parents=True)
    (fake / "confluent_kafka" / "__init__.py").write_text("Consumer = None  # not a class: cannot be subclassed\n")
    config = config_for(tmp_path)
    out = run_program("import confluent_kafka; print(confluent_kafka.Consumer)", tmp_path, config=config,
                      extra_path=[fake])
    assert out.returncode == 0 and out.stdout.strip() == "None"
    assert "testbed instrument: patching confluent_kafka failed" in out.stderr
    (event,) = [json.loads(line) for line in Path(config["history_path"]).read_text().splitlines()]
    assert (event["name"], event["code"], event["fatal"], event["source"]) == ("error", "INSTRUMENT_FAILED", True,
                                                                                "m0")


def test_a_module_of_the_programs_own_named_like_a_client_is_left_alone(tmp_path: Path) -> None:
    own = tmp_path / "own"
    (own / "kafka").mkdir(parents=True)
    (own / "kafka" / "__init__.py").write_text("NAME = 'its own kafka package'\n")
    out = run_program("import kafka; print(kafka.NAME)", tmp_path, config=config_for(tmp_path), extra_path=[own])
    assert out.returncode == 0 and out.stdout.strip() == "its own kafka package"
    assert "testbed instrument" not in out.stderr and not (tmp_path / "history").exists()


def test_preflight_mode_reports_the_interpreter_and_exits_before_the_program(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    out = run_program("open('ran', 'w').write('the program ran')", tmp_path,
                      env={"TESTBED_INSTRUMENT_PREFLIGHT": str(report)})
    assert out.returncode == 0 and not (tmp_path / "ran").exists()
    seen = json.loads(report.read_text())
    assert seen["python"] == sys.executable and seen["version"] == ".".join(map(str, sys.version_info[:3]))
    assert seen["clients"] == {"confluent-kafka": client_version(), "kafka-python": kafka.__version__,
                               "aiokafka": aiokafka.__version__}


def test_instrumented_env_puts_the_site_dir_and_testbeds_import_root_first(tmp_path: Path) -> None:
    env = instrumented_env(tmp_path / "c.json", {"PYTHONPATH": "/theirs"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(SITE_DIR), str(import_root()), "/theirs"]
    assert env["TESTBED_INSTRUMENT"] == str(tmp_path / "c.json") and env["PYTHONUNBUFFERED"] == "1"
    assert instrumented_env(tmp_path / "c.json", {})["PYTHONPATH"] == os.pathsep.join([str(SITE_DIR),
                                                                                       str(import_root())])
    # The import root offers testbed and nothing else: the program's own packages are not shadowed.
    assert [p.name for p in import_root().iterdir() if not p.name.startswith(".")] == ["testbed"]
    assert (import_root() / "testbed").resolve() == Path(testbed.__file__).resolve().parent


def test_preflight_accepts_an_interpreter_with_the_client(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "open('ran', 'w')"]
    assert preflight(command, tmp_path, os.environ, "confluent-kafka", None) is None
    assert preflight(command, tmp_path, os.environ, "kafka-python", kafka.__version__) is None
    assert not (tmp_path / "ran").exists()
    refused = preflight(command, tmp_path, os.environ, "confluent-kafka", "2.3.0")
    assert refused is not None and f"has confluent-kafka {client_version()}" in refused


def test_preflight_says_when_no_python_reported(tmp_path: Path) -> None:
    exited = preflight([sys.executable, "-I", "-c", "print('isolated'); raise SystemExit(4)"], tmp_path,
                       os.environ, "kafka-python", None)
    assert exited is not None and "exited with 4 before" in exited and "isolated" in exited
    silent = preflight([sys.executable, "-I", "-c", "import time; print('waiting', flush=True); time.sleep(60)"],
                       tmp_path, os.environ, "kafka-python", None, timeout_s=1.5)
    assert silent is not None and silent.startswith("command: it did not start a Python interpreter with testbed's "
                                                    "instrumentation (no sitecustomize report within 2s)")
    assert "waiting" in silent
    missing = preflight(["/nonexistent/python"], tmp_path, os.environ, "kafka-python", None)
    assert missing is not None and "could not start" in missing


def test_check_report_names_what_was_found() -> None:
    report = {"python": "/x/bin/python", "version": "3.9.18", "clients": {"kafka-python": "1.4.7",
                                                                          "confluent-kafka": None}}
    assert check_report(report, "kafka-python", None) == (
        "command: its interpreter /x/bin/python has kafka-python 1.4.7; testbed instruments kafka-python >= 2.0.2")
    assert check_report(report, "confluent-kafka", None) == (
        "command: its interpreter /x/bin/python (Python 3.9.18) has no confluent-kafka (it has kafka-python 1.4.7); "
        "testbed instruments confluent-kafka >= 2.0")
    ok = {"python": "/x", "clients": {"kafka-python": "2.0.2", "confluent-kafka": "2.16.1"}}
    assert check_report(ok, "kafka-python", None) is None
    assert check_report(ok, "confluent-kafka", "2.16.1") is None
    assert "client_version 2.12.0" in check_report(ok, "confluent-kafka", "2.12.0")


def test_aiokafka_is_patched_under_every_name_a_program_imports_it_by(tmp_path: Path) -> None:
    imports = ("import aiokafka, aiokafka.consumer, aiokafka.consumer.consumer\n"
               "from aiokafka import AIOKafkaConsumer")
    extra = ("{'patched': AIOKafkaConsumer.__module__, 'same': AIOKafkaConsumer is aiokafka.consumer.AIOKafkaConsumer"
             " is aiokafka.consumer.consumer.AIOKafkaConsumer, 'base': AIOKafkaConsumer.__mro__[1].__module__}")
    seen = last_json(run_program(SEES.format(imports=imports, extra=extra), tmp_path, config=config_for(tmp_path)))
    assert seen["patched"] == "testbed.instrument.aiokafka_consumer"
    assert seen["same"] is True and seen["base"] == "aiokafka.consumer.consumer"
