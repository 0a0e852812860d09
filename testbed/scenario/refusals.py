"""A scenario's validation errors in words a user can act on: the field path, what was given, what is allowed.

pydantic names the type that failed ("Input should be a valid dictionary or instance of ClusterModel");
here each error becomes one line with the path as written in the file (the same dotted path ``--set``
and ``matrix`` take), the value given, and the fields or kinds the model allows there.
"""

from __future__ import annotations

import difflib
import re
import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

STEP_FORM = "a step is its kind with its options under it, e.g. `- pause: {member: m1, seconds: 5}`, or a bare `- drain`"


def did_you_mean(given: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(given, allowed, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe_errors(exc: ValidationError, root: type[BaseModel]) -> list[str]:
    """One line per problem, ``path: what is wrong; what is allowed``."""
    lines = []
    for err in exc.errors():
        message = err["msg"].removeprefix("Value error, ")
        if not err["loc"]:  # the model's own cross-field checks: already one ``path: message`` a line
            lines += message.splitlines()
        elif err["type"] == "value_error":
            lines += [_joined(err["loc"], line, root) for line in message.splitlines()]
        else:
            lines.append(f"{'.'.join(map(str, err['loc']))}: {_explain(err, message, root)}")
    return lines


# A check's message that starts with the field it is about: ``assignors: ...``, ``client_config.group.id: ...``,
# ``handler_path, on_handler_error: ...``.
_FIELD_FIRST = re.compile(r"^(\w+)(?:\.[^\s:]+|(?:, \w+)+)?: ")


def _joined(loc: tuple[Any, ...], line: str, root: type[BaseModel]) -> str:
    """A check's line under its location: a message naming a field of the model there continues the path
    (``members.app.client_config.group.id: ...``), once (a field's own check names the field the location
    already ends with); any other message follows the path after ``: ``."""
    path = ".".join(map(str, loc))
    match = _FIELD_FIRST.match(line)
    if match is None:
        return f"{path}: {line}"
    if match[1] == str(loc[-1]):
        return f"{'.'.join(map(str, loc[:-1]))}.{line}" if len(loc) > 1 else line
    if match[1] in _fields(_model_at(root, loc)):
        return f"{path}.{line}"
    return f"{path}: {line}"


def _explain(err: Any, message: str, root: type[BaseModel]) -> str:
    kind, loc, given = err["type"], err["loc"], err.get("input")
    if kind == "extra_forbidden":
        fields = _fields(_model_at(root, loc[:-1]))
        return f"unknown field{did_you_mean(str(loc[-1]), fields)}; allowed fields: {', '.join(fields)}"
    if kind == "union_tag_invalid":
        tag = str(err["ctx"]["tag"])
        hint = f" (options go in a mapping: `- {tag.split()[0]}: {{...}}`)" if " " in tag.strip() else ""
        return f"unknown step {tag!r}{hint}; step kinds: {err['ctx']['expected_tags']}"
    if kind == "union_tag_not_found":
        return _step_shape(given)
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        fields = _fields(_model_at(root, loc))
        if loc[0] == "steps" and len(loc) == 2:
            return f"{STEP_FORM}; got {_shown(given)}"
        return "must be a mapping" + (f" with fields {', '.join(fields)}" if fields else "") + f"; got {_shown(given)}"
    if kind == "list_type":
        return f"must be a list (one `- ` line per item); got {_shown(given)}"
    if kind == "string_type" and isinstance(given, (int, float)) and not isinstance(given, bool):
        return f"must be text; got the number {given!r} (write it in quotes: '{given}')"
    if kind == "missing":
        return "required, but missing"
    if isinstance(given, (dict, list)) or kind == "value_error":
        return message
    return f"{message}; got {given!r}"


def _shown(value: Any) -> str:
    kind = {dict: "a mapping", list: "a list", str: "the text", bool: "the boolean"}.get(type(value), "the value")
    return f"{kind} {value!r}" if not isinstance(value, (dict, list)) else f"{kind} {value}"


def _step_shape(given: Any) -> str:
    if isinstance(given, dict) and len(given) == 1:
        (kind, options), = given.items()
        return f"the options of {kind!r} must be a mapping, e.g. `- {kind}: {{...}}`; got {_shown(options)}"
    if isinstance(given, dict):
        return (f"{STEP_FORM}; got the keys {', '.join(map(str, given))} side by side "
                "(are the options indented under the kind?)")
    return f"{STEP_FORM}; got {_shown(given)}"


def _fields(model: type[BaseModel] | None) -> list[str]:
    return [name for name in model.model_fields if name != "kind"] if model is not None else []


def _model_at(root: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class a validation error's location points into, following fields, list items, mapping
    values and step kinds (pydantic puts a tagged union's tag into the location)."""
    node: Any = root
    for part in loc:
        node = _unwrap(node)
        if isinstance(node, type) and issubclass(node, BaseModel):
            field = node.model_fields.get(str(part))
            node = field.annotation if field is not None else None
        elif get_origin(node) is list:
            node = get_args(node)[0]
        elif get_origin(node) is dict:
            node = get_args(node)[1]
        elif _is_union(node):
            node = next((m for m in get_args(node) if _tag(m) == part), None)
        else:
            return None
    node = _unwrap(node)
    return node if isinstance(node, type) and issubclass(node, BaseModel) else None


def _unwrap(node: Any) -> Any:
    """``Annotated[X, ...]`` and ``X | None`` are X here."""
    if get_origin(node) is Annotated:
        return _unwrap(get_args(node)[0])
    if _is_union(node):
        members = [m for m in get_args(node) if m is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return node


def _is_union(node: Any) -> bool:
    return get_origin(node) in (Union, types.UnionType)


def _tag(model: Any) -> Any:
    field = model.model_fields.get("kind") if isinstance(model, type) and issubclass(model, BaseModel) else None
    return field.default if field is not None else None
