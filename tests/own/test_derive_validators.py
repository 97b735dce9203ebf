"""Answers derived under a user's own validators (issue 25, point 1): a type whose
``field_validator``/``model_validator`` refuse most of what a generator builds still gets a
valid reference and a wrong answer that its type accepts; a family that truly cannot be built
is named, with the reason, never silently dropped."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from bench.own.config import OwnAgentError
from bench.own.derive import NO_MEANING, OutputType, derive_task, generate


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str = Field(pattern=r"^[A-Z]{3}-\d{4}$")
    amount: float

    @field_validator("amount")
    @classmethod
    def two_decimals(cls, value: float) -> float:
        if round(value, 2) != value:
            raise ValueError("amounts have at most two decimals")
        return value


class Invoice(BaseModel):
    """Decimal and float limited to two decimals, a regex, a nested list with a minimum length
    and a rule across fields: what a generator alone almost never gets right."""

    model_config = ConfigDict(extra="forbid")
    number: str = Field(pattern=r"^INV-\d{6}$")
    currency: Literal["EUR", "USD", "GBP"]
    total: Decimal = Field(max_digits=10, decimal_places=2)
    lines: list[Line] = Field(min_length=2)

    @model_validator(mode="after")
    def total_is_the_sum(self) -> Invoice:
        if sum(Decimal(str(line.amount)) for line in self.lines) != self.total:
            raise ValueError("total must be the sum of the lines")
        return self


EXAMPLE: dict[str, Any] = {
    "number": "INV-000123",
    "currency": "EUR",
    "total": "30.50",
    "lines": [{"sku": "ABC-0001", "amount": 10.25}, {"sku": "XYZ-0002", "amount": 20.25}],
}


def right_number(invoice: Invoice) -> str | None:
    return None if invoice.number == "INV-000123" else f"number is {invoice.number}, expected INV-000123"


def in_euros(invoice: Invoice) -> str | None:
    return None if invoice.currency == "EUR" else f"currency is {invoice.currency}, expected EUR"


def test_generated_answers_pass_the_types_own_validators() -> None:
    output = OutputType.of(Invoice)
    answers = generate(output)
    assert answers, "no answer the validators accept"
    for answer in answers:
        Invoice.model_validate(answer)  # raises if a validator refuses it


@pytest.mark.parametrize(
    ("example", "check"), [(EXAMPLE, right_number), (EXAMPLE, None), (None, in_euros)], ids=["both", "example", "check"]
)
def test_wrong_is_a_valid_answer_that_is_not_right(example: dict[str, Any] | None, check: Any) -> None:
    """The issue's case (example and check declared, a two-decimals validator) and each alone."""
    task = derive_task("billing", OutputType.of(Invoice), "prompt", example=example, check=check)
    assert task.has_wrong and "wrong" not in task.not_measured, task.not_measured
    Invoice.model_validate(task.reference)
    Invoice.model_validate(task.wrong)  # valid: every validator accepts it
    assert task.judge(task.reference) == (True, True)
    assert task.judge(task.wrong) == (True, False)  # ... and it is wrong
    if example is not None:
        assert task.reference == example


def test_an_example_is_judged_through_the_type() -> None:
    """``30.5`` in the example and the type's ``"30.50"`` are the same total, not a wrong one."""
    example = {**EXAMPLE, "total": 30.5}
    task = derive_task("billing", OutputType.of(Invoice), "prompt", example=example)
    assert task.judge(Invoice.model_validate(EXAMPLE)) == (True, True)
    assert task.judge(task.wrong) == (True, False)


def test_a_raw_schema_with_patterns_gets_a_wrong_answer() -> None:
    """Claude's ``output_format`` is a JSON Schema: patterns are generated, not refused."""
    task = derive_task("claude", OutputType.of(Invoice.model_json_schema()), "prompt", example=EXAMPLE)
    assert task.has_wrong
    assert task.output_type.accepts(task.wrong) and task.wrong != EXAMPLE


def test_without_check_or_example_every_valid_answer_is_equally_right() -> None:
    task = derive_task("billing", OutputType.of(Invoice), "prompt")
    assert not task.has_wrong
    assert task.not_measured["wrong"] == NO_MEANING


class Ack(BaseModel):
    status: Literal["received"]
    version: Literal[2]


def test_a_type_with_one_valid_answer_has_no_wrong_one() -> None:
    """An example says what is right, but the type admits nothing else to be wrong with."""
    task = derive_task("ack", OutputType.of(Ack), "prompt", example={"status": "received", "version": 2})
    assert not task.has_wrong
    assert task.not_measured["wrong"].startswith("cannot be built: the output type accepts no answer other than")
    assert task.not_measured["schema_violation:extra_key"].startswith("cannot be built: the output schema allows")


def test_a_check_that_accepts_everything_names_why() -> None:
    task = derive_task("billing", OutputType.of(Invoice), "prompt", example=EXAMPLE, check=lambda invoice: None)
    assert task.not_measured["wrong"].startswith("cannot be built: the check accepts all ")


def test_a_check_that_raises_is_one_line() -> None:
    def broken(invoice: Invoice) -> str | None:
        raise KeyError("customer")

    with pytest.raises(OwnAgentError, match=r"field check: the check raised KeyError: 'customer'"):
        derive_task("billing", OutputType.of(Invoice), "prompt", example=EXAMPLE, check=broken)


def test_an_example_the_validators_refuse_names_where() -> None:
    bad = {**EXAMPLE, "total": "99.00"}
    with pytest.raises(OwnAgentError, match=r"the example does not validate against the output type \(at the top"):
        derive_task("billing", OutputType.of(Invoice), "prompt", example=bad)
