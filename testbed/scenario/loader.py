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
from .refusals import describe_errors
from .yamlfile import read_yaml


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


def set_path(data: dict[str, Any], dotted: str, value: Any, source: str = "--set") -> None:
    """Set ``a.b.0.c`` in nested dicts/lists; list indices are numbers. Missing mappings are created (a
    field the file leaves at its default), list items are not: a path can change a step, not add one."""
    keys = dotted.split(".")
    node: Any = data
    for i, key in enumerate(keys):
        where = ".".join(keys[:i + 1])
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                raise ConfigError(f"{source} {dotted}: {where} is not an item of the list "
                                  f"{'.'.join(keys[:i])}, which has items 0..{len(node) - 1}")
            key = int(key)  # type: ignore[assignment]
        elif not isinstance(node, dict):
            raise ConfigError(f"{source} {dotted}: {'.'.join(keys[:i])} is {node!r}, not a mapping or a list")
        elif key not in node and i < len(keys) - 1:
            if keys[i + 1].isdigit():
                raise ConfigError(f"{source} {dotted}: {where} is not in the file, so it has no item {keys[i + 1]}")
            node[key] = {}
        if i == len(keys) - 1:
            node[key] = value
        else:
            node = node[key]


def parse_override(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise ConfigError(f"--set {text!r}: expected key=value, e.g. load.rate=1000")
    try:
        return key.strip(), yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ConfigError(f"--set {text!r}: the value is not valid YAML ({getattr(exc, 'problem', exc)})") from None


def format_errors(path: Path, exc: ValidationError, where: str = "") -> str:
    lines = describe_errors(exc, Scenario)
    return "\n".join([f"{path}: invalid scenario{where} ({len(lines)} error(s))", *(f"  {line}" for line in lines)])


def validate(path: Path, data: dict[str, Any], where: str = "") -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_errors(path, exc, where)) from None


def expand(path: Path, overrides: list[str] | None = None) -> list[ScenarioRun]:
    """All runs of a scenario file: one per point of its matrix (one if it has none)."""
    data = read_yaml(path)
    overridden: set[str] = set()
    for text in overrides or []:
        key, value = parse_override(text)
        set_path(data, key, value)
        overridden.add(key)
    points = _without(matrix_points(path, data.get("matrix")), overridden)
    validate(path, data)  # the file as written must be valid too, so errors point at it
    runs = []
    for i, params in enumerate(points):
        point = copy.deepcopy(data)
        point.pop("matrix", None)
        for key, value in params.items():
            set_path(point, key, value, source=f"{path}: matrix key")
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
        runs.append(ScenarioRun(path, validate(path, point, f" at matrix point {i} ({shown})"), params))
    return runs


def _without(points: list[dict[str, Any]], overridden: set[str]) -> list[dict[str, Any]]:
    """The matrix's points with the keys a --set gave dropped: the override wins, so that key no longer varies (and
    ``--set`` of a matrix key picks one point, or runs a value the matrix does not list)."""
    kept: list[dict[str, Any]] = []
    for point in points:
        rest = {k: v for k, v in point.items() if k not in overridden}
        if rest not in kept:
            kept.append(rest)
    return kept


def check_kafka_versions(path: Path, runs: list[ScenarioRun]) -> None:
    """The Kafka versions the runs start (the cluster's, each broker_upgrade's) served by Maven Central, as a run
    checks them before it starts; ``testbed validate`` calls this."""
    from ..brokers.versions import check_kafka_version

    asked: set[tuple[str, str]] = set()
    for run in runs:
        scenario = run.scenario
        wanted = [] if scenario.cluster.external else [("cluster.kafka_version", scenario.cluster.kafka_version)]
        wanted += [(f"steps.{i}.broker_upgrade.to", step.to) for i, step in enumerate(scenario.steps)
                   if getattr(step, "kind", None) == "broker_upgrade"]
        for field, version in wanted:
            if (field, version) not in asked:
                asked.add((field, version))
                try:
                    check_kafka_version(version, field)
                except ConfigError as exc:
                    raise ConfigError(f"{path}: {exc}") from None


def check_members(path: Path, runs: list[ScenarioRun]) -> None:
    """The member specs of these runs checked as a run's ``prepare_spec`` checks them, each distinct spec once: the
    client version on PyPI, a program's start and client, the client_config and handlers by their client
    libraries (``testbed.members.member_checks``); one ConfigError with every refusal. ``testbed validate`` calls
    this, as it starts nothing else."""
    from ..members.member_checks import check_specs

    lines = check_specs(spec for run in runs for spec in run.scenario.members.values())
    if lines:
        raise ConfigError("\n".join([f"{path}: members refused before a run would start ({len(lines)} error(s))",
                                      *(f"  {line}" for line in lines)]))


def matrix_points(path: Path, matrix: Any) -> list[dict[str, Any]]:
    """A mapping of dotted path -> values is a cartesian product; a list of mappings names each point
    (for values that must change together, e.g. an assignor and the expectations it owes)."""
    if not matrix:
        return [{}]
    if isinstance(matrix, dict) and all(isinstance(k, str) and isinstance(v, list) and v for k, v in matrix.items()):
        keys = list(matrix)
        return [dict(zip(keys, values)) for values in itertools.product(*(matrix[k] for k in keys))]
    if isinstance(matrix, list) and all(isinstance(p, dict) and p and all(isinstance(k, str) for k in p)
                                        for p in matrix):
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
