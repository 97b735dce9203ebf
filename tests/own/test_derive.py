"""Faults derived for any output type (issue 15, point 2): a property test over generated schemas,
and the derived task's meaning of correct."""

from __future__ import annotations

import random
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, ConfigDict, Field

from bench.own.config import OwnAgentError
from bench.own.derive import OutputType, derive_task, generate, violations

LEAVES = ("string", "bounded_int", "bounded_number", "boolean", "enum", "email", "sized_string")


def _leaf(rng: random.Random, kind: str) -> dict[str, Any]:
    low = rng.randint(-50, 50)
    return {
        "string": {"type": "string"},
        "sized_string": {"type": "string", "minLength": rng.randint(1, 4), "maxLength": rng.randint(12, 30)},
        "email": {"type": "string", "format": "email"},
        "bounded_int": {"type": "integer", "minimum": low, "maximum": low + rng.randint(0, 40)},
        "bounded_number": {"type": "number", "exclusiveMinimum": low, "maximum": low + rng.randint(1, 9)},
        "boolean": {"type": "boolean"},
        "enum": {"enum": rng.sample(["red", "green", "blue", "amber", "violet"], rng.randint(1, 4))},
    }[kind]


def _property(rng: random.Random, depth: int, defs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(subschema, required) for one property: leaves, arrays, nested objects (inline or via
    $ref), unions and optional (nullable, not required) fields."""
    kinds = [*LEAVES, "union", "optional"] + (["array", "object", "ref"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "array":
        inner = _object(rng, depth + 1, defs) if rng.random() < 0.4 else _leaf(rng, rng.choice(LEAVES))
        return {"type": "array", "items": inner, "minItems": 1, "maxItems": rng.randint(2, 4)}, True
    if kind == "object":
        return _object(rng, depth + 1, defs), True
    if kind == "ref":
        name = f"Def{len(defs)}"
        defs[name] = {}  # reserved first, so a nested $ref gets its own name
        defs[name] = _object(rng, depth + 1, defs)
        return {"$ref": f"#/$defs/{name}"}, True
    if kind == "union":
        return {"anyOf": [_leaf(rng, "bounded_int"), _leaf(rng, "sized_string")]}, True
    if kind == "optional":
        return {"anyOf": [_leaf(rng, rng.choice(LEAVES)), {"type": "null"}], "default": None}, False
    return _leaf(rng, kind), True


def _object(rng: random.Random, depth: int, defs: dict[str, Any]) -> dict[str, Any]:
    properties, required = {}, []
    for index in range(rng.randint(2, 5)):
        name = f"field_{depth}_{index}"
        properties[name], needed = _property(rng, depth, defs)
        if needed:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if rng.random() < 0.6:
        schema["additionalProperties"] = False
    return schema


def random_schema(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    defs: dict[str, Any] = {}
    schema = _object(rng, 0, defs)
    if defs:
        schema["$defs"] = defs
    return schema


@pytest.mark.parametrize("seed", range(20))
def test_derived_answers_fit_and_violations_do_not(seed: int) -> None:
    schema = random_schema(seed)
    jsonschema.Draft202012Validator.check_schema(schema)
    output = OutputType.of(schema)
    valid = generate(output)
    assert valid, f"no valid answer generated for {schema}"
    validator = jsonschema.Draft202012Validator(schema)
    for answer in valid:
        assert validator.is_valid(answer), (answer, list(validator.iter_errors(answer))[:1])
    derived = violations(output, valid[0])
    assert {"missing_field", "wrong_type"} <= set(derived)
    for variant, answer in derived.items():
        assert not validator.is_valid(answer), (variant, answer)
    if schema.get("additionalProperties") is False:
        assert "extra_key" in derived


def test_the_property_test_can_fail() -> None:
    """The check above is not vacuous: an answer that breaks a bound is caught by it."""
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}
    assert not jsonschema.Draft202012Validator(schema).is_valid({"n": 4})
    assert violations(OutputType.of(schema), {"n": 2})["out_of_range"] == {"n": 4}


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    summary: str
    tags: list[str] = Field(default_factory=list, max_length=3)


def test_a_model_gets_every_violation_the_type_also_rejects() -> None:
    task = derive_task("t", OutputType.of(Ticket), "prompt")
    Ticket.model_validate(task.reference)
    assert set(task.violations) == {"missing_field", "wrong_type", "extra_key", "out_of_range"}
    for answer in task.violations.values():
        assert task.judge(answer) == (False, False)
    # A bound is broken rather than the enum: strict decoding enforces enums, not bounds.
    assert task.violations["out_of_range"]["priority"] in (0, 6)
    assert not task.has_wrong  # no check, no example: wrong is not applicable


def test_wrong_from_the_users_check() -> None:
    def check(ticket: Ticket) -> str | None:
        return None if ticket.label == "bug" else f"label {ticket.label}"

    task = derive_task("t", OutputType.of(Ticket), "prompt", check=check)
    assert task.judge(task.reference) == (True, True)
    assert task.judge(task.wrong) == (True, False)


def test_wrong_from_an_example_differs_in_one_field() -> None:
    example = {"label": "bug", "priority": 2, "summary": "CSV export crashes", "tags": []}
    task = derive_task("t", OutputType.of(Ticket), "prompt", example=example)
    assert task.reference == example
    assert task.judge(task.wrong) == (True, False)
    assert sum(task.wrong[key] != example[key] for key in example) == 1


def test_an_example_that_does_not_fit_is_one_line() -> None:
    with pytest.raises(OwnAgentError, match="field example: the example does not validate"):
        derive_task("t", OutputType.of(Ticket), "prompt", example={"label": "nope"})
