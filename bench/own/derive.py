"""Faults for any output type: a task derived from the user's declared output type.

The built-in tasks carry hand-written reference, wrong and violating answers; a user's type gets
them derived here, from the JSON Schema of the type (the one the SDK sends the model):

- ``valid``: the user's example file, else a generated answer. Python types (pydantic models,
  dataclasses, TypedDicts) are built with polyfactory, which honours the type's own constraints
  (bounds, lengths, patterns, Literal/enum, nested and optional fields, unions) and builds through
  the type, so the answer is one the type accepts; a raw JSON Schema (Claude's ``output_format``,
  a LangChain dict schema) goes through :func:`sample`, a keyword-by-keyword walker. Every answer
  is checked against the schema (jsonschema) and the type before it is used.
  (hypothesis-jsonschema, the other candidate, fails on the pinned hypothesis 6.170: its object
  strategy calls a removed internal, ``many.more``.)
- ``schema_violation``: one answer per variant, derived from the schema (a required field
  removed, a value of a type the schema does not allow, a key where ``additionalProperties`` is
  false, a value outside an enum, bound or length), each checked to fail both the schema and
  the type. A variant the schema gives no handle for is absent: its cells are "not applicable".
- ``wrong``: needs a meaning of correct. With the user's ``check`` callable: a generated valid
  answer that ``check`` rejects. With only an example: the example with one field changed,
  judged field by field. With neither: absent, and ``wrong`` cells are "not applicable".
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, is_typeddict

import jsonschema
from pydantic import BaseModel, TypeAdapter, ValidationError

from bench.own.config import OwnAgentError
from bench.scenarios.tasks import Task

CANDIDATES = 12
"""Generated answers per type: the first valid one is the reference, the others feed ``wrong``."""
EXTRA_KEY = "unexpected_field"

Check = Callable[[Any], str | None]


@dataclass(frozen=True)
class OutputType:
    """What the agent promises to return: a Python type, or a raw JSON Schema."""

    schema: dict[str, Any]
    python_type: Any = None
    """None for a raw JSON Schema."""

    @classmethod
    def of(cls, declared: Any) -> OutputType:
        if isinstance(declared, Mapping):
            return cls(schema=dict(declared))
        try:
            schema = TypeAdapter(declared).json_schema()
        except Exception as error:  # pydantic's own: the type has no JSON Schema
            raise OwnAgentError(f"output type {declared!r} has no JSON Schema: {error}") from None
        return cls(schema=schema, python_type=declared)

    def instance(self, value: Any) -> Any:
        """``value`` as the declared type, or None when it is not one."""
        if self.python_type is None:
            return value if isinstance(value, Mapping) and self.fits_schema(value) else None
        if _is_instance(value, self.python_type):
            return value
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        if not isinstance(value, Mapping):
            return None
        try:
            return TypeAdapter(self.python_type).validate_python(dict(value))
        except ValidationError:
            return None

    def fits_schema(self, value: Any) -> bool:
        return jsonschema.Draft202012Validator(self.schema).is_valid(value)

    def accepts(self, value: Any) -> bool:
        """Valid under the schema and, for a Python type, the type itself."""
        if not self.fits_schema(value):
            return False
        return self.python_type is None or self.instance(value) is not None

    def rejects(self, value: Any) -> bool:
        """Invalid under the schema and, for a Python type, under the type too."""
        if self.fits_schema(value):
            return False
        return self.python_type is None or self.instance(value) is None

    def as_json(self, instance: Any) -> Any:
        if self.python_type is None:
            return instance
        return TypeAdapter(self.python_type).dump_python(instance, mode="json")


def _is_instance(value: Any, declared: Any) -> bool:
    try:
        return isinstance(declared, type) and not is_typeddict(declared) and isinstance(value, declared)
    except TypeError:
        return False


@dataclass(frozen=True)
class DerivedTask(Task):
    """A user's task: rendered by the provider like a built-in one, judged by the user's type."""

    output_type: OutputType = field(default_factory=lambda: OutputType({}))
    has_wrong: bool = False
    """False: no meaning of correct beyond the schema, ``wrong`` cells are not applicable."""
    planned_calls: int = 0
    """Model calls the scenario makes by design (an opted-in tool's round trip), not retries."""

    @property
    def schema(self) -> dict[str, Any]:
        return self.output_type.schema

    def judge(self, value: Any) -> tuple[bool, bool]:
        instance = self.output_type.instance(value)
        if instance is None:
            return False, False
        return True, self.semantic_rule(instance) is None

    def check(self, value: Any) -> str | None:
        instance = self.output_type.instance(value)
        if instance is None:
            return "not a valid answer for the declared output type"
        return self.semantic_rule(instance)


def derive_task(
    name: str, output: OutputType, prompt: str, example: dict[str, Any] | None = None, check: Check | None = None
) -> DerivedTask:
    """The task for one user agent; raises :class:`OwnAgentError` when no valid answer exists."""
    if _top(output.schema).get("type") != "object" or "properties" not in _top(output.schema):
        raise OwnAgentError(f"agent {name!r}: the output type is not a structured object ({_describe(output)})")
    candidates = generate(output)
    reference = _reference(name, output, candidates, example, check)
    rule, wrong = _meaning_of_correct(output, reference, candidates, example, check)
    return DerivedTask(
        name=f"agent:{name}",
        output_model=output.python_type,
        prompt=prompt,
        reference=reference,
        wrong=wrong or {},
        violations=violations(output, reference),
        semantic_rule=rule,
        description=f"derived from {_describe(output)}",
        prose=_prose(reference),
        output_type=output,
        has_wrong=wrong is not None,
    )


def _describe(output: OutputType) -> str:
    if output.python_type is None:
        return "a JSON Schema"
    return getattr(output.python_type, "__qualname__", repr(output.python_type))


def _reference(
    name: str, output: OutputType, candidates: list[Any], example: dict[str, Any] | None, check: Check | None
) -> dict[str, Any]:
    if example is not None:
        if not output.accepts(example):
            raise OwnAgentError(f"agent {name!r}, field example: the example does not validate against the output type")
        if check is not None and (reason := _run_check(check, output, example)) is not None:
            raise OwnAgentError(f"agent {name!r}, field example: check rejects the example: {reason}")
        return example
    for candidate in candidates:
        if check is None or _run_check(check, output, candidate) is None:
            return candidate
    if not candidates:
        raise OwnAgentError(f"agent {name!r}: cannot generate a valid answer for the output type; give an example file")
    raise OwnAgentError(f"agent {name!r}: check rejects every generated answer; give an example file")


def _run_check(check: Check, output: OutputType, value: Any) -> str | None:
    instance = output.instance(value)
    return "not a valid answer" if instance is None else check(instance)


def _meaning_of_correct(
    output: OutputType, reference: dict[str, Any], candidates: list[Any], example: dict[str, Any] | None,
    check: Check | None,
) -> tuple[Callable[[Any], str | None], dict[str, Any] | None]:  # fmt: skip
    """The semantic rule and a schema-valid answer that fails it (None: not applicable)."""
    if check is not None:
        wrong = next((c for c in _variations(output, reference, candidates) if check(output.instance(c))), None)
        return check, wrong
    if example is not None:
        rule = _field_by_field(output, reference)
        wrong = next((c for c in _variations(output, reference, candidates) if rule(output.instance(c))), None)
        return rule, wrong
    return (lambda instance: None), None


def _field_by_field(output: OutputType, reference: dict[str, Any]) -> Callable[[Any], str | None]:
    def rule(instance: Any) -> str | None:
        got = output.as_json(instance)
        for key, expected in reference.items():
            if got.get(key) != expected:
                return f"{key} is {got.get(key)!r}, expected {expected!r}"
        return None

    return rule


def _variations(output: OutputType, reference: dict[str, Any], candidates: list[Any]) -> Iterator[dict[str, Any]]:
    """Valid answers close to the reference (one field taken from another candidate), then the
    other candidates whole: a plausible wrong answer differs from the right one in a detail."""
    for candidate in candidates:
        for key, value in candidate.items():
            if reference.get(key) != value:
                varied = {**reference, key: value}
                if output.accepts(varied):
                    yield varied
    for candidate in candidates:
        if candidate != reference:
            yield candidate


# --- valid answers ------------------------------------------------------------------------


def generate(output: OutputType, count: int = CANDIDATES, seed: int = 0) -> list[dict[str, Any]]:
    """Valid answers, deterministic for a seed; each one accepted by schema and type."""
    if output.python_type is not None:
        built = _polyfactory(output, count, seed)
        if built:
            return built
    rng = random.Random(seed)
    found = []
    for _ in range(count):
        try:
            value = sample(output.schema, rng)
        except _CannotSample:
            break
        if output.accepts(value) and value not in found:
            found.append(value)
    return found


def _polyfactory(output: OutputType, count: int, seed: int) -> list[dict[str, Any]]:
    from polyfactory.factories import DataclassFactory, TypedDictFactory
    from polyfactory.factories.pydantic_factory import ModelFactory

    declared = output.python_type
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        base: Any = ModelFactory
    elif dataclasses.is_dataclass(declared):
        base = DataclassFactory
    elif is_typeddict(declared):
        base = TypedDictFactory
    else:
        return []
    try:
        factory = base.create_factory(declared, __random_seed__=seed, __allow_none_optionals__=False)
        built = [output.as_json(factory.build()) for _ in range(count)]
    except Exception:  # polyfactory cannot build this type: fall back to the schema walker
        return []
    unique: list[dict[str, Any]] = []
    for value in built:
        if output.accepts(value) and value not in unique:
            unique.append(value)
    return unique


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
        raise _CannotSample("string patterns are not generated from a raw schema; give an example file")
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    text = " ".join(rng.choice(WORDS) for _ in range(2))
    while len(text) < low:
        text += " " + rng.choice(WORDS)
    return text[:high] if high is not None else text


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


# --- schema violations --------------------------------------------------------------------


def violations(output: OutputType, valid: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """For each violation variant the schema allows, one answer that both schema and type reject."""
    found: dict[str, dict[str, Any]] = {}
    for variant, candidates in _VIOLATORS.items():
        for candidate in candidates(output.schema, valid):
            if output.rejects(candidate):
                found[variant] = candidate
                break
    return found


def _places(
    schema: dict[str, Any], value: Any, path: tuple[Any, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any], Any]]:
    """(path, subschema, value) for every object and array in ``value``, outermost first."""
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
            queue.append(((*here, 0), _resolve(_branch(sub["items"], current[0], root), root), current[0]))


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


def _prose(reference: dict[str, Any]) -> str:
    """Plain text carrying the answer's facts, as a chatty model writes them."""
    facts = [
        f"{key.replace('_', ' ')} {json.dumps(value)}"
        for key, value in reference.items()
        if not isinstance(value, dict | list)
    ]
    return "Here is what I found: " + ("; ".join(facts[:6]) or "the details are in the request") + "."
