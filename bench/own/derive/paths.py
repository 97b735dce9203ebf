"""Walking a schema and a value together: ``$ref``s followed, the union branch a value belongs to, every
place in a value with the schema that governs it, and a value with one place replaced."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import jsonschema

from bench.own.derive.output import Loc


def _resolve(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """Follow local ``$ref``s (``#/$defs/X``, ``#/definitions/X``)."""
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            if part:
                target = target[part]
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **extra}
        seen += 1
    return schema if isinstance(schema, dict) else {}


def _top(schema: dict[str, Any]) -> dict[str, Any]:
    return _resolve(schema, schema)


def _places(
    schema: dict[str, Any], value: Any, path: tuple[Any, ...] = (), every_item: bool = False
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any], Any]]:
    """(path, subschema, value) for every value in ``value``, outermost first; of an array, its
    first item (``every_item``: each of them)."""
    queue = [(path, _resolve(schema, schema), value)]
    root = schema
    while queue:
        here, sub, current = queue.pop(0)
        yield here, sub, current
        if isinstance(current, dict):
            for key, prop in sub.get("properties", {}).items():
                if key in current:
                    queue.append(((*here, key), _resolve(_branch(prop, current[key], root), root), current[key]))
        elif isinstance(current, list) and current and isinstance(sub.get("items"), dict):
            for index, item in enumerate(current if every_item else current[:1]):
                queue.append(((*here, index), _resolve(_branch(sub["items"], item, root), root), item))


def _branch(schema: dict[str, Any], value: Any, root: dict[str, Any]) -> dict[str, Any]:
    """The anyOf/oneOf branch ``value`` belongs to (so nested bounds are found inside unions)."""
    schema = _resolve(schema, root)
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key, []):
            scoped = {
                "$defs": root.get("$defs", {}),
                "definitions": root.get("definitions", {}),
                **_resolve(branch, root),
            }
            if jsonschema.Draft202012Validator(scoped).is_valid(value):
                return _resolve(branch, root)
    return schema


def _replaced(valid: dict[str, Any], path: tuple[Any, ...], new: Any) -> dict[str, Any]:
    out = copy.deepcopy(valid)
    target: Any = out
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return out


_ABSENT = object()


def _child(value: Any, part: Any) -> Any:
    if isinstance(value, dict) and part in value:
        return value[part]
    if isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
        return value[part]
    return _ABSENT


def _at(value: Any, path: Loc) -> Any:
    for part in path:
        value = _child(value, part)
        if value is _ABSENT:
            break
    return value


def _existing(value: Any, loc: Loc) -> Loc:
    """The part of an error location that is a path into ``value`` (pydantic adds the names of
    union members and validator kinds, which are not keys)."""
    path: list[Any] = []
    for part in loc:
        child = _child(value, part)
        if child is not _ABSENT:
            value = child
            path.append(part)
    return tuple(path)


_DECIMAL = re.compile(r"-?\d+(\.\d+)?")
