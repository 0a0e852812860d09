"""Loading the instrumentation into a program: patch the clients as the program imports them.

``install()`` (called by ``testbed/instrument/site/sitecustomize.py`` when ``TESTBED_INSTRUMENT`` is set)
reads the config, installs the stall signals, registers the exit flush and puts a finder first on
``sys.meta_path``. The finder acts on three imports only, ``confluent_kafka``, ``kafka`` and ``aiokafka``: it lets
the real finders find the module, and once the module has run it replaces

- ``confluent_kafka.Consumer`` (and ``confluent_kafka.DeserializingConsumer``, which derives from the C type, not
  from the name) by ``testbed.instrument.confluent``'s subclasses,
- ``kafka.KafkaConsumer``, ``kafka.consumer.KafkaConsumer`` and ``kafka.consumer.group.KafkaConsumer`` by
  ``testbed.instrument.kafka_python``'s subclass,
- ``aiokafka.AIOKafkaConsumer`` (and its ``aiokafka.consumer`` names) by ``testbed.instrument.aiokafka_consumer``'s,

before the program's ``from confluent_kafka import Consumer`` reads them. A program that imports neither
pays nothing, and no client is imported before the program imports it. A client already imported
when ``install()`` runs is patched at once.

A failure of ours is never the program's: it is said on stderr (``testbed instrument: ...``) and written as an
``error`` ``INSTRUMENT_FAILED`` (fatal: the program then runs without instrumentation).
"""

from __future__ import annotations

import atexit
import importlib.abc
import os
import sys
from typing import Any, Callable, Dict, Optional, Sequence

from . import state
from .config import CONFIG_ENV, failure_target, read_config
from .history import MemberHistoryFile
from .stacks import install_stack_dump
from .stall import install_stall_signals
from .state import FAILURE_CODE, Instrumentation, say


def patch_confluent(module: Any, inst: Instrumentation) -> None:
    if not hasattr(module, "Consumer"):
        return  # a module of the program's own that happens to have the client's name: not ours to patch
    from .confluent import make_consumer_class

    module.Consumer = make_consumer_class(module.Consumer, inst)
    # The library's own consumer subclass (schema-registry programs use it) derives from the C type directly.
    # Only the package's name is replaced: its module's own global must stay the class, which its methods name
    # in super(DeserializingConsumer, self) (a program importing it from confluent_kafka.deserializing_consumer
    # gets the uninstrumented class).
    original = getattr(module, "DeserializingConsumer", None)
    if isinstance(original, type):
        module.DeserializingConsumer = make_consumer_class(original, inst)


def patch_kafka(module: Any, inst: Instrumentation) -> None:
    if not hasattr(module, "KafkaConsumer"):
        return  # e.g. a package of the program's named kafka: not kafka-python
    from .kafka_python import make_consumer_class

    original = module.KafkaConsumer
    patched = make_consumer_class(original, inst)
    module.KafkaConsumer = patched
    for name in ("kafka.consumer", "kafka.consumer.group"):
        sub = sys.modules.get(name)
        if sub is not None and getattr(sub, "KafkaConsumer", None) is original:
            sub.KafkaConsumer = patched


def patch_aiokafka(module: Any, inst: Instrumentation) -> None:
    if not hasattr(module, "AIOKafkaConsumer"):
        return  # a package of the program's named aiokafka
    from .aiokafka_consumer import make_consumer_class

    original = module.AIOKafkaConsumer
    patched = make_consumer_class(original, inst)
    module.AIOKafkaConsumer = patched
    for name in ("aiokafka.consumer", "aiokafka.consumer.consumer"):  # FastStream imports it from there
        sub = sys.modules.get(name)
        if sub is not None and getattr(sub, "AIOKafkaConsumer", None) is original:
            sub.AIOKafkaConsumer = patched


PATCHES: Dict[str, Callable[[Any, Instrumentation], None]] = {
    "confluent_kafka": patch_confluent,
    "kafka": patch_kafka,
    "aiokafka": patch_aiokafka,
}


class _PatchingLoader(importlib.abc.Loader):
    """The real loader, then the patch; everything else (resources, code) is the real loader's."""

    def __init__(self, real: Any, patch: Callable[[Any], None]) -> None:
        self._real = real
        self._patch = patch

    def create_module(self, spec: Any) -> Any:
        return self._real.create_module(spec)

    def exec_module(self, module: Any) -> None:
        # The module sees its real loader (importlib.resources asks it for the package's files).
        spec = getattr(module, "__spec__", None)
        if spec is not None:
            spec.loader = self._real
        module.__loader__ = self._real
        self._real.exec_module(module)
        self._patch(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class ClientFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: finds nothing itself, wraps the loader of the two client packages."""

    def __init__(self, patches: Dict[str, Callable[[Any], None]]) -> None:
        self._patches = patches

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Any:
        patch = self._patches.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _PatchingLoader(spec.loader, patch)
                return spec
        return None


def guarded(inst: Instrumentation, name: str, patch: Callable[[Any, Instrumentation], None]) -> Callable[[Any], None]:
    def run(module: Any) -> None:
        try:
            patch(module, inst)
        except Exception as exc:  # noqa: BLE001 - the program runs on, uninstrumented
            inst.failed(f"patching {name}", exc, fatal=True)
    return run


def install(config_path: Optional[str] = None) -> Optional[Instrumentation]:
    """Instrument this process with the config at ``config_path`` (default: $TESTBED_INSTRUMENT)."""
    path = config_path or os.environ.get(CONFIG_ENV)
    if not path:
        return None
    try:
        inst = Instrumentation(read_config(path))
    except Exception as exc:  # noqa: BLE001
        report_load_failure(path, exc)
        return None
    try:
        install_stall_signals()
        install_stack_dump()
        atexit.register(inst.at_exit)
        patches = {name: guarded(inst, name, patch) for name, patch in PATCHES.items()}
        for name, patch in patches.items():
            if name in sys.modules:  # imported before us (another sitecustomize, a .pth file)
                patch(sys.modules[name])
        sys.meta_path.insert(0, ClientFinder(patches))
        state.CURRENT = inst
        return inst
    except Exception as exc:  # noqa: BLE001
        inst.failed("loading", exc, fatal=True)
        return None


def report_load_failure(config_path: str, exc: BaseException) -> None:
    """A failure before there is an Instrumentation: stderr, and the history when it can be found."""
    message = f"loading failed: {type(exc).__name__}: {exc}"
    say(message + "; the program runs without instrumentation")
    target = failure_target(config_path)
    if target is None:
        return
    try:
        MemberHistoryFile(*target).error(FAILURE_CODE, message, fatal=True)
    except Exception as write_exc:  # noqa: BLE001
        say(f"could not write to {target[0]}: {write_exc}")


def processed(records: Any) -> None:
    """``testbed.instrument.processed``: the program marks records it has processed."""
    inst = state.CURRENT
    if inst is None:
        return
    try:
        inst.trackers.mark(records)
    except Exception as exc:  # noqa: BLE001
        inst.failed("processed()", exc)


__all__ = ["ClientFinder", "install", "processed"]
