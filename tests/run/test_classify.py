"""bench.run.classify.decide's order of precedence, as a table (docs/design.md, "Outcomes").

decide checks, in this order: a harness error; a cell no request reached (``NoModelCall``, except
a user's own agent whose SDK refused before sending, which is ``raised``); ``runaway``;
``timeout``; then what the SDK handed back: ``raised``, ``fallback``, ``ok`` / ``recovered``
(against the calls a first-time-right run takes), ``wrong``, ``empty``.

Each row's inputs also satisfy the rule right after the one that decides it (a harness error in a
cell that made no call and was stopped; an exception next to a fallback and a correct object; ...),
so that swapping any two rules of decide changes some row's outcome and fails this test.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bench.core.vocabulary import Outcome
from bench.run.accounting import LedgerSummary
from bench.run.classify import CellVerdict, Driven, decide
from bench.run.toolcalls import ToolSummary
from bench.scenarios.tasks import PERSON_REFERENCE, get_task
from bench.sdk.adapter import AdapterResult

TASK = get_task("person")
CORRECT = dict(PERSON_REFERENCE)
WRONG = dict(TASK.wrong)


class HarnessBug(RuntimeError):
    """An exception that escaped an adapter: ours, not the SDK's."""


class SdkError(ValueError):
    """What an SDK raised to its caller (not a connection failure)."""


@dataclass(frozen=True)
class Row:
    """One cell's inputs to decide."""

    result: AdapterResult | None = None
    harness_error: BaseException | None = None
    stopped: Outcome | None = None
    model_calls: int = 1
    tool_round_trips: int | None = None
    """None: a task without the harness tool; else the ToolSummary's successful round trips."""
    tool_retries: int = 0
    users_agent: bool = False

    def decide(self) -> CellVerdict:
        driven = Driven(result=self.result, harness_error=self.harness_error, stopped=self.stopped)
        return decide(driven, TASK, _ledger(self.model_calls), self._tools(), users_agent=self.users_agent)

    def _tools(self) -> ToolSummary | None:
        if self.tool_round_trips is None:
            return None
        return ToolSummary(
            tool_calls_requested=self.tool_round_trips + self.tool_retries,
            tool_calls=self.tool_round_trips + self.tool_retries,
            tool_errors=self.tool_retries,
            tool_retries=self.tool_retries,
            tool_round_trips=self.tool_round_trips,
            tool_error_to_model=True if self.tool_retries else None,
            tool_error_structured=True if self.tool_retries else None,
            tool_calls_after_fatal=None,
            tool_transport_retries=0,
        )


def _ledger(model_calls: int) -> LedgerSummary:
    return LedgerSummary(
        model_calls=model_calls,
        output_retries=max(0, model_calls - 1),
        transport_retries=0,
        input_tokens_billed=10 * model_calls,
        output_tokens_billed=5 * model_calls,
        detected_mode="tool" if model_calls else None,
        realistic=True if model_calls else None,
    )


RAISED = AdapterResult(exception=SdkError("the SDK gave up"))
RAISED_BESIDE_EVERYTHING = AdapterResult(output=CORRECT, exception=SdkError("late"), fallback=True)
FALLBACK_WITH_CORRECT = AdapterResult(output=CORRECT, fallback=True)
RETURNED_CORRECT = AdapterResult(output=CORRECT)
NO_ROUTE = ConnectionRefusedError("connection refused")

BUG = f"{HarnessBug.__module__}.HarnessBug"
SDK_ERROR = f"{SdkError.__module__}.SdkError"

# (id, inputs, expected (outcome, returned_valid, returned_correct, exception_type)), in decide's order.
TABLE: list[tuple[str, Row, tuple[Outcome, bool | None, bool | None, str | None]]] = [
    # 1. A harness error, before everything: no call, stopped, and an SDK exception are all ignored.
    (
        "harness_error-before-no_model_call",
        Row(result=RAISED, harness_error=HarnessBug("adapter bug"), stopped=Outcome.RUNAWAY, model_calls=0),
        (Outcome.HARNESS_ERROR, None, None, BUG),
    ),
    (
        "harness_error-before-runaway",
        Row(harness_error=HarnessBug("adapter bug"), stopped=Outcome.RUNAWAY, model_calls=3),
        (Outcome.HARNESS_ERROR, None, None, BUG),
    ),
    # 2. No request reached the provider: the harness's problem, before runaway, timeout and the result.
    (
        "no_model_call-before-runaway",
        Row(result=RAISED, stopped=Outcome.RUNAWAY, model_calls=0),
        (Outcome.HARNESS_ERROR, None, None, "NoModelCall"),
    ),
    (
        "no_model_call-before-timeout",
        Row(stopped=Outcome.TIMEOUT, model_calls=0),
        (Outcome.HARNESS_ERROR, None, None, "NoModelCall"),
    ),
    (
        "no_model_call-before-raised-for-a-built-in-adapter",
        Row(result=RAISED, model_calls=0),
        (Outcome.HARNESS_ERROR, None, None, "NoModelCall"),
    ),
    (
        "no_model_call-before-ok",
        Row(result=RETURNED_CORRECT, model_calls=0, users_agent=True),
        (Outcome.HARNESS_ERROR, None, None, "NoModelCall"),
    ),
    # 2a. ...except a user's own agent whose SDK refused before sending: raised, before runaway.
    (
        "users_agent-refused-before-sending-is-raised",
        Row(result=RAISED, stopped=Outcome.RUNAWAY, model_calls=0, users_agent=True),
        (Outcome.RAISED, False, False, SDK_ERROR),
    ),
    (
        "users_agent-connection-failure-stays-no_model_call",
        Row(result=AdapterResult(exception=NO_ROUTE), model_calls=0, users_agent=True),
        (Outcome.HARNESS_ERROR, None, None, "NoModelCall"),
    ),
    # 3. Runaway (the call cap), before timeout's place and before the result.
    (
        "runaway-before-raised",
        Row(result=RAISED, stopped=Outcome.RUNAWAY, model_calls=8),
        (Outcome.RUNAWAY, None, None, None),
    ),
    # 4. Timeout (the time limit), before the result.
    (
        "timeout-before-ok",
        Row(result=RETURNED_CORRECT, stopped=Outcome.TIMEOUT, model_calls=1),
        (Outcome.TIMEOUT, None, None, None),
    ),
    # 5. What the SDK handed back: an exception first, even beside a fallback and a correct object.
    (
        "raised-before-fallback",
        Row(result=RAISED_BESIDE_EVERYTHING),
        (Outcome.RAISED, True, True, SDK_ERROR),
    ),
    # 6. A fallback handler's value, even when it is correct.
    (
        "fallback-before-ok",
        Row(result=FALLBACK_WITH_CORRECT),
        (Outcome.FALLBACK, True, True, None),
    ),
    # 7. A correct object: ok within the calls a first-time-right run takes, recovered past them.
    ("ok-in-one-call", Row(result=RETURNED_CORRECT), (Outcome.OK, True, True, None)),
    ("recovered-after-a-retry", Row(result=RETURNED_CORRECT, model_calls=2), (Outcome.RECOVERED, True, True, None)),
    (
        "ok-with-a-planned-call",
        Row(result=AdapterResult(output=CORRECT, planned_calls=1), model_calls=2),
        (Outcome.OK, True, True, None),
    ),
    (
        "ok-with-a-tool-round-trip",
        Row(result=RETURNED_CORRECT, model_calls=2, tool_round_trips=1),
        (Outcome.OK, True, True, None),
    ),
    (
        "recovered-after-a-tool-retry",
        Row(result=RETURNED_CORRECT, model_calls=3, tool_round_trips=1, tool_retries=1),
        (Outcome.RECOVERED, True, True, None),
    ),
    # 8. Valid but not correct.
    ("wrong", Row(result=AdapterResult(output=WRONG)), (Outcome.WRONG, True, False, None)),
    # 9. No object: None, or text.
    ("empty-none", Row(result=AdapterResult(output=None)), (Outcome.EMPTY, False, False, None)),
    ("empty-text", Row(result=AdapterResult(output='{"name": "Ada"}')), (Outcome.EMPTY, False, False, None)),
]


@pytest.mark.parametrize(("row", "expected"), [pytest.param(row, expected, id=name) for name, row, expected in TABLE])
def test_decide_follows_its_order_of_precedence(
    row: Row, expected: tuple[Outcome, bool | None, bool | None, str | None]
) -> None:
    verdict = row.decide()
    assert (verdict.outcome, verdict.returned_valid, verdict.returned_correct, verdict.exception_type) == expected


def test_the_table_covers_every_outcome_decide_can_give() -> None:
    """``unsupported`` is decided before a cell runs (the runner never calls decide for it)."""
    decided = {expected[0] for _, _, expected in TABLE}
    assert decided == set(Outcome) - {Outcome.UNSUPPORTED}


def test_no_model_call_names_what_the_sdk_raised() -> None:
    verdict = Row(result=AdapterResult(exception=NO_ROUTE), model_calls=0).decide()
    assert verdict.exception_message is not None
    assert "HTTP_PROXY" in verdict.exception_message
    assert "the SDK raised builtins.ConnectionRefusedError: connection refused" in verdict.exception_message
