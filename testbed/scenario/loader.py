"""Scenario files to models: YAML, ``--set`` overrides, matrix expansion, and errors that name
the file, the field path and the allowed values, before anything starts."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ..errors import ConfigError
from .model import Scenario


@dataclass(frozen=True)
class ScenarioRun:
    """One run of a scenario file: the validated model and the parameters that made it."""

    path: Path
    scenario: Scenario
    parameters: dict[str, Any]

    @property
    def label(self) -> str:
        if not self.parameters:
            return self.scenario.name
        shown = {k: v for k, v in self.parameters.items() if k != "expect"}
        return self.scenario.name + "[" + ",".join(f"{k.split('.')[-1]}={_short(v)}"
                                                   for k, v in shown.items()) + "]"


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "+".join(_short(v) for v in value.values())
    if isinstance(value, list):
        return "+".join(map(str, value))
    return str(value)


def read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such scenario file") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario is a mapping with name, topics, members, fleet, steps, expect")
    return data


def set_path(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``a.b.0.c`` in nested dicts/lists; list indices are numbers."""
    keys = dotted.split(".")
    node: Any = data
    for i, key in enumerate(keys[:-1]):
        nxt = int(key) if isinstance(node, list) else key
        try:
            node = node[nxt]
        except (KeyError, IndexError, TypeError):
            if isinstance(node, dict):
                node[key] = {}
                node = node[key]
            else:
                raise ConfigError(f"--set {dotted}: {'.'.join(keys[:i + 1])} does not exist") from None
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def parse_override(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: expected key=value, e.g. load.rate=1000")
    return key.strip(), yaml.safe_load(raw)


def format_errors(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid scenario ({exc.error_count()} error(s))"]
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        lines.append(f"  {where}: {msg}")
    return "\n".join(lines)


def validate(path: Path, data: dict[str, Any]) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_errors(path, exc)) from None


def expand(path: Path, overrides: list[str] | None = None) -> list[ScenarioRun]:
    """All runs of a scenario file: one per point of its matrix (one if it has none)."""
    data = read_yaml(path)
    for text in overrides or []:
        key, value = parse_override(text)
        set_path(data, key, value)
    validate(path, data)  # the file as written must be valid too, so errors point at it
    runs = []
    for params in matrix_points(path, data.get("matrix")):
        point = copy.deepcopy(data)
        point.pop("matrix", None)
        for key, value in params.items():
            set_path(point, key, value)
        runs.append(ScenarioRun(path, validate(path, point), params))
    return runs


def matrix_points(path: Path, matrix: Any) -> list[dict[str, Any]]:
    """A mapping of dotted path -> values is a cartesian product; a list of mappings names each point
    (for values that must change together, e.g. an assignor and the expectations it owes)."""
    if not matrix:
        return [{}]
    if isinstance(matrix, dict) and all(isinstance(v, list) and v for v in matrix.values()):
        keys = list(matrix)
        return [dict(zip(keys, values)) for values in itertools.product(*(matrix[k] for k in keys))]
    if isinstance(matrix, list) and all(isinstance(p, dict) and p for p in matrix):
        return [dict(p) for p in matrix]
    raise ConfigError(f"{path}: matrix must map dotted paths to non-empty lists of values, or be a list of "
                      "mappings of dotted path -> value (one per run)")


def load(path: Path, overrides: list[str] | None = None) -> ScenarioRun:
    """The single run of a scenario file; a file with a matrix must be run with `testbed matrix`."""
    runs = expand(path, overrides)
    if len(runs) != 1:
        raise ConfigError(f"{path}: has a matrix of {len(runs)} runs; use `testbed matrix {path}` or "
                          f"pick one point with --set")
    return runs[0]
