"""What a type declares that an answer can break, and which of those an answer breaks.

A constraint is named by its place (a path into the answer, each list's items as ``[]``:
``items[].unit_price``) and what it asks there: a schema keyword with its value
(``items[].quantity maximum=1000``, ``currency enum``, ``items minItems=1``), or a pydantic
validator of the model (or pydantic dataclass) at that place (``Invoice.total_is_sum_of_lines
(model validator)``, ``LineItem._cents (field validator on amount)``, a field's own
``Annotated[..., AfterValidator(cents)]`` as ``AfterValidator(cents) (field validator on amount)``).
:func:`catalogue` lists every one the type declares; :func:`breaks` reads which an answer breaks
from the schema's errors (inside a union's branches too: pydantic's ``Decimal`` is
``number | string``, its bound on the number branch) and the type's own (a validator's
``ValueError`` is attributed to the validator whose code raised it, read from its traceback;
failing that, by its location: a field's validators, or the model's at the model's place).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import CodeType
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints, is_typeddict

from pydantic import AfterValidator, BaseModel, BeforeValidator, PlainValidator, ValidationError, WrapValidator

from bench.own.derive.output import Loc, OutputType
from bench.own.derive.paths import _existing, _resolve

BOUNDS = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf")
LENGTHS = ("minLength", "maxLength", "pattern")
CHOICES = ("enum", "const")
COUNTS = ("minItems", "maxItems", "uniqueItems")
KEYWORDS = (*BOUNDS, *LENGTHS, *CHOICES, *COUNTS)
"""The schema keywords a value can break while keeping its type, in the order faults try them:
a number's bound first (what strict decoding does not enforce), an item count last."""
PYDANTIC_KEYWORDS = {
    "greater_than_equal": "minimum",
    "greater_than": "exclusiveMinimum",
    "less_than_equal": "maximum",
    "less_than": "exclusiveMaximum",
    "multiple_of": "multipleOf",
    "string_too_short": "minLength",
    "string_too_long": "maxLength",
    "string_pattern_mismatch": "pattern",
    "enum": "enum",
    "literal_error": "enum",
    "too_short": "minItems",
    "too_long": "maxItems",
}
"""Pydantic's error types for the same keywords (a bound it checks on a Decimal string, which the
schema's string branch lets through)."""
RAISED_BY_VALIDATORS = frozenset({"value_error", "assertion_error"})
ANNOTATED_VALIDATORS = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)
MAX_DEPTH = 12


@dataclass(frozen=True)
class Constraint:
    """One thing the type declares at one place."""

    place: str
    """The path, each list's items as ``[]``; empty for the top level."""
    keyword: str
    """A schema keyword, or ``model validator`` / ``field validator``."""
    detail: str = ""
    """The keyword's value (``1000``), or the validator's ``Model.name``."""
    raw: str = field(default="", compare=False)
    """The keyword's value as JSON (an enum's members, a pattern), for a fault to break it by."""
    code: CodeType | None = field(default=None, compare=False)
    """A validator's own code: the frame a refusal was raised in says which of the validators at
    one place refused (pydantic's error names the place only)."""

    @property
    def validator(self) -> bool:
        return self.keyword.endswith("validator")

    def __str__(self) -> str:
        if self.validator:
            return f"{self.detail} ({self.keyword}{' on ' + self.place if self.place else ''})"
        where = self.place or "(top level)"
        return f"{where} {self.keyword}" + (f"={self.detail}" if self.detail else "")


def pattern_of(path: Loc) -> str:
    """``('items', 3, 'amount')`` as ``items[].amount``."""
    text = ""
    for part in path:
        text += "[]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def catalogue(output: OutputType) -> tuple[Constraint, ...]:
    """Every constraint the type declares, in :data:`KEYWORDS` order, then the validators."""
    models = _models(output.python_type)
    found: list[Constraint] = []
    _walk(output.schema, output.schema, (), models, found, 0)
    if _is_model(output.python_type):
        found += _validators(output.python_type, "")
    unique = list(dict.fromkeys(found))
    return tuple(sorted(unique, key=_order))


def _order(constraint: Constraint) -> tuple[int, int]:
    """Bounds, lengths, patterns and enums, then field validators, then item counts (a list
    lengthened keeps its broken items, but nothing in it can change after), then model validators."""
    if constraint.validator:
        return (1, 0) if constraint.keyword == "field validator" else (3, 0)
    return (2 if constraint.keyword in COUNTS else 0), KEYWORDS.index(constraint.keyword)


def _walk(
    schema: Any, root: dict[str, Any], path: Loc, models: dict[str, type[Any]], found: list[Constraint],
    depth: int,
) -> None:  # fmt: skip
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return
    ref = schema.get("$ref", "")
    if ref.rsplit("/", 1)[-1] in models and path:
        found += _validators(models[ref.rsplit("/", 1)[-1]], pattern_of(path))
    schema = _resolve(schema, root)
    place = pattern_of(path)
    for keyword in KEYWORDS:
        if keyword in schema and path and schema[keyword] is not False:
            detail = "" if keyword in (*CHOICES, "pattern", "uniqueItems") else _number(schema[keyword])
            found.append(Constraint(place, keyword, detail, json.dumps(schema[keyword])))
    for key in ("anyOf", "oneOf", "allOf"):
        for branch in schema.get(key, []):
            _walk(branch, root, path, models, found, depth + 1)
    for name, sub in schema.get("properties", {}).items():
        _walk(sub, root, (*path, name), models, found, depth + 1)
    if isinstance(schema.get("items"), dict):
        _walk(schema["items"], root, (*path, 0), models, found, depth + 1)


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _is_model(declared: Any) -> bool:
    """A class whose fields pydantic validates one by one: a model, a dataclass (pydantic's or the
    standard library's), a TypedDict."""
    if not isinstance(declared, type):
        return False
    return issubclass(declared, BaseModel) or dataclasses.is_dataclass(declared) or is_typeddict(declared)


def _fields(model: type[Any]) -> dict[str, tuple[list[Any], Any]]:
    """Each field's ``Annotated`` metadata and the type under it: pydantic's own record of a model
    or a pydantic dataclass, the type hints of a standard dataclass or a TypedDict."""
    if isinstance(recorded := getattr(model, "__pydantic_fields__", None), dict):
        return {name: (list(info.metadata), info.annotation) for name, info in recorded.items()}
    try:
        hints = get_type_hints(model, include_extras=True)
    except Exception:  # a forward reference the module cannot resolve: no field to read
        return {}
    found: dict[str, tuple[list[Any], Any]] = {}
    for name, hint in hints.items():
        base, *metadata = get_args(hint) if get_origin(hint) is Annotated else (hint,)
        found[name] = (metadata, base)
    return found


def _validators(model: type[Any], place: str) -> list[Constraint]:
    """The model's own ``field_validator``s (one per field they name), the validators its fields
    declare in ``Annotated`` (inside their lists too) and its ``model_validator``s."""
    decorators = getattr(model, "__pydantic_decorators__", None)
    found = []
    for field_name, (metadata, annotation) in _fields(model).items():
        where = f"{place}.{field_name}" if place else field_name
        found += _annotated(metadata, where)
        found += _annotated_inside(annotation, where, 0)
    if decorators is None:
        return found
    for name, decorator in decorators.field_validators.items():
        for field_name in decorator.info.fields:
            where = f"{place}.{field_name}" if place else field_name
            found.append(Constraint(where, "field validator", f"{model.__name__}.{name}", code=_code(decorator.func)))
    found += [
        Constraint(place, "model validator", f"{model.__name__}.{name}", code=_code(decorator.func))
        for name, decorator in decorators.model_validators.items()
    ]
    return found


def _code(function: Any) -> CodeType | None:
    """The code a validator runs (a classmethod's function, under its decorators); None for a
    callable with none of its own (a ``functools.partial``)."""
    try:
        unwrapped = inspect.unwrap(getattr(function, "__func__", function))
    except ValueError:  # a wrapper chain that loops
        return None
    return getattr(unwrapped, "__code__", None)


def _annotated(metadata: list[Any], place: str) -> list[Constraint]:
    """``AfterValidator(cents)`` and its kin in a field's metadata, each a field validator at ``place``."""
    return [
        Constraint(
            place,
            "field validator",
            f"{type(item).__name__}({getattr(item.func, '__name__', 'function')})",
            code=_code(item.func),
        )
        for item in metadata
        if isinstance(item, ANNOTATED_VALIDATORS)
    ]


def _annotated_inside(annotation: Any, place: str, depth: int) -> list[Constraint]:
    """The validators ``Annotated`` declares inside a field's type (pydantic keeps the field's own
    in its metadata): a list's items at ``place[]``, a union's members at ``place``."""
    origin = get_origin(annotation)
    if depth > MAX_DEPTH or origin is dict or origin is Literal:
        return []
    inner = f"{place}[]" if origin in (list, set, frozenset, tuple) else place
    found = []
    for arg in get_args(annotation):
        if get_origin(arg) is Annotated:
            arg, *metadata = get_args(arg)
            found += _annotated(metadata, inner)
        found += _annotated_inside(arg, inner, depth + 1)
    return found


def _models(declared: Any) -> dict[str, type[Any]]:
    """The pydantic models and dataclasses reachable from ``declared`` by their fields'
    annotations, by the name their schema's ``$defs`` uses."""
    found: dict[str, type[Any]] = {}
    stack = [declared]
    while stack:
        here = stack.pop()
        if _is_model(here):
            if here.__name__ in found:
                continue
            found[here.__name__] = here
            stack += [annotation for _, annotation in _fields(here).values()]
        else:
            stack += list(get_args(here))
    return found


def breaks(output: OutputType, value: Any, among: tuple[Constraint, ...]) -> frozenset[Constraint]:
    """The constraints of ``among`` that ``value`` breaks, by the schema's errors and the type's."""
    hits: set[Constraint] = set()
    for place, keyword in _schema_errors(output, value):
        hits.update(c for c in among if not c.validator and c.place == place and c.keyword == keyword)
    if output.python_type is None:
        return frozenset(hits)
    for loc, kind, raiser in _type_errors(output, value):
        path = _existing(value, loc)
        place = pattern_of(path)
        if kind in PYDANTIC_KEYWORDS:
            hits.update(
                c for c in among if not c.validator and c.place == place and c.keyword == PYDANTIC_KEYWORDS[kind]
            )
        elif kind in RAISED_BY_VALIDATORS:
            hits.update(_refusers(among, place, bool(path), raiser))
    return frozenset(hits)


def _schema_errors(output: OutputType, value: Any) -> Iterator[tuple[str, str]]:
    stack = list(output._validator.iter_errors(value))
    while stack:
        error = stack.pop()
        if error.validator in ("anyOf", "oneOf"):
            stack += list(error.context or [])
        elif error.validator in KEYWORDS:
            yield pattern_of(tuple(error.absolute_path)), str(error.validator)


def _refusers(among: tuple[Constraint, ...], place: str, inside: bool, raiser: set[CodeType]) -> list[Constraint]:
    """The validators at ``place`` a refusal there came from: the one whose code raised it, else
    (a refusal raised elsewhere) every field validator at a field's place, or the model's."""
    here = [c for c in among if c.validator and c.place == place]
    if named := [c for c in here if c.code is not None and c.code in raiser]:
        return named
    field_level = [c for c in here if c.keyword == "field validator"]
    return field_level if inside and field_level else [c for c in here if c.keyword == "model validator"]


def _type_errors(output: OutputType, value: Any) -> list[tuple[Loc, str, set[CodeType]]]:
    """Each of the type's refusals: its place, pydantic's error type and the code of every frame
    the refusal was raised through."""
    try:
        output._adapter.validate_python(value)
    except ValidationError as error:
        return [(tuple(d["loc"]), str(d["type"]), _frames((d.get("ctx") or {}).get("error"))) for d in error.errors()]
    except Exception:  # a validator raising something else: at no place anyone can name
        return []
    return []


def _frames(raised: Any) -> set[CodeType]:
    trace, found = getattr(raised, "__traceback__", None), set()
    while trace is not None:
        found.add(trace.tb_frame.f_code)
        trace = trace.tb_next
    return found
