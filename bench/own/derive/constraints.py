"""What a type declares that an answer can break, and which of those an answer breaks.

A constraint is named by its place (a path into the answer, each list's items as ``[]``:
``items[].unit_price``) and what it asks there: a schema keyword with its value
(``items[].quantity maximum=1000``, ``currency enum``, ``items minItems=1``), or a pydantic
validator of the model at that place (``Invoice.total_is_sum_of_lines (model validator)``,
``LineItem._cents (field validator on amount)``). :func:`catalogue` lists every one the type
declares; :func:`breaks` reads which an answer breaks from the schema's errors (inside a union's
branches too: pydantic's ``Decimal`` is ``number | string``, its bound on the number branch) and
the type's own (a validator's ``ValueError`` is attributed by its location: a field's validators,
or the model's at the model's place).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel, ValidationError

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
    if isinstance(output.python_type, type) and issubclass(output.python_type, BaseModel):
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
    schema: Any, root: dict[str, Any], path: Loc, models: dict[str, type[BaseModel]], found: list[Constraint],
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


def _validators(model: type[BaseModel], place: str) -> list[Constraint]:
    """The model's own ``field_validator``s (one per field they name) and ``model_validator``s."""
    decorators = model.__pydantic_decorators__
    found = []
    for name, decorator in decorators.field_validators.items():
        for field_name in decorator.info.fields:
            where = f"{place}.{field_name}" if place else field_name
            found.append(Constraint(where, "field validator", f"{model.__name__}.{name}"))
    found += [Constraint(place, "model validator", f"{model.__name__}.{name}") for name in decorators.model_validators]
    return found


def _models(declared: Any) -> dict[str, type[BaseModel]]:
    """The pydantic models reachable from ``declared`` by their fields' annotations, by the name
    their schema's ``$defs`` uses."""
    found: dict[str, type[BaseModel]] = {}
    stack = [declared]
    while stack:
        here = stack.pop()
        if isinstance(here, type) and issubclass(here, BaseModel):
            if here.__name__ in found:
                continue
            found[here.__name__] = here
            stack += [info.annotation for info in here.model_fields.values()]
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
    for loc, kind in _type_errors(output, value):
        path = _existing(value, loc)
        place = pattern_of(path)
        if kind in PYDANTIC_KEYWORDS:
            hits.update(
                c for c in among if not c.validator and c.place == place and c.keyword == PYDANTIC_KEYWORDS[kind]
            )
        elif kind in RAISED_BY_VALIDATORS:
            field_level = [c for c in among if c.keyword == "field validator" and c.place == place]
            model_level = [c for c in among if c.keyword == "model validator" and c.place == place]
            hits.update(field_level if path and isinstance(path[-1], str) and field_level else model_level)
    return frozenset(hits)


def _schema_errors(output: OutputType, value: Any) -> Iterator[tuple[str, str]]:
    stack = list(output._validator.iter_errors(value))
    while stack:
        error = stack.pop()
        if error.validator in ("anyOf", "oneOf"):
            stack += list(error.context or [])
        elif error.validator in KEYWORDS:
            yield pattern_of(tuple(error.absolute_path)), str(error.validator)


def _type_errors(output: OutputType, value: Any) -> list[tuple[Loc, str]]:
    try:
        output._adapter.validate_python(value)
    except ValidationError as error:
        return [(tuple(detail["loc"]), str(detail["type"])) for detail in error.errors()]
    except Exception:  # a validator raising something else: at no place anyone can name
        return []
    return []
