"""A member's settings and handler checked by its own client library, in its own version, before anything starts.

``python -m testbed.members.preflight --config <MemberConfig JSON>`` runs in the member's interpreter
(``envs.python_for(client, version)``); ``testbed.members.member_checks`` starts it for each spec with a
``client_config`` or a handler and turns its answer into refusals. It builds the settings with the runner's own
builder (``testbed.members.client_settings``) and constructs the client without connecting:

- confluent-kafka: ``Consumer(settings)`` (``ShareConsumer`` for a share member) without bootstrap servers, closed at
  once; librdkafka refuses an unknown property or a bad value at construction (KafkaException), the binding a
  callback that is no function (TypeError) and a share consumer a consumer-group setting (ValueError).
- kafka-python: ``KafkaConsumer(**settings)`` with ``api_version`` given (unless the spec gives one), which is what
  keeps 2.x (``KafkaClient.__init__``: ``check_version``) and 3.x (``KafkaConsumer.__init__``: ``bootstrap``) from
  connecting; the constructor refuses unknown keywords (``Unrecognized configs``) and checks values itself
  (timeouts against each other, the heartbeat against the session, isolation_level, the assignors' protocols).
- aiokafka: ``AIOKafkaConsumer(**settings)`` on an event loop, never started (it connects only in ``start()``); the
  constructor refuses unknown keywords (TypeError) and checks some values (isolation_level, api_version, the
  session against the heartbeat...), then is stopped unstarted.

A client names one problem at a time: the check takes the key out and constructs again, so each bad key is
reported; a message naming no key of ``client_config`` is put on the key without which it goes away.
The handler ('pkg.module:function', ``handler_path`` first on the import path, relative to the working directory)
must import and be callable here, as the runner will load it.

Prints one JSON object: ``{"client": ..., "errors": [{"key": <client_config key or null>, "message": ...}],
"handler": <the import error's text or null>}``. Imports only stdlib, pydantic, the client and testbed.members.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .client_settings import aiokafka_settings, confluent_settings, kafka_python_settings
from .config import MemberConfig

# What the kafka-python consumer is told it talks to, so it need not ask a broker: the oldest Kafka this project runs.
PREFLIGHT_API_VERSION = (3, 9)
Construct = Callable[[dict[str, Any]], "str | None"]


def find_errors(construct: Construct, settings: dict[str, Any], keys: list[str]) -> list[dict[str, str | None]]:
    """Every problem ``construct`` (the client's constructor: its message, or None) finds in ``settings``, each
    with the key of ``keys`` (the spec's client_config) it is about, or None when none is."""
    settings, keys, errors = dict(settings), list(keys), []
    for _ in range(len(keys) + 1):
        message = construct(settings)
        if message is None:
            break
        key = _named(message, keys) or _culprit(construct, settings, keys, message)
        errors.append({"key": key, "message": message})
        if key is None:
            break  # about testbed's settings and the spec's fields together: nothing more to learn here
        del settings[key]
        keys.remove(key)
    return errors


def _named(message: str, keys: list[str]) -> str | None:
    """The longest key the message names (``session.timeout.ms`` before ``timeout.ms``)."""
    return max((k for k in keys if k in message), key=len, default=None)


def _culprit(construct: Construct, settings: dict[str, Any], keys: list[str], message: str) -> str | None:
    for key in keys:
        if construct({k: v for k, v in settings.items() if k != key}) != message:
            return key
    return None


def confluent_construct(share: bool) -> Construct:
    from confluent_kafka import Consumer, KafkaException

    def construct(settings: dict[str, Any]) -> str | None:
        # No bootstrap servers: librdkafka builds the handle and its threads but has no broker to connect to.
        conf = {k: v for k, v in settings.items() if k not in ("bootstrap.servers", "metadata.broker.list")}
        try:
            if share:
                from confluent_kafka import ShareConsumer

                client: Any = ShareConsumer(conf)
            else:
                client = Consumer(conf)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            return err.str() if hasattr(err, "str") else str(exc)
        except (TypeError, ValueError) as exc:
            return str(exc)
        client.close()
        return None

    return construct


def kafka_python_construct(config: MemberConfig) -> Construct:
    from kafka import KafkaConsumer

    from .kafka_python.member import build_assignor

    def construct(settings: dict[str, Any]) -> str | None:
        kwargs = {"api_version": PREFLIGHT_API_VERSION, **settings}
        try:
            if kwargs.get("partition_assignment_strategy"):  # by name, as the runner has them: made into classes
                assignor_config = {k: v for k, v in settings.items() if k != "partition_assignment_strategy"}
                kwargs["partition_assignment_strategy"] = [
                    build_assignor(n, {**assignor_config, "testbed_member_slot": config.slot})
                    for n in kwargs["partition_assignment_strategy"]]
            consumer = KafkaConsumer(**kwargs)
        except SystemExit as exc:  # build_assignor: an assignor this kafka-python lacks
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - whatever the constructor raises is its answer
            return str(exc) or type(exc).__name__
        consumer.close(autocommit=False)
        return None

    return construct


def aiokafka_construct() -> Construct:
    import asyncio

    from aiokafka import AIOKafkaConsumer

    from .aiokafka.member import load_assignor

    async def construct_on_loop(settings: dict[str, Any]) -> str | None:
        kwargs = dict(settings)
        try:
            if kwargs.get("partition_assignment_strategy"):  # by name, as the runner has them: made into classes
                kwargs["partition_assignment_strategy"] = tuple(
                    load_assignor(n) for n in kwargs["partition_assignment_strategy"])
            consumer = AIOKafkaConsumer(**kwargs)
        except SystemExit as exc:  # load_assignor: an assignor this aiokafka lacks
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - whatever the constructor raises is its answer
            return str(exc) or type(exc).__name__
        await consumer.stop()
        return None

    return lambda settings: asyncio.run(construct_on_loop(settings))


def handler_problem(path: str, handler_path: str | None) -> str | None:
    """Why the handler does not load here (the import error's text), or None."""
    if handler_path is not None:
        sys.path.insert(0, os.path.abspath(handler_path))
    module_name, _, attr = path.partition(":")
    try:
        with contextlib.redirect_stdout(sys.stderr):  # the module's prints must not mix with the answer
            module = importlib.import_module(module_name)
    except BaseException as exc:  # noqa: BLE001 - a module may raise anything at import, even SystemExit
        return f"{type(exc).__name__}: {exc}"
    if not hasattr(module, attr):
        return f"AttributeError: module {module_name!r} has no attribute {attr!r}"
    if not callable(getattr(module, attr)):
        return f"TypeError: {path!r} is a {type(getattr(module, attr)).__name__}, not callable"
    return None


def check(config: MemberConfig) -> dict[str, Any]:
    """The answer for one member: the client's errors about its settings, and the handler's import error."""
    spec = config.spec
    keys = list(spec.client_config)
    errors: list[dict[str, str | None]] = []
    if spec.client == "confluent-kafka":
        import confluent_kafka

        client = f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})"
        if keys:
            errors = find_errors(confluent_construct(spec.is_share), confluent_settings(config), keys)
    elif spec.client == "kafka-python":
        import kafka

        client = f"kafka-python {kafka.__version__}"
        if keys:
            errors = find_errors(kafka_python_construct(config), kafka_python_settings(config), keys)
    elif spec.client == "aiokafka":
        import aiokafka
        client = f"aiokafka {aiokafka.__version__}"
        if keys:
            errors = find_errors(aiokafka_construct(), aiokafka_settings(config), keys)
    else:
        raise SystemExit(f"client: the preflight runs Python clients; {spec.client} is checked by "
                         "java/src/check/ConsumerConfigCheck.java (testbed.members.member_checks)")
    handler = handler_problem(spec.handler, spec.handler_path) if spec.handler else None
    return {"client": client, "errors": errors, "handler": handler}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.members.preflight", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="MemberConfig as JSON, or a path to a JSON file")
    args = parser.parse_args(argv)
    text = args.config if args.config.lstrip().startswith("{") else Path(args.config).read_text()
    answer = check(MemberConfig.model_validate(json.loads(text)))
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    code = main()
    # Without waiting for a client's background threads (kafka-python's IO loop) or a handler module's: the
    # answer is written.
    os._exit(code)
