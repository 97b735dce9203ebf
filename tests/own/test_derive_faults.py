"""The derived faults break what a type declares (issue 46, item 3), each fault listed with the
constraints it breaks: a Decimal's bound (on the number branch of pydantic's ``number | string``
schema), an enum, a nested list's items, a validator across fields; what no fault breaks is named."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, TypedDict

import jsonschema
import pytest
from pydantic import AfterValidator, BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic.dataclasses import dataclass

from bench.own.derive import OutputType, derive_task
from bench.own.typed import unreached_line
from bench.scenarios.tasks import get_task


class Size(StrEnum):
    S = "S"
    M = "M"


class Price(BaseModel):
    sku: str
    price: Decimal = Field(ge=0)


class Line(BaseModel):
    size: Size
    amount: Decimal


class Order(BaseModel):
    reference: str
    lines: list[Line] = Field(min_length=1)
    total: Decimal

    @model_validator(mode="after")
    def total_is_the_sum(self) -> Order:
        if self.total != sum((line.amount for line in self.lines), Decimal(0)):
            raise ValueError("total must be the sum of the lines")
        return self


class Code(BaseModel):
    code: str = Field(min_length=2, max_length=3)


def cents(value: Decimal) -> Decimal:
    if value != value.quantize(Decimal("0.01")):
        raise ValueError("at most two decimals")
    return value


def short(value: str) -> str:
    if len(value) > 8:
        raise ValueError("at most eight characters")
    return value


@dataclass
class Entry:
    """A pydantic dataclass: two validators at one place, one in ``Annotated`` and one decorated."""

    amount: Annotated[Decimal, AfterValidator(cents)]

    @field_validator("amount")
    @classmethod
    def not_negative(cls, value: Decimal) -> Decimal:
        if value < 0:
            raise ValueError("no negative amounts")
        return value


@dataclasses.dataclass
class Note:
    """A standard dataclass: pydantic keeps no record of its fields, its type hints do."""

    text: Annotated[str, AfterValidator(short)]


class Stamp(TypedDict):
    by: Annotated[str, AfterValidator(short)]


class Ledger(BaseModel):
    tags: list[Annotated[str, AfterValidator(short)]] = Field(min_length=1)
    entries: list[Entry]
    total: Annotated[Decimal, AfterValidator(cents)]
    note: Note
    stamp: Stamp


ORDER = {
    "reference": "A-1",
    "lines": [{"size": "S", "amount": "2.50"}, {"size": "M", "amount": "1.25"}],
    "total": "3.75",
}


def test_a_decimal_bound_on_the_number_branch_is_broken() -> None:
    task = derive_task("price", OutputType.of(Price), "p", {"sku": "x", "price": "2.50"})
    answer = task.violations["out_of_range"]
    assert answer["price"] == -0.5 and "schema_violation:out_of_range" not in task.not_measured
    assert not jsonschema.Draft202012Validator(Price.model_json_schema()).is_valid(answer)
    with pytest.raises(ValidationError):
        Price.model_validate(answer)
    listed = {(fault.family, fault.scope): fault.breaks for fault in task.faults}
    assert listed[("schema_violation:out_of_range", "top")] == ("price minimum=0",)


def test_a_nested_tasks_scenario_sends_the_validator_fault_and_wrong_stays_valid() -> None:
    task = derive_task("order", OutputType.of(Order), "p", ORDER)
    nested = task.answering(get_task("expense_report").schema)
    assert jsonschema.Draft202012Validator(Order.model_json_schema()).is_valid(nested.wrong_sent)
    with pytest.raises(ValidationError, match="total must be the sum"):
        Order.model_validate(nested.wrong_sent)
    Order.model_validate(nested.wrong)  # what the hardened fallbacks hand back fits the type
    assert nested.violations["out_of_range"]["lines"][0]["size"] != "S"  # a line item broken, not the list emptied
    flat = task.answering(get_task("ticket_triage").schema)
    assert flat.wrong_sent is None and flat.violations == task.violations
    listed = {(fault.family, fault.scope): fault.breaks for fault in task.faults}
    assert listed[("wrong", "nested")] == ("Order.total_is_the_sum (model validator)",)


def test_the_wrong_answer_changes_an_enum_member_before_a_top_level_string() -> None:
    task = derive_task("order", OutputType.of(Order), "p", ORDER)
    changed = {(fault.family, fault.scope): fault.changes for fault in task.faults}
    assert changed[("wrong", "top")] == ("lines[0].size",)
    assert task.wrong["reference"] == ORDER["reference"]


def test_two_bounds_at_one_place_take_two_faults() -> None:
    task = derive_task("code", OutputType.of(Code), "p", {"code": "ab"})
    assert task.constraints == ("code minLength=2", "code maxLength=3")
    ranged = {fault.breaks for fault in task.faults if fault.family == "schema_violation:out_of_range"}
    assert ranged == {("code minLength=2",)}  # one place: its out-of-range answer is too short


def test_the_line_naming_what_no_fault_reached_fits_120_columns() -> None:
    named = [f"items[].field_{index} maxLength=80" for index in range(9)]
    manifest = {
        "output_type": {"reference": "billing.models:Invoice", "constraints": named, "faults": []},
        "scenarios": ["out_of_range_then_valid"],
    }
    line = unreached_line(manifest)
    assert line is not None and len(line) <= 120 and line.endswith(" more"), line
    assert line.startswith("not reached by any fault: 9 of 9 constraints of billing.models:Invoice")
    reached = {"family": "schema_violation:out_of_range", "scope": "top", "breaks": named}
    assert unreached_line(manifest | {"output_type": manifest["output_type"] | {"faults": [reached]}}) is None


def test_annotated_and_dataclass_validators_are_declared_and_told_apart_by_who_raised() -> None:
    answer = {
        "tags": ["a"],
        "entries": [{"amount": "1.25"}],
        "total": "1.25",
        "note": {"text": "n"},
        "stamp": {"by": "b"},
    }
    task = derive_task("ledger", OutputType.of(Ledger), "p", answer)
    validators = {
        "AfterValidator(short) (field validator on note.text)",
        "AfterValidator(short) (field validator on stamp.by)",
        "Entry.not_negative (field validator on entries[].amount)",
        "AfterValidator(cents) (field validator on entries[].amount)",
        "AfterValidator(short) (field validator on tags[])",
        "AfterValidator(cents) (field validator on total)",
    }
    assert validators <= set(task.constraints), task.constraints
    broken = {name for fault in task.faults for name in fault.breaks}
    assert validators - broken == {"Entry.not_negative (field validator on entries[].amount)"}  # one place, one fault
    for fault in task.faults:  # each claim holds: the validator credited is the one that refuses
        if "AfterValidator(cents) (field validator on entries[].amount)" in fault.breaks:
            with pytest.raises(ValidationError, match="at most two decimals"):
                Ledger.model_validate(fault.answer)
    faults = [{"family": f.family, "scope": f.scope, "breaks": list(f.breaks)} for f in task.faults]
    manifest = {
        "output_type": {"reference": "l:Ledger", "constraints": list(task.constraints), "faults": faults},
        "scenarios": ["out_of_range_then_valid", "expense_wrong_total_persistent"],
    }
    assert unreached_line(manifest) == (
        "not reached by any fault: 1 of 7 constraints of l:Ledger: "
        "Entry.not_negative (field validator on entries[].amount)"
    )
