"""What the instrumentation reads from its environment: which member it is and where its history goes.

``TESTBED_INSTRUMENT`` holds the path of a JSON file: a ``MemberConfig`` as the fleet dumps it
(``model_dump(mode="json")``) or, for ``testbed instrument`` outside a scenario, a smaller object
``{"member_id": ..., "history_path": ..., "command": [...]}``. Only the fields below are read, with the
stdlib: this module runs in the program's interpreter, which has neither pydantic nor testbed's venv.
"""

from __future__ import annotations

import json
import os
from typing import Any, List, Optional, Tuple

CONFIG_ENV = "TESTBED_INSTRUMENT"
PREFLIGHT_ENV = "TESTBED_INSTRUMENT_PREFLIGHT"


class InstrumentConfig:
    """The fields of the member's config the instrumented program needs."""

    __slots__ = ("member_id", "history_path", "spec_name", "command")

    def __init__(self, member_id: str, history_path: str, spec_name: Optional[str] = None,
                 command: Optional[List[str]] = None) -> None:
        self.member_id = member_id
        self.history_path = history_path
        self.spec_name = spec_name
        self.command = command

    def __repr__(self) -> str:
        return f"InstrumentConfig(member_id={self.member_id!r}, history_path={self.history_path!r})"


def parse_config(obj: Any) -> InstrumentConfig:
    """The config from its decoded JSON; ``history_path`` is required, the rest has defaults."""
    if not isinstance(obj, dict):
        raise ValueError(f"the config must be a JSON object, got {type(obj).__name__}")
    history_path = obj.get("history_path")
    if not isinstance(history_path, str) or not history_path:
        raise ValueError("the config has no history_path")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    command = spec.get("command") if spec.get("command") is not None else obj.get("command")
    member_id = obj.get("member_id")
    return InstrumentConfig(
        # Without a member id the events still need a source: the process is the best name there is.
        member_id=member_id if isinstance(member_id, str) and member_id else f"program-{os.getpid()}",
        history_path=history_path,
        spec_name=spec.get("name") if isinstance(spec.get("name"), str) else None,
        command=[str(a) for a in command] if isinstance(command, list) else None,
    )


def read_config(path: str) -> InstrumentConfig:
    with open(path, encoding="utf-8") as f:
        return parse_config(json.load(f))


def failure_target(path: str) -> Optional[Tuple[str, str]]:
    """(history path, member id) read as leniently as possible, to report that the rest could not be read;
    None when not even the history path can be found."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
        history_path, member_id = obj.get("history_path"), obj.get("member_id")
    except Exception:  # noqa: BLE001 - no history to write to is an answer too
        return None
    if not isinstance(history_path, str) or not history_path:
        return None
    return history_path, member_id if isinstance(member_id, str) and member_id else f"program-{os.getpid()}"
