"""The derived faults break what a type declares (issue 46, item 3), each fault listed with the
constraints it breaks: a Decimal's bound (on the number branch of pydantic's ``number | string``
schema), an enum, a nested list's items, a validator across fields; what no fault breaks is named."""

from __future__ import annotations

from decimal import Decimal
from enum import StrEnum

import jsonschema
import pytest
from pydantic import BaseModel, Field, ValidationError, model_validator

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
