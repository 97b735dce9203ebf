"""``bench pick --type invoice:Invoice`` from a user's project outside this repository, on the
invoice of issues 45 (item 4) and 46 (item 3): line items whose amounts a ``field_validator``
limits to two decimals, a Decimal total a ``model_validator`` checks against the lines, an enum.

The derivation meets the validators across fields (the answers are repaired where the type says
they are wrong, several fields at once); a rule no repair meets is one line naming ``--example
FILE``, and that option makes the run."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner, Result

from bench.cli import app
from bench.results import golden
from bench.results.store import read_manifest, read_table

runner = CliRunner()
MODULE = "invoice"
INVOICE = '''
from decimal import Decimal
from enum import Enum

from pydantic import BaseModel, Field, field_validator, model_validator


class Currency(str, Enum):
    EUR = "EUR"
    USD = "USD"
    GBP = "GBP"


def cents(value: Decimal) -> Decimal:
    if value != value.quantize(Decimal("0.01")):
        raise ValueError("at most two decimals")
    return value


class LineItem(BaseModel):
    description: str = Field(min_length=1, max_length=80)
    quantity: int = Field(ge=1, le=1000)
    unit_price: Decimal = Field(ge=0)
    amount: Decimal

    _cents = field_validator("unit_price", "amount")(cents)


class Invoice(BaseModel):
    invoice_number: str = Field(pattern=r"^INV-\\d{4}$")
    currency: Currency
    items: list[LineItem] = Field(min_length=1, max_length=20)
    total: Decimal

    _cents = field_validator("total")(cents)

    @model_validator(mode="after")
    def total_is_sum_of_lines(self) -> "Invoice":
        if self.total != sum((item.amount for item in self.items), Decimal("0")):
            raise ValueError("total must equal the sum of the line amounts")
        return self


class Audited(Invoice):
    """A rule no repair meets: the audited total is one number."""

    @model_validator(mode="after")
    def audited_total(self) -> "Audited":
        if self.total != Decimal("123.45"):
            raise ValueError("the audited total is 123.45")
        return self
'''
EXAMPLE = {
    "invoice_number": "INV-0042",
    "currency": "EUR",
    "items": [
        {"description": "Consulting", "quantity": 3, "unit_price": "41.15", "amount": "123.45"},
        {"description": "Travel", "quantity": 1, "unit_price": "0.00", "amount": "0.00"},
    ],
    "total": "123.45",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's project, the working directory of every command here."""
    root = tmp_path_factory.mktemp("billing")
    assert not root.resolve().is_relative_to(Path(__file__).resolve().parents[2])
    (root / f"{MODULE}.py").write_text(INVOICE, encoding="utf-8")
    (root / "audited.json").write_text(json.dumps(EXAMPLE), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.syspath_prepend(str(root))
        yield root
    sys.modules.pop(MODULE, None)


def pick_type(project: Path, reference: str, *more: str, results: str = "results") -> Result:
    scenarios = more if any(arg.startswith("--scenario=") for arg in more) else ("--scenario=valid", *more)
    args = ["pick", "--type", reference, "--sdk", "pydantic-ai", "--protocol", "openai-chat", *scenarios]
    return runner.invoke(app, [*args, "--results", str(project / results)])


def latest(project: Path, results: str = "results") -> Path:
    return project / results / (project / results / "latest").read_text(encoding="utf-8").strip()


@pytest.mark.slow  # a run of three cells: about 4 s on this loaded machine
def test_the_invoice_is_derived_through_its_validators_across_fields(project: Path) -> None:
    result = pick_type(project, f"{MODULE}:Invoice")
    assert result.exit_code == 0, result.stdout + result.stderr
    typed = read_manifest(latest(project))["output_type"]
    invoice = sys.modules[MODULE].Invoice
    valid = invoice.model_validate(typed["valid"])  # every validator accepts it
    assert valid.total == sum((item.amount for item in valid.items), Decimal(0)) and valid.total != 0
    assert all(item.amount == item.amount.quantize(Decimal("0.01")) for item in valid.items)
    invoice.model_validate(typed["wrong"])


def test_a_rule_no_repair_meets_names_the_example_option(project: Path) -> None:
    result = pick_type(project, f"{MODULE}:Audited", results="refused")
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--example FILE" in result.stderr, result.stderr
    assert "cannot generate an answer the output type accepts" in result.stderr
    assert not (project / "refused").exists()


@pytest.mark.slow
def test_the_example_option_makes_the_run_of_that_type(project: Path) -> None:
    result = pick_type(project, f"{MODULE}:Audited", "--example", "audited.json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert read_manifest(latest(project))["output_type"]["valid"] == EXAMPLE


DECLARED = {
    "invoice_number pattern", "currency enum", "items minItems=1", "items[].quantity minimum=1",
    "items[].quantity maximum=1000", "items[].unit_price minimum=0", "items[].description minLength=1",
    "items[].description maxLength=80", "Invoice._cents (field validator on total)",
    "LineItem._cents (field validator on items[].unit_price)", "LineItem._cents (field validator on items[].amount)",
    "Invoice.total_is_sum_of_lines (model validator)",
}  # fmt: skip
"""What the invoice declares that its faults break: every bound (the Decimal ``ge`` on the schema's
number branch), the enum, the pattern, the nested list's items and the validators."""


@pytest.mark.slow  # a run of three cells and their control: about 6 s on this loaded machine
def test_the_faults_break_what_the_invoice_declares_and_say_what_none_reached(project: Path) -> None:
    scenarios = ("out_of_range_then_valid", "expense_bad_category_then_valid", "expense_wrong_total_persistent")
    result = pick_type(project, f"{MODULE}:Invoice", *[f"--scenario={name}" for name in scenarios], results="faults")
    assert result.exit_code == 0, result.stdout + result.stderr
    typed = read_manifest(latest(project, "faults"))["output_type"]
    invoice, schema = sys.modules[MODULE].Invoice, sys.modules[MODULE].Invoice.model_json_schema()
    faults = {(fault["family"], fault["scope"]): fault for fault in typed["faults"]}
    assert {name for fault in typed["faults"] for name in fault["breaks"]} >= DECLARED
    assert sorted(typed["constraints"]) == sorted([*DECLARED, "items maxItems=20"])
    for scope in ("top", "nested"):  # each out-of-range fault is refused by the schema and the type
        answer = faults[("schema_violation:out_of_range", scope)]["answer"]
        assert not jsonschema.Draft202012Validator(schema).is_valid(answer)
        with pytest.raises(ValidationError):
            invoice.model_validate(answer)
    crossing = faults[("wrong", "nested")]
    assert crossing["breaks"] == ["Invoice.total_is_sum_of_lines (model validator)"]
    assert jsonschema.Draft202012Validator(schema).is_valid(crossing["answer"])  # only the validator sees it
    with pytest.raises(ValidationError, match="total must equal the sum of the line amounts"):
        invoice.model_validate(crossing["answer"])
    wrong = faults[("wrong", "top")]
    invoice.model_validate(wrong["answer"])
    assert wrong["changes"] == ["currency"] and wrong["answer"] == typed["wrong"]  # another member, not the number
    runs = read_table(latest(project, "faults"), "runs").to_pylist()
    crossed = [row for row in runs if row["scenario"] == "expense_wrong_total_persistent"]
    assert crossed and {row["outcome"] for row in crossed} == {"raised"}
    assert_scores_differ_from_the_builtin_run(runs, "expense_wrong_total_persistent")
    sent = [row["response_body"] or "" for row in read_table(latest(project, "faults"), "attempts").to_pylist()]
    assert crossing["answer"]["total"] != typed["valid"]["total"]
    assert any(crossing["answer"]["total"] in body for body in sent)  # the validator fault is what was sent
    said = [line for line in result.stdout.splitlines() if line.startswith("not reached by any fault")]
    assert said == [  # pydantic checks no item of a list too long: no answer breaks both
        "not reached by any fault: 1 of 13 constraints of invoice:Invoice: items maxItems=20"
    ]


def assert_scores_differ_from_the_builtin_run(runs: list[dict[str, object]], scenario: str) -> None:
    """The type's cells of ``scenario`` against the same cells of the built-in run (the golden
    matrix): the invoice's validator fault is refused where the built-in wrong total is handed on."""
    builtin = golden.read()
    builtin = builtin[(builtin["sdk"] == "pydantic-ai") & (builtin["scenario"] == scenario)]
    before = {(row.mode, row.variant, row.protocol, bool(row.stream)): row.outcome for row in builtin.itertuples()}
    ours = {
        (r["mode"], r["variant"], r["protocol"], bool(r["stream"])): r["outcome"]
        for r in runs
        if r["scenario"] == scenario
    }
    assert ours and set(ours) <= set(before), sorted(set(ours) - set(before))
    changed = {cell: (before[cell], outcome) for cell, outcome in ours.items() if before[cell] != outcome}
    assert changed == {cell: (before[cell], "raised") for cell in ours}, changed  # every cell: wrong or fallback before
    assert {before[cell] for cell in ours} <= {"wrong", "fallback"}
