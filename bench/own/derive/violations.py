"""``schema_violation``: per variant (a required field removed, a wrong type, an extra key, a value out of
range), an answer both the schema and the type reject."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from typing import Any

from bench.own.derive.output import OutputType
from bench.own.derive.paths import _places, _replaced

EXTRA_KEY = "unexpected_field"


def violations(output: OutputType, valid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each violation variant the schema allows, one answer that both schema and type reject."""
    found: dict[str, dict[str, Any]] = {}
    for variant, candidates in _VIOLATORS.items():
        for candidate in candidates(output.schema, valid):
            if output.rejects(candidate):
                found[variant] = candidate
                break
    return found


NO_HANDLE = {
    "missing_field": "the output schema requires no field",
    "wrong_type": "the output schema has no field whose type can be broken",
    "extra_key": "the output schema allows extra keys (additionalProperties is not false)",
    "out_of_range": "the output schema has no bound, length or enum to break",
}


def violation_gap(output: OutputType, valid: dict[str, Any], variant: str) -> str:
    """Why :func:`violations` found no ``variant``: the schema gives no handle for it, or the
    type accepts every answer the schema refuses."""
    if next(_VIOLATORS[variant](output.schema, valid), None) is None:
        return f"cannot be built: {NO_HANDLE[variant]}"
    return f"cannot be built: the output type accepts every {variant} answer the schema refuses"


def _missing_field(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, sub, value in _places(schema, valid):
        if isinstance(value, dict):
            for key in sub.get("required", []):
                if key in value:
                    out = copy.deepcopy(valid)
                    target: Any = out
                    for part in path:
                        target = target[part]
                    del target[key]
                    yield out


WRONG_TYPES: tuple[Any, ...] = ("not a valid value", 12345, {"unexpected": 1}, ["x"], True)


def _wrong_type(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, _sub, _value in _places(schema, valid):
        if path:
            for new in WRONG_TYPES:
                yield _replaced(valid, path, new)


def _extra_key(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for path, sub, value in _places(schema, valid):
        if isinstance(value, dict) and sub.get("additionalProperties") is False:
            key = EXTRA_KEY if EXTRA_KEY not in sub.get("properties", {}) else EXTRA_KEY + "_2"
            yield _replaced(valid, path, {**value, key: "extra"}) if path else {**valid, key: "extra"}


def _out_of_range(schema: dict[str, Any], valid: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A bound or length broken first (strict decoding does not enforce those, so the fault is
    realistic under every mode), an enum value only where the schema has no bound."""
    for outside in (_outside_bounds, _outside_enum):
        for path, sub, value in _places(schema, valid):
            if path:
                for new in outside(sub, value):
                    yield _replaced(valid, path, new)


def _outside_enum(sub: dict[str, Any], value: Any) -> Iterator[Any]:
    if "enum" in sub or "const" in sub:
        allowed = sub.get("enum", [sub.get("const")])
        if isinstance(value, str):
            yield next(f"{value}_other{i}" for i in range(100) if f"{value}_other{i}" not in allowed)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield max(allowed, default=0) + 1 if all(isinstance(a, int | float) for a in allowed) else -1


def _outside_bounds(sub: dict[str, Any], value: Any) -> Iterator[Any]:
    """Values of the right type that break a numeric bound, a length or an item count."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        integer = isinstance(value, int)
        for key, sign in (("maximum", 1), ("exclusiveMaximum", 1), ("minimum", -1), ("exclusiveMinimum", -1)):
            if key in sub:
                yield sub[key] + sign * (1 if integer else 0.5)
    if isinstance(value, str):
        if sub.get("minLength", 0) > 0:
            yield ""
        if "maxLength" in sub:
            yield "x" * (sub["maxLength"] + 1)
    if isinstance(value, list):
        if sub.get("minItems", 0) > 0:
            yield []
        if "maxItems" in sub and value:
            yield value * (sub["maxItems"] + 1)


_VIOLATORS: dict[str, Callable[[dict[str, Any], dict[str, Any]], Iterator[dict[str, Any]]]] = {
    "missing_field": _missing_field,
    "wrong_type": _wrong_type,
    "extra_key": _extra_key,
    "out_of_range": _out_of_range,
}
