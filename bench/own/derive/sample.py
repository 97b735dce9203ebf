"""A value valid under a raw JSON Schema (:func:`sample`), keyword by keyword: for a schema with no Python
type behind it (Claude's ``output_format``, a LangChain dict schema)."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from typing import Any

from bench.own.derive.output import GIVE_EXAMPLE
from bench.own.derive.paths import _resolve


class _CannotSample(Exception):
    pass


def sample(schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None, depth: int = 0) -> Any:
    """One value valid under ``schema`` (a subset of JSON Schema: types, enum/const, bounds,
    lengths, formats, required and optional properties, items, anyOf/oneOf/allOf, $ref)."""
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if depth > 12:
        raise _CannotSample("schema nests too deep")
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    if "enum" in schema:
        return copy.deepcopy(rng.choice(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = sorted(schema[key], key=lambda b: _resolve(b, root).get("type") == "null")
            return sample(branches[0] if rng.random() < 0.8 else rng.choice(branches), rng, root, depth + 1)
    if "allOf" in schema:
        merged: dict[str, Any] = {}
        for part in schema["allOf"]:
            merged.update(_resolve(part, root))
        return sample(merged, rng, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    return _SAMPLERS[kind](schema, rng, root, depth)


def _sample_object(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> dict[str, Any]:
    return {key: sample(sub, rng, root, depth + 1) for key, sub in schema.get("properties", {}).items()}


def _sample_array(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> list[Any]:
    low, high = schema.get("minItems", 1), schema.get("maxItems", max(2, schema.get("minItems", 1)))
    items = schema.get("items", {})
    out: list[Any] = []
    for _ in range(40):
        if len(out) >= min(max(low, 2), high):
            break
        value = sample(items, rng, root, depth + 1)
        if not (schema.get("uniqueItems") and value in out):
            out.append(value)
    if len(out) < low:
        raise _CannotSample("too few distinct items")
    return out


WORDS = ("alpha", "bravo", "delta", "echo", "harbour", "lantern", "meadow", "orbit", "quartz", "willow")


FORMATS = {
    "email": lambda rng: f"{rng.choice(WORDS)}@example.org",
    "date": lambda rng: f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}",
    "date-time": lambda rng: f"2024-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:30:00Z",
    "time": lambda rng: "10:30:00Z",
    "uri": lambda rng: f"https://example.org/{rng.choice(WORDS)}",
    "uuid": lambda rng: "12345678-1234-4234-8234-1234567890ab",
}


def _sample_string(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> str:
    if schema.get("format") in FORMATS:
        return FORMATS[schema["format"]](rng)
    if "pattern" in schema:
        return _from_pattern(schema["pattern"], rng)
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    text = " ".join(rng.choice(WORDS) for _ in range(2))
    while len(text) < low:
        text += " " + rng.choice(WORDS)
    return text[:high] if high is not None else text


def _from_pattern(pattern: str, rng: random.Random) -> str:
    """A string matching ``pattern`` (polyfactory's regex generator, seeded by ``rng``)."""
    from polyfactory.value_generators.regex import RegexFactory

    try:
        return str(RegexFactory(random=rng)(pattern))
    except Exception:  # a construct the generator does not know
        raise _CannotSample(f"cannot generate a string for the pattern {pattern!r}; {GIVE_EXAMPLE}") from None


def _bounds(schema: dict[str, Any], integer: bool) -> tuple[float, float]:
    step = 1 if integer else 0.01
    low = schema.get("minimum", schema["exclusiveMinimum"] + step if "exclusiveMinimum" in schema else None)
    high = schema.get("maximum", schema["exclusiveMaximum"] - step if "exclusiveMaximum" in schema else None)
    low = low if low is not None else (0 if high is None or high >= 0 else high - 100)
    high = high if high is not None else low + 100
    if low > high:
        raise _CannotSample("empty numeric range")
    return low, high


def _sample_integer(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> int:
    low, high = _bounds(schema, integer=True)
    lo, hi = int(-(-low // 1)), int(high // 1)
    multiple = schema.get("multipleOf")
    if multiple:
        choices = [n for n in range(lo, hi + 1) if n % multiple == 0][:100]
        if not choices:
            raise _CannotSample("no multiple in range")
        return rng.choice(choices)
    return rng.randint(lo, hi)


def _sample_number(schema: dict[str, Any], rng: random.Random, root: dict[str, Any], depth: int) -> float:
    low, high = _bounds(schema, integer=False)
    return round(low + (high - low) * rng.uniform(0.1, 0.9), 2) if high > low else low


_SAMPLERS: dict[str, Callable[[dict[str, Any], random.Random, dict[str, Any], int], Any]] = {
    "object": _sample_object,
    "array": _sample_array,
    "string": _sample_string,
    "integer": _sample_integer,
    "number": _sample_number,
    "boolean": lambda schema, rng, root, depth: rng.random() < 0.5,
    "null": lambda schema, rng, root, depth: None,
}
