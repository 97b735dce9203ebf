"""``bench pick --type module:Type`` end to end through typer's CliRunner, from a user's project
outside this repository (a temporary folder on ``sys.path``): the built-in SDKs run on the user's
own type (a ``field_validator`` and a nested list), with answers derived from it; the ranking of
that run changes with the weights; a type that cannot be used, and a family that cannot be
derived, are said."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bench.cli import app
from bench.core.vocabulary import Outcome
from bench.results.store import read_manifest, read_table

runner = CliRunner()
PACKAGE = "pickdesk"
MODELS = '''
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Line(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sku: str = Field(pattern=r"^[A-Z]{3}-[0-9]{3}$")
    quantity: int = Field(ge=1, le=99)
    amount: Decimal

    @field_validator("amount")
    @classmethod
    def two_decimals(cls, value: Decimal) -> Decimal:
        if value.as_tuple().exponent < -2:
            raise ValueError("amounts have at most two decimals")
        return value


class Ticket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["billing", "bug", "feature"]
    priority: int = Field(ge=1, le=5)
    lines: list[Line]
    summary: str


class Note(BaseModel):
    """No bound, length or enum anywhere: out_of_range cannot be built."""

    text: str
    tags: list[str]


class Tagged(BaseModel):
    """A free-form mapping: openai-agents' strict schema refuses it before any request."""

    name: str
    meta: dict[str, str]


class Plain:
    pass


NOT_A_TYPE = 3
'''
SCENARIOS = (
    "valid",
    "wrong_persistent",
    "malformed_persistent",
    "schema_violation_persistent",
    "out_of_range_persistent",
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's project, the working directory of every command here."""
    root = tmp_path_factory.mktemp("helpdesk")
    (root / PACKAGE).mkdir()
    (root / PACKAGE / "__init__.py").write_text("", encoding="utf-8")
    (root / PACKAGE / "models.py").write_text(MODELS, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.syspath_prepend(str(root))
        yield root
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]


def _pick_type(project: Path, reference: str, *more: str) -> Result:
    scenarios = [arg for name in SCENARIOS for arg in ("--scenario", name)]
    args = ["pick", "--type", reference, "--sdk", "langchain", "--protocol", "openai-chat", *scenarios]
    return runner.invoke(app, [*args, "--results", str(project / "results"), *more])


@pytest.fixture(scope="module")
def ticket_run(project: Path) -> tuple[Result, Path]:
    result = _pick_type(project, f"{PACKAGE}.models:Ticket")
    assert result.exit_code == 0, result.stdout + result.stderr
    return result, project / "results" / (project / "results" / "latest").read_text(encoding="utf-8").strip()


@pytest.mark.slow  # the run: about 3 s idle, 9 s on this loaded machine
def test_the_built_in_sdk_runs_on_the_users_type(ticket_run: tuple[Result, Path]) -> None:
    result, directory = ticket_run
    assert f"on your type {PACKAGE}.models:Ticket" in result.stdout
    assert "narrowed by --sdk langchain; --protocol openai-chat" in result.stderr  # never narrower than it says
    header = next(line for line in result.stdout.splitlines() if line.startswith("# "))
    assert header.split()[:5] == ["#", "sdk", "lang", "mode", "score"]
    assert {line.split()[3] for line in result.stdout.splitlines() if line[:2] in ("1 ", "2 ", "3 ")} == {
        "tool", "native", "prompted",
    }  # fmt: skip
    assert f"bench pick {directory}" in result.stdout or f"bench pick results/{directory.name}" in result.stdout
    runs = read_table(directory, "runs").to_pandas()
    assert set(runs["sdk"]) == {"langchain"} and Outcome.HARNESS_ERROR not in set(runs["outcome"])
    assert set(runs.loc[runs["scenario"] == "valid", "outcome"]) == {Outcome.OK}
    assert set(runs.loc[runs["scenario"] == "wrong_persistent", "outcome"]) == {Outcome.WRONG}
    assert Outcome.UNSUPPORTED not in set(runs.loc[runs["mode_support"] != "unsupported", "outcome"])


@pytest.mark.slow  # the run: about 3 s idle, 9 s on this loaded machine
def test_the_answers_are_derived_from_the_type_its_validator_included(ticket_run: tuple[Result, Path]) -> None:
    _, directory = ticket_run
    typed = read_manifest(directory)["output_type"]
    ticket = importlib.import_module(f"{PACKAGE}.models").Ticket
    valid, wrong = ticket.model_validate(typed["valid"]), ticket.model_validate(typed["wrong"])
    assert valid != wrong and valid.lines  # the nested list is filled
    assert all(Decimal(line.amount).as_tuple().exponent >= -2 for line in valid.lines)
    assert set(typed["violations"]) == {"missing_field", "wrong_type", "extra_key", "out_of_range"}
    assert typed["not_measured"] == {}
    attempts = read_table(directory, "attempts").to_pandas()
    served = attempts.loc[attempts["behaviour"] == "valid", "response_body"].dropna()
    assert served.str.contains(typed["valid"]["summary"], regex=False).all()  # what was sent is the derived answer


@pytest.mark.slow  # the run: about 3 s idle, 9 s on this loaded machine
def test_the_ranking_changes_when_the_weights_do(ticket_run: tuple[Result, Path]) -> None:
    """langchain tool keeps calling on a persistent fault (runaway) where native and prompted
    raise: dear runaways rank it last, dear raises first."""
    _, directory = ticket_run

    def order(weights: str) -> list[str]:
        result = runner.invoke(app, ["pick", str(directory), "--json", "--weight", weights])
        assert result.exit_code == 0, result.stderr
        return [f"{row['sdk']}/{row['mode']}" for row in json.loads(result.stdout)["rows"]]

    runaway_dear, raise_dear = order("runaway=50,raised=1"), order("runaway=0,raised=50")
    assert runaway_dear != raise_dear
    assert runaway_dear[-1] == "langchain/tool" and raise_dear[0] == "langchain/tool"


def test_a_family_that_cannot_be_derived_is_said_never_dropped(project: Path) -> None:
    result = _pick_type(project, f"{PACKAGE}.models:Note")
    assert result.exit_code == 0, result.stdout + result.stderr
    said = "not measured: type 'pickdesk.models:Note': schema_violation:out_of_range (cannot be built: "
    assert said in result.stdout
    directory = project / "results" / (project / "results" / "latest").read_text(encoding="utf-8").strip()
    entries = read_manifest(directory)["not_measured"]
    assert [(e["type"], e["family"]) for e in entries] == [(f"{PACKAGE}.models:Note", "schema_violation:out_of_range")]
    runs = read_table(directory, "runs").to_pandas()
    gaps = runs[runs["scenario"] == "out_of_range_persistent"]
    assert set(gaps["outcome"]) == {Outcome.UNSUPPORTED} and gaps["note"].str.contains("not applicable").all()


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        (f"{PACKAGE}.models:Plain", "--type 'pickdesk.models:Plain': Plain is not a pydantic BaseModel subclass"),
        (f"{PACKAGE}.models:NOT_A_TYPE", "int is not a pydantic BaseModel subclass"),
        (f"{PACKAGE}.models:Missing", "has no attribute 'Missing'"),
        ("nomodule_here:Ticket", "no module named 'nomodule_here'"),
        (f"{PACKAGE}.models", "expected module:attr"),
    ],
)
def test_a_type_that_cannot_be_used_is_one_line_and_exit_2(project: Path, reference: str, says: str) -> None:
    before = sorted((project / "results").iterdir()) if (project / "results").exists() else []
    result = runner.invoke(app, ["pick", "--type", reference, "--results", str(project / "results")])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and says in result.stderr
    after = sorted((project / "results").iterdir()) if (project / "results").exists() else []
    assert after == before  # nothing written


def test_run_shaping_options_need_type() -> None:
    directory = Path(__file__).resolve().parents[1] / "fixtures" / "small_run"
    result = runner.invoke(app, ["pick", str(directory), "--sdk", "langchain"])
    assert result.exit_code == 2 and "--sdk shape a --type run" in result.stderr
    both = runner.invoke(app, ["pick", str(directory), "--type", f"{PACKAGE}.models:Ticket"])
    assert both.exit_code == 2 and "not both" in both.stderr


def test_an_sdk_that_refuses_the_type_before_sending_raises_as_the_user_would_see_it(project: Path) -> None:
    """openai-agents' strict schema refuses a ``dict`` field: at ``function_tool`` (tool mode) and
    at the run (native). That is the user's type meeting the SDK, so ``raised`` with 0 calls and
    the SDK's UserError, not a harness error (exit 0)."""
    args = ["pick", "--type", f"{PACKAGE}.models:Tagged", "--sdk", "openai-agents", "--protocol", "openai-chat"]
    result = runner.invoke(app, [*args, "--scenario", "valid", "--results", str(project / "results")])
    assert result.exit_code == 0, result.stdout + result.stderr
    directory = project / "results" / (project / "results" / "latest").read_text(encoding="utf-8").strip()
    runs = read_table(directory, "runs").to_pandas()
    ran = runs[runs["outcome"] != Outcome.UNSUPPORTED]
    assert set(ran["mode"]) == {"tool", "native"} and set(ran["outcome"]) == {Outcome.RAISED}
    assert set(ran["exception_type"]) == {"agents.exceptions.UserError"} and set(ran["model_calls"]) == {0}
