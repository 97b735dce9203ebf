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

import pytest
from typer.testing import CliRunner, Result

from bench.cli import app
from bench.results.store import read_manifest

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
    args = ["pick", "--type", reference, "--sdk", "pydantic-ai", "--protocol", "openai-chat", "--scenario", "valid"]
    return runner.invoke(app, [*args, "--results", str(project / results), *more])


def latest(project: Path) -> Path:
    return project / "results" / (project / "results" / "latest").read_text(encoding="utf-8").strip()


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
