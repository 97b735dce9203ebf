"""The Pydantic AI adapter with the harness tool (``order_lookup``), through the real provider.

Each scenario is the one of scenarios/tools.yaml; each expectation is what the SDK's source
predicts (file:line into .venv/lib/python3.12/site-packages/pydantic_ai/, pydantic-ai-slim 2.68.0;
adapters/pydantic_ai/research.md, section "Tool errors", has the account). The numbers do not depend
on the output mode or the protocol, so every scenario runs on each mode (Chat Completions); the
protocols differ only in how an error result is marked on the wire, tested on all three.

Budgets: a function tool's failures count against its own ``max_retries`` (``retries['tools']``,
default 1, agent/__init__.py:487-493, 837-845, 2160), per tool name, carried from one run step to
the next and reset by a success (tool_manager.py:415-447); the check runs before the failure is
answered (``_check_max_retries``, tool_manager.py:519-532), so budget N allows N+1 failing calls.
The output budget is separate (function-tool failures never add to ``output_retries_used``,
_tool_execution.py:640-661; output-tool failures count under ``final_result``'s own name).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="pip install 'misfit-bench[pydantic-ai]'")

from pydantic_ai.exceptions import UnexpectedModelBehavior

from adapters.pydantic_ai.adapter import HARDENED_TOOL_RETRIES, PydanticAIAdapter
from bench.core.vocabulary import Mode, Protocol
from bench.provider import AttemptRecord
from bench.tools import ERROR_MARKER, SUCCESS_MARKER, OrderToolError
from tests.cell_runner import CellRunner, cell_of
from tests.tool_scenarios import TOOL_SCRIPTS as SCENARIOS

ADAPTER = PydanticAIAdapter()
CALL_CAP = 10
MODES = (Mode.TOOL, Mode.NATIVE, Mode.PROMPTED)
PROTOCOLS = (Protocol.CHAT, Protocol.RESPONSES, Protocol.ANTHROPIC)
VARIANTS = ("default", "hardened", "stream")


TOOL_BUDGET_EXCEEDED = "Tool 'lookup_order' exceeded max retries count of 1."
STREAM_NO_RETRY = "retries are not supported in `run_stream()`"


@dataclass(frozen=True)
class Expected:
    """What one scenario does in one variant, whatever the mode and protocol."""

    tool_calls: int
    model_calls: int
    raised: type[BaseException] | None = None
    """The exception type that reached the caller; None when an answer (or a fallback) did."""
    message: str = ""
    """A substring of the exception's message."""
    fallback: bool = False
    """The hardened run_error hook turned UnexpectedModelBehavior into a None output."""


def _same(expected: Expected) -> dict[str, Expected]:
    return dict.fromkeys(VARIANTS, expected)


EXPECTED: dict[str, dict[str, Expected]] = {
    # One tool call, its result in the second request, the answer on the second call.
    "tool_ok": _same(Expected(1, 2)),
    # The bad arguments fail the tool's pydantic schema before the tool runs (tool_manager.py:
    # 602-643, 1002-1014); the ValidationError is answered as a retry result for that call id
    # (_make_validation_failure 880-924 -> _wrap_error_as_retry 536-561), attempt 1 of budget 1.
    "tool_bad_args_then_ok": _same(Expected(1, 3)),
    # Second bad call: retries['lookup_order'] is 1 >= max_retries 1 -> UnexpectedModelBehavior
    # (tool_manager.py:519-532), raised from validate_tool_call; the tool never ran. Hardened
    # (Tool(max_retries=3)): 4 calls, then the run_error hook's fallback (capabilities/abstract.py:922-955).
    "tool_bad_args_persistent": {
        "default": Expected(0, 2, UnexpectedModelBehavior, TOOL_BUDGET_EXCEEDED),
        "hardened": Expected(0, HARDENED_TOOL_RETRIES + 1, fallback=True),
        "stream": Expected(0, 2, UnexpectedModelBehavior, TOOL_BUDGET_EXCEEDED),
    },
    # A plain exception from the tool is not caught: _raw_execute catches only ToolFailed and
    # ModelRetry (tool_manager.py:1373-1390) and the default on_tool_execute_error re-raises
    # (capabilities/abstract.py:1395-1429, capabilities/hooks.py:1263-1274), so OrderToolError ends the run
    # after one model call and never reaches the model. Hardened raises ModelRetry for a
    # retryable error: the JSON goes back as the call's retry result (tool_manager.py:1384-1390).
    "tool_unknown_order_then_ok": {
        "default": Expected(1, 1, OrderToolError, "ORDER_NOT_FOUND"),
        "hardened": Expected(2, 3),
        "stream": Expected(1, 1, OrderToolError, "ORDER_NOT_FOUND"),
    },
    # Hardened: ModelRetry is charged after the tool ran (tool_manager.py:1387-1388), so the 4th
    # invocation finds retries 3 >= 3 and raises UnexpectedModelBehavior -> fallback.
    "tool_unknown_order_persistent": {
        "default": Expected(1, 1, OrderToolError, "ORDER_NOT_FOUND"),
        "hardened": Expected(HARDENED_TOOL_RETRIES + 1, HARDENED_TOOL_RETRIES + 1, fallback=True),
        "stream": Expected(1, 1, OrderToolError, "ORDER_NOT_FOUND"),
    },
    # Non-retryable: raised in every variant (the hardened tool re-raises; the run_error hook
    # recovers only UnexpectedModelBehavior), after one tool call and one model call.
    "tool_permission_denied": _same(Expected(1, 1, OrderToolError, "PERMISSION_DENIED")),
    "tool_quota_exceeded": _same(Expected(1, 1, OrderToolError, "QUOTA_EXCEEDED")),
    # The timeout is retried inside the tool (its transport layer); the SDK sees one success.
    "tool_upstream_timeout_then_ok": _same(Expected(1, 2)),
    # Separate budgets: the bad-arguments retry is charged to 'lookup_order' (and reset by its
    # success), so the output budget (1) still re-asks after the malformed answer: 4 calls.
    # run_stream: the malformed answer starts the final result (agent/abstract.py:1094-1104) and
    # get_output validates once, without retry (result.py:293-361).
    "tool_budget_shared": {
        "default": Expected(1, 4),
        "hardened": Expected(1, 4),
        "stream": Expected(1, 3, UnexpectedModelBehavior, STREAM_NO_RETRY),
    },
}


def results_for(attempts: list[AttemptRecord], call: int) -> list[Any]:
    """The tool results later requests carried back for the tool call issued on ``call``."""
    call_id = attempts[call].tool_call_id
    assert call_id is not None
    return [seen for later in attempts[call + 1 :] for seen in later.tool_results if seen.call_id == call_id]


def test_every_cell_supports_the_harness_tool() -> None:
    assert all(ADAPTER.tool_support(cell) is None for cell in ADAPTER.cells())


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_scenario_counts_and_outcome(run_cell: CellRunner, scenario: str, mode: Mode, variant: str) -> None:
    expected = EXPECTED[scenario][variant]
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT, variant=variant), scenario, call_cap=CALL_CAP
    )
    assert ran.task.tool is not None
    assert len(ran.task.tool.invocations) == expected.tool_calls
    assert len(ran.calls) == expected.model_calls
    assert ran.result.fallback is expected.fallback
    if expected.raised is not None:
        assert type(ran.result.exception) is expected.raised
        assert expected.message in str(ran.result.exception)
    else:
        assert ran.result.exception is None
        assert ran.task.judge(ran.result.output) == ((False, False) if expected.fallback else (True, True))
    if expected.fallback:
        assert ran.result.output is None
        assert ran.result.details["recovered_error"] == "pydantic_ai.exceptions.UnexpectedModelBehavior"
    # The SDK's own usage counts every model response, failed ones included.
    assert ran.result.details["sdk_usage_requests"] == str(expected.model_calls)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_bad_arguments_reach_the_model_with_the_call_id(
    run_cell: CellRunner, protocol: Protocol, variant: str
) -> None:
    """The ValidationError details go back for the failed call's id (_output.py:143-183: the
    errors as JSON, outcome 'retried'); it is a schema error, not the tool's structured error.
    Anthropic marks it ``is_error`` (models/anthropic/__init__.py:3252-3257); OpenAI has no such
    flag, so the content is wrapped in ``{"error": ...}`` (messages.py:2331-2339, 2570-2587)."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol, variant=variant), "tool_bad_args_then_ok", call_cap=CALL_CAP
    )
    (seen,) = {(s.call_id, s.is_error, s.text) for s in results_for(ran.calls, 0)}
    _, is_error, text = seen
    assert "missing" in text and "order_id" in text and ERROR_MARKER not in text
    assert is_error is (True if protocol is Protocol.ANTHROPIC else None)
    if protocol is not Protocol.ANTHROPIC:
        assert text.startswith('{"error":')
    # The corrected call's result is the order.
    assert ran.task.tool is not None and ran.task.tool.invocations[0].arguments == {"order_id": "ORD-1042"}
    assert any(SUCCESS_MARKER in s.text for s in results_for(ran.calls, 1))


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_hardened_retryable_error_reaches_the_model_structured_with_the_call_id(
    run_cell: CellRunner, protocol: Protocol
) -> None:
    """ModelRetry(str(error)) becomes the call's retry result with its tool_call_id
    (tool_manager.py:536-561, _output.py:172-183): the structured JSON, error_code included."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol, variant="hardened"),
        "tool_unknown_order_then_ok",
        call_cap=CALL_CAP,
    )
    seen = results_for(ran.calls, 0)
    assert seen and all(ERROR_MARKER in s.text and "ORDER_NOT_FOUND" in s.text for s in seen)
    assert {s.is_error for s in seen} == ({True} if protocol is Protocol.ANTHROPIC else {None})
    assert any(SUCCESS_MARKER in s.text for s in results_for(ran.calls, 1))


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "stream"])
@pytest.mark.parametrize("mode", MODES)
async def test_default_tool_error_never_reaches_the_model(run_cell: CellRunner, mode: Mode, variant: str) -> None:
    """The raised OrderToolError ends the run (tool_manager.py:1373-1390): one model call, the
    call id issued and never answered; the caller gets the tool's own exception, unwrapped."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT, variant=variant),
        "tool_unknown_order_then_ok",
        call_cap=CALL_CAP,
    )
    assert [a.tool_call_id is not None for a in ran.calls] == [True]
    assert isinstance(ran.result.exception, OrderToolError) and ran.result.exception.retryable


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_hardened_persistent_errors_are_answered_for_every_call(run_cell: CellRunner, protocol: Protocol) -> None:
    """Each retryable failure is answered for its own call id, attempt numbers 1..3; the 4th
    failure is over budget and raises before it is answered (tool_manager.py:1387-1390)."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant="hardened"),
        "tool_unknown_order_persistent",
        call_cap=CALL_CAP,
    )
    answered = [results_for(ran.calls, call) for call in range(len(ran.calls))]
    assert [bool(seen) for seen in answered] == [True] * HARDENED_TOOL_RETRIES + [False]
    for attempt, seen in enumerate(answered[:HARDENED_TOOL_RETRIES], start=1):
        assert all(f'attempt\\": {attempt}' in s.text or f'"attempt": {attempt}' in s.text for s in seen)
    assert ran.task.tool is not None
    assert [inv.error_code for inv in ran.task.tool.invocations] == ["ORDER_NOT_FOUND"] * (HARDENED_TOOL_RETRIES + 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("scenario", ["tool_permission_denied", "tool_quota_exceeded"])
@pytest.mark.parametrize("variant", VARIANTS)
async def test_non_retryable_error_stops_without_a_second_tool_call(
    run_cell: CellRunner, scenario: str, variant: str
) -> None:
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant=variant), scenario, call_cap=CALL_CAP
    )
    assert isinstance(ran.result.exception, OrderToolError) and not ran.result.exception.retryable
    assert ran.task.tool is not None and len(ran.task.tool.invocations) == 1
    assert len(ran.calls) == 1 and not ran.calls[0].tool_results


@pytest.mark.asyncio
async def test_upstream_timeout_is_retried_inside_the_tool(run_cell: CellRunner) -> None:
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.RESPONSES),
        "tool_upstream_timeout_then_ok",
        call_cap=CALL_CAP,
    )
    assert ran.task.tool is not None and ran.task.tool.upstream_calls == 2
    assert [inv.upstream_calls for inv in ran.task.tool.invocations] == [2]
    assert all(ERROR_MARKER not in s.text for s in results_for(ran.calls, 0))


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_tool_and_output_budgets_are_separate(run_cell: CellRunner, mode: Mode) -> None:
    """After a bad-arguments retry, the malformed answer is still re-asked once (default output
    budget 1): the retries are counted per tool name and output_retries_used only counts output
    failures (tool_manager.py:415-447, _tool_execution.py:640-661, _agent_graph.py:846-872)."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT), "tool_budget_shared", call_cap=CALL_CAP
    )
    assert ran.result.exception is None
    assert [a.behaviour.split(":")[0] for a in ran.calls] == ["tool_call", "tool_call", "malformed", "valid"]
    # The 4th request carries the output failure back: on the output tool for its call id,
    # on the text path as a user message (no call id).
    if mode is Mode.TOOL:
        assert any("json_invalid" in s.text for s in results_for(ran.calls, 2))
    else:
        assert ran.calls[2].tool_call_id is None
