"""A scenario file read into a mapping, or one line that names the file and says what is wrong with it.

The slips a hand-written file is prone to, each refused with its line: a binary or non-UTF-8 file, a
directory, tabs, a second ``---`` document, and a key given twice in one mapping (which PyYAML would
otherwise settle silently by keeping the last).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError

SCENARIO_KEYS = "name, topics, members, fleet, steps, expect"


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping."""


class _FastStrictLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same on libyaml's parser where PyYAML has it: 49 scenario files in 16 ms against 145 ms. Its
    messages are libyaml's, so a file it refuses is read again by :class:`_StrictLoader` for PyYAML's words."""


def _mapping_without_repeats(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base` may be overridden by design
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            if key in first_line:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} is given twice in one mapping (first on line {first_line[key] + 1})",
                    key_node.start_mark)
            first_line[key] = key_node.start_mark.line
        except TypeError:  # an unhashable key: the base constructor refuses it
            break
    return loader.construct_mapping(node, deep=deep)


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_repeats)


def read_text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such scenario file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory; give scenario files, e.g. {path}/*.yaml") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                          "a scenario is a YAML text file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None


def yaml_problem(path: Path, exc: yaml.YAMLError) -> str:
    """One line: where, what, and for the common slips what to do."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return f"{path}: not valid YAML: {str(exc).splitlines()[0]}"
    mark = exc.problem_mark or exc.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
    what = ", ".join(p for p in (exc.context, exc.problem) if p)
    if "'\\t'" in what:
        what += " (indent with spaces, not tabs)"
    elif "another document" in what:
        what += " (a scenario is one document: remove the '---' line)"
    return f"{where}: not valid YAML: {what}"


def read_yaml(path: Path) -> dict[str, Any]:
    """The file's mapping; every refusal names the file."""
    text = read_text(path)
    try:
        data = yaml.load(text, Loader=_FastStrictLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError:
        try:
            data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader
        except yaml.YAMLError as exc:
            raise ConfigError(yaml_problem(path, exc)) from None
    if data is None:
        raise ConfigError(f"{path}: is empty; a scenario is a mapping with {SCENARIO_KEYS}")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario is a mapping with {SCENARIO_KEYS}; got a {type(data).__name__}")
    return data
