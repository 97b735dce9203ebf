"""The tasks a scenario can name: an output model, a prompt, a reference answer, a plausible
wrong answer, the schema violations to inject, and the semantic check.

Tasks live in code (not YAML) because the semantic check is code and because the output model
must be a real pydantic class for the SDKs to derive their schemas from, exactly as a user's
agent would.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bench.tools import ORDERS, TOOL_NAME, OrderLookupTool, ToolPlan


class Person(BaseModel):
    """A flat object: the simplest thing an agent is asked to return."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Full name")
    age: int = Field(ge=0, le=150, description="Age in years")
    email: str = Field(description="Email address")


class LineItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str
    category: Literal["travel", "meals", "lodging", "supplies"]
    amount: float = Field(ge=0, description="Amount in EUR")


class ExpenseReport(BaseModel):
    """Nested line items with a Literal category; `total` must equal the sum of the items, a rule
    no JSON schema can express, so only a semantic check catches it."""

    model_config = ConfigDict(extra="forbid")
    employee: str
    items: list[LineItem]
    total: float = Field(description="Sum of the item amounts")


class TicketLabel(StrEnum):
    BILLING = "billing"
    BUG = "bug"
    FEATURE_REQUEST = "feature_request"
    ACCOUNT = "account"


class TicketTriage(BaseModel):
    """An enum label and a confidence bounded to [0, 1]: strict modes do not enforce the bound."""

    model_config = ConfigDict(extra="forbid")
    label: TicketLabel
    confidence: float = Field(ge=0, le=1)
    summary: str


class OrderStatus(BaseModel):
    """The answer to a question only the ``lookup_order`` tool can answer: every field comes
    from the tool's result, so a right answer shows the tool result reached the model."""

    model_config = ConfigDict(extra="forbid")
    order_id: str
    status: Literal["processing", "shipped", "delivered", "cancelled"]
    total: float = Field(ge=0, description="Order total in EUR")
    carrier: str


@functools.cache
def _property_names(output_model: type[BaseModel]) -> frozenset[str]:
    return frozenset(output_model.model_json_schema().get("properties", {}))


@dataclass(frozen=True)
class Task:
    """One task: everything the provider needs to render a behaviour and the runner needs to
    judge what an SDK handed back."""

    name: str
    output_model: type[BaseModel]
    prompt: str
    reference: Mapping[str, Any]
    wrong: Mapping[str, Any]
    violations: Mapping[str, Mapping[str, Any]]
    semantic_rule: Callable[[BaseModel], str | None]
    description: str = ""
    prose: str = field(default="")
    tool_name: str | None = None
    """The harness tool the agent must call (``lookup_order``), or None for a task without one."""
    tool: OrderLookupTool | None = field(default=None, compare=False, repr=False)
    """The run's own tool instance (its plan and invocation log); set by :meth:`with_tool`."""
    wrong_sent: Mapping[str, Any] | None = None
    """What a ``wrong`` step sends when that is not :attr:`wrong` (None: it is): on a user's type
    whose validator rejects the scenario's kind of wrong answer (a total that is not the sum of the
    lines), that answer (bench.own.derive.faults); :attr:`wrong` stays one the type accepts, which
    the hardened fallbacks hand back."""

    def with_tool(self, plan: ToolPlan | None) -> Task:
        """This task for one run, holding a fresh tool that follows ``plan``: the adapter hands
        ``tool.as_function()`` to the SDK and the runner reads ``tool.invocations`` after."""
        if self.tool_name is None:
            return self
        return replace(self, tool=OrderLookupTool(plan or ToolPlan()))

    @property
    def schema(self) -> dict[str, Any]:
        return self.output_model.model_json_schema()

    @property
    def property_names(self) -> frozenset[str]:
        """The schema's top-level properties, built once per output model: the provider reads them
        for every run it opens, and building the JSON schema was over a millisecond of a cell's
        CPU that a user's own loop never pays. A task whose schema is not its output model's
        (bench.own.derive.DerivedTask) reads its own."""
        return _property_names(self.output_model)

    def reference_json(self) -> str:
        return json.dumps(self.reference, separators=(",", ":"))

    def judge(self, value: Any) -> tuple[bool, bool]:
        """(returned_valid, returned_correct) for whatever an SDK handed back.

        Valid means it is (or parses as) an instance of the output model; a bare string is
        never valid, because the caller asked for an object and got text.
        """
        instance = _coerce(self.output_model, value)
        if instance is None:
            return False, False
        return True, self.semantic_rule(instance) is None

    def check(self, value: Any) -> str | None:
        """The reason a value is not the right answer, or None. Hardened variants hand this to
        an SDK's output-validator hook where one exists."""
        instance = _coerce(self.output_model, value)
        if instance is None:
            return f"not a valid {self.output_model.__name__}"
        return self.semantic_rule(instance)


def _coerce(model: type[BaseModel], value: Any) -> BaseModel | None:
    if isinstance(value, model):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if not isinstance(value, Mapping):
        return None
    try:
        return model.model_validate(dict(value))
    except ValidationError:
        return None


def _matches(reference: Mapping[str, Any]) -> Callable[[BaseModel], str | None]:
    def rule(instance: BaseModel) -> str | None:
        got = instance.model_dump(mode="json")
        for key, expected in reference.items():
            if got.get(key) != expected:
                return f"{key} is {got.get(key)!r}, expected {expected!r}"
        return None

    return rule


def _expense_rule(reference: Mapping[str, Any]) -> Callable[[BaseModel], str | None]:
    def rule(instance: BaseModel) -> str | None:
        assert isinstance(instance, ExpenseReport)
        items_sum = round(sum(item.amount for item in instance.items), 2)
        if abs(items_sum - instance.total) > 0.005:
            return f"total {instance.total} is not the sum of the items ({items_sum})"
        if abs(instance.total - reference["total"]) > 0.005:
            return f"total {instance.total}, expected {reference['total']}"
        return None

    return rule


PERSON_REFERENCE = {"name": "Ada Lovelace", "age": 36, "email": "ada@example.org"}
EXPENSE_REFERENCE = {
    "employee": "Grace Hopper",
    "items": [
        {"description": "Train to Brussels", "category": "travel", "amount": 120.5},
        {"description": "Hotel, two nights", "category": "lodging", "amount": 240.0},
        {"description": "Team dinner", "category": "meals", "amount": 42.0},
    ],
    "total": 402.5,
}
TICKET_REFERENCE = {
    "label": "bug",
    "confidence": 0.92,
    "summary": "Export to CSV crashes on empty reports",
}

ORDER_REFERENCE = {key: ORDERS["ORD-1042"][key] for key in ("order_id", "status", "total", "carrier")}

TASKS: dict[str, Task] = {
    task.name: task
    for task in (
        Task(
            name="person",
            description="flat object",
            output_model=Person,
            prompt=(
                "Extract the person from this signature: 'Ada Lovelace (36) <ada@example.org>, Analytical Engines Ltd.'"
            ),
            reference=PERSON_REFERENCE,
            wrong={**PERSON_REFERENCE, "age": 63},
            violations={
                "missing_field": {"name": "Ada Lovelace", "email": "ada@example.org"},
                "wrong_type": {**PERSON_REFERENCE, "age": "thirty-six"},
                "extra_key": {**PERSON_REFERENCE, "company": "Analytical Engines Ltd."},
                "out_of_range": {**PERSON_REFERENCE, "age": -36},
            },
            semantic_rule=_matches(PERSON_REFERENCE),
            prose="The person is Ada Lovelace, aged 36, reachable at ada@example.org.",
        ),
        Task(
            name="expense_report",
            description="nested line items, Literal category, total = sum of items",
            output_model=ExpenseReport,
            prompt=(
                "Turn these receipts into an expense report for Grace Hopper: train to Brussels "
                "EUR 120.50 (travel), hotel two nights EUR 240.00 (lodging), team dinner "
                "EUR 42.00 (meals)."
            ),
            reference=EXPENSE_REFERENCE,
            wrong={**EXPENSE_REFERENCE, "total": 412.5},
            violations={
                "missing_field": {k: v for k, v in EXPENSE_REFERENCE.items() if k != "total"},
                "wrong_type": {**EXPENSE_REFERENCE, "items": "train, hotel, dinner"},
                "extra_key": {**EXPENSE_REFERENCE, "currency": "EUR"},
                "out_of_range": {
                    **EXPENSE_REFERENCE,
                    "items": [
                        *EXPENSE_REFERENCE["items"][:2],  # type: ignore[index]
                        {"description": "Team dinner", "category": "meals", "amount": -42.0},
                    ],
                },
            },
            semantic_rule=_expense_rule(EXPENSE_REFERENCE),
            prose="Grace spent EUR 402.50 in total: travel 120.50, lodging 240.00, meals 42.00.",
        ),
        Task(
            name="ticket_triage",
            description="enum label, confidence bounded to [0, 1]",
            output_model=TicketTriage,
            prompt=(
                "Triage this support ticket: 'Since yesterday, clicking Export to CSV on an empty "
                "report crashes the page with a blank screen.'"
            ),
            reference=TICKET_REFERENCE,
            wrong={**TICKET_REFERENCE, "label": "feature_request"},
            violations={
                "missing_field": {"label": "bug", "summary": TICKET_REFERENCE["summary"]},
                "wrong_type": {**TICKET_REFERENCE, "confidence": "high"},
                "extra_key": {**TICKET_REFERENCE, "priority": "p1"},
                "out_of_range": {**TICKET_REFERENCE, "confidence": 1.7},
            },
            semantic_rule=_matches({"label": "bug"}),
            prose="This looks like a bug in the CSV export; I am fairly confident about that.",
        ),
        Task(
            name="order_lookup",
            description="answer built from a tool result (lookup_order)",
            output_model=OrderStatus,
            prompt=(
                "Where is my order ORD-1042? Look it up with the lookup_order tool and answer with "
                "its id, status, total and carrier."
            ),
            reference=ORDER_REFERENCE,
            wrong={**ORDER_REFERENCE, "status": "delivered"},
            violations={
                "missing_field": {k: v for k, v in ORDER_REFERENCE.items() if k != "status"},
                "wrong_type": {**ORDER_REFERENCE, "total": "59.90 EUR"},
                "extra_key": {**ORDER_REFERENCE, "tracking": ORDERS["ORD-1042"]["tracking"]},
                "out_of_range": {**ORDER_REFERENCE, "total": -59.9},
            },
            semantic_rule=_matches(ORDER_REFERENCE),
            prose="Your order ORD-1042 has shipped with UPS; the total was EUR 59.90.",
            tool_name=TOOL_NAME,
        ),
    )
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        known = ", ".join(sorted(TASKS))
        raise KeyError(f"unknown task {name!r}; known tasks: {known}") from None
