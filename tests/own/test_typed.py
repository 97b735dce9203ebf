"""bench.own.typed: a built-in adapter on a user's type answers the task derived from that type
(right is the derived reference, so ``wrong`` is derived too), keeps every cell of its own, and
says which fault families the type gives no answer for."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator

from bench.own.config import OwnAgentError
from bench.own.typed import OnYourType, TypeRequest, on_type, typed_task
from bench.run.suite import SuiteRequest, request_from_json, request_to_json
from bench.scenarios.files import SCENARIO_DIR, load_paths
from bench.sdk import registry
from bench.sdk.failures import raised_by_sdk


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    price: float = Field(ge=0)

    @field_validator("price")
    @classmethod
    def cents(cls, value: float) -> float:
        if round(value, 2) != value:
            raise ValueError("prices have at most two decimals")
        return value


class Basket(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Item] = Field(min_length=1)
    note: str


class Loose(BaseModel):
    text: str


NOT_A_MODEL = {"type": "object"}
HERE = f"{__name__}"
SCENARIOS = {s.name: s for s in load_paths([SCENARIO_DIR])}


def test_the_task_is_derived_from_the_type_its_validator_included() -> None:
    task = typed_task(TypeRequest(f"{HERE}:Basket"), Path.cwd())
    assert task.name == f"type:{HERE}:Basket" and task.output_model is Basket
    reference, wrong = Basket.model_validate(task.reference), Basket.model_validate(task.wrong)
    assert all(round(item.price, 2) == item.price for item in reference.items)
    assert task.has_wrong and task.check(wrong) is not None and task.check(reference) is None
    assert task.not_measured == {}


def test_a_check_decides_what_is_right() -> None:
    task = typed_task(TypeRequest(f"{HERE}:Basket", check=f"{HERE}:one_item"), Path.cwd())
    assert task.has_wrong and task.check(Basket.model_validate(task.wrong)) == "more than one item"
    assert task.check(Basket.model_validate(task.reference)) is None


def test_a_check_no_answer_fails_leaves_wrong_not_measured() -> None:
    task = typed_task(TypeRequest(f"{HERE}:Basket", check=f"{HERE}:accept_all"), Path.cwd())
    assert not task.has_wrong and task.not_measured["wrong"].startswith("cannot be built: the check accepts all")
    assert task.wrong == task.reference  # what openai-agents' hardened fallback hands back: it must fit


def accept_all(basket: Basket) -> str | None:
    return None


def one_item(basket: Basket) -> str | None:
    return "more than one item" if len(basket.items) > 1 else None


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        (f"{HERE}:NOT_A_MODEL", "dict is not a pydantic BaseModel subclass"),
        (f"{HERE}:Nothing", "has no attribute 'Nothing'"),
        ("no_such_module_xyz:T", "no module named 'no_such_module_xyz'"),
    ],
)
def test_a_type_that_cannot_be_used_is_one_line(reference: str, says: str) -> None:
    with pytest.raises(OwnAgentError, match=says):
        typed_task(TypeRequest(reference), Path.cwd())


def test_a_bad_example_names_the_flag(tmp_path: Path) -> None:
    (tmp_path / "basket.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(OwnAgentError, match=r"--example .*basket.json: holds a list, not an object"):
        typed_task(TypeRequest(f"{HERE}:Basket", example="basket.json"), tmp_path)
    (tmp_path / "basket.json").write_text('{"items": [], "note": "x"}', encoding="utf-8")
    with pytest.raises(OwnAgentError, match=r"--type .*Basket.*field example: the example does not validate"):
        typed_task(TypeRequest(f"{HERE}:Basket", example="basket.json"), tmp_path)


def test_a_built_in_adapter_keeps_its_cells_and_answers_the_type() -> None:
    builtin = registry.load("pydantic-ai")
    typed = on_type({"pydantic-ai": builtin}, TypeRequest(f"{HERE}:Basket"), Path.cwd())["pydantic-ai"]
    assert isinstance(typed, OnYourType) and isinstance(typed, type(builtin))
    assert typed.cells() == builtin.cells()
    assert typed.task_for(SCENARIOS["valid"]).output_model is Basket
    tool_task = typed.task_for(SCENARIOS["tool_ok"])
    assert tool_task.output_model is Basket and tool_task.tool_name == "lookup_order"  # the harness tool stays
    assert typed.not_measured(SCENARIOS["out_of_range_persistent"]) is None


def test_a_family_the_type_gives_no_answer_for_is_not_applicable_with_the_reason() -> None:
    typed = on_type({"pydantic-ai": registry.load("pydantic-ai")}, TypeRequest(f"{HERE}:Loose"), Path.cwd())
    adapter = typed["pydantic-ai"]
    assert isinstance(adapter, OnYourType)
    cell = adapter.cells()[0]
    family, reason = adapter.not_measured(SCENARIOS["out_of_range_persistent"]) or ("", "")
    assert family == "schema_violation:out_of_range" and reason.startswith("cannot be built")
    assert adapter.scenario_gap(cell, SCENARIOS["out_of_range_persistent"]) == f"not applicable: {family} {reason}"
    assert adapter.scenario_gap(cell, SCENARIOS["valid"]) is None


def test_the_recorded_request_keeps_the_type() -> None:
    request = SuiteRequest(sdks=("pydantic-ai",), output_type=TypeRequest(f"{HERE}:Basket", "b.json", "m:check"))
    recorded = request_to_json(request, request.sdks)
    assert recorded["output_type"] == {"reference": f"{HERE}:Basket", "example": "b.json", "check": "m:check"}
    assert request_from_json(recorded, Path("results")).output_type == request.output_type
    assert "output_type" not in request_to_json(SuiteRequest(), ())  # a run of the built-in tasks is unchanged


def _raised_in(package: str, line: str, **names: object) -> BaseException:
    """The exception ``line`` raises when it runs in a module of ``package`` (the frame's module
    name is what :func:`raised_by_sdk` reads)."""
    namespace: dict[str, object] = {"__name__": f"{package}.probe", **names}
    exec(compile(f"def run():\n    {line}\n", f"{package}/probe.py", "exec"), namespace)
    try:
        namespace["run"]()  # type: ignore[operator]
    except Exception as error:
        return error
    raise AssertionError(f"{line} did not raise")


class Counts(BaseModel):
    counts: dict[str, int]


def test_whose_exception_is_decided_by_where_it_was_raised_not_by_its_class() -> None:
    from agents import AgentOutputSchema

    refuse = "AgentOutputSchema(Counts)"  # openai-agents' strict schema refuses a dict field, in its own code
    assert raised_by_sdk(_raised_in("adapters", refuse, AgentOutputSchema=AgentOutputSchema, Counts=Counts))
    validate = "Item.model_validate({})"  # pydantic raising for whoever called it
    assert not raised_by_sdk(_raised_in("bench", validate, Item=Item))
    assert not raised_by_sdk(_raised_in("adapters", validate, Item=Item))
    assert raised_by_sdk(_raised_in("agents", validate, Item=Item))
    assert not raised_by_sdk(ValueError("no frame of anyone's"))
