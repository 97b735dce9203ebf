"""The openai-agents adapter against the real local provider over loopback.

Each test runs real SDK code (Runner.run / Runner.run_streamed over OpenAIChatCompletionsModel
and OpenAIResponsesModel) and asserts what the SDK source predicts; the figures (model calls,
exception types) are the ones recorded in adapters/openai_agents/research.md. Each cell runs
through ``run_cell`` (tests/adapters/conftest.py), the runner's own path.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agents", reason="pip install 'misfit-bench[openai-agents]'")

from agents.exceptions import (
    ModelBehaviorError,
    ModelRefusalError,
    OutputGuardrailTripwireTriggered,
)

from adapters.openai_agents.adapter import OpenAIAgentsAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = OpenAIAgentsAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
LEDGER_WAIT_S = 5.0


def test_cells_cover_every_mode_protocol_variant() -> None:
    cells = ADAPTER.cells()
    assert len(cells) == 3 * 3 * 3
    assert all(cell.note for cell in cells)
    assert {(c.mode, c.mode_support) for c in SUPPORTED} == {
        (Mode.NATIVE, ModeSupport.BUILTIN),
        (Mode.TOOL, ModeSupport.COMPOSED),
    }
    assert {c.protocol for c in SUPPORTED} == {Protocol.CHAT, Protocol.RESPONSES}
    assert all(c.stream == (c.variant == "stream") for c in cells)


@pytest.mark.asyncio
async def test_unsupported_cell_is_never_run(run_cell: CellRunner) -> None:
    cell = cell_of(ADAPTER, mode=Mode.PROMPTED)
    ran = await run_cell(cell, ["valid"])
    assert isinstance(ran.harness_error, ValueError) and "unsupported" in str(ran.harness_error)
    assert ran.attempts == []


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_valid_answer_is_returned_in_one_call(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["valid"])
    assert ran.result.exception is None
    assert get_task("person").judge(ran.result.output) == (True, True)
    assert len(ran.attempts) == 1
    # The declaration is what the provider sees: native -> response schema, tool -> forced tool.
    assert [a.detected_mode for a in ran.attempts] == [str(cell.mode)]
    assert [a.enforcement for a in ran.attempts] == ["strict"]
    assert [a.stream for a in ran.attempts] == [cell.stream]
    assert ran.result.fallback is False


@pytest.mark.asyncio
@pytest.mark.parametrize("task", ["expense_report", "ticket_triage"])
@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL])
async def test_nested_and_enum_tasks_round_trip(run_cell: CellRunner, task: str, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT), ["valid"], task=task)
    assert get_task(task).judge(ran.result.output) == (True, True)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
@pytest.mark.parametrize("variant", ["default", "stream"])
@pytest.mark.parametrize("fault", ["malformed", "schema_violation", "prose"])
async def test_invalid_native_output_raises_without_retry(
    run_cell: CellRunner, protocol: Protocol, variant: str, fault: str
) -> None:
    """turn_resolution.py:1227 validates once; nothing sends the failed answer back."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant=variant), [fault, "valid"])
    assert isinstance(ran.result.exception, ModelBehaviorError)
    # Default redaction (_debug.py:12-13) strips the payload and the run_data (run.py:2422-2443).
    assert str(ran.result.exception) == "Invalid JSON when parsing model output"
    assert ran.result.exception.run_data is None
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
async def test_hardened_handler_returns_validated_fallback(run_cell: CellRunner, protocol: Protocol) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant="hardened"), ["malformed"])
    assert ran.result.exception is None
    assert ran.result.fallback is True
    assert ran.result.details["fallback_handler"] == "invalid_final_output"
    assert get_task("person").judge(ran.result.output) == (True, False)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL])
async def test_hardened_guardrail_rejects_wrong_answer(run_cell: CellRunner, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.RESPONSES, variant="hardened"), ["wrong"])
    assert isinstance(ran.result.exception, OutputGuardrailTripwireTriggered)
    assert ran.result.output is None
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_default_passes_wrong_answer_to_the_caller(run_cell: CellRunner) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT), ["wrong"])
    assert get_task("person").judge(ran.result.output) == (True, False)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "stream"])
async def test_tool_default_hands_the_tool_error_string_to_the_caller(run_cell: CellRunner, variant: str) -> None:
    """default_tool_error_function's text becomes the StopAtTools final output (tool.py:1997,
    turn_resolution.py:789-794): no exception, no object."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT, variant=variant), ["malformed"])
    assert ran.result.exception is None
    assert isinstance(ran.result.output, str)
    assert ran.result.output.startswith("An error occurred while running the tool")
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_tool_hardened_raises_and_bypasses_invalid_output_handler(
    run_cell: CellRunner,
) -> None:
    cell = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT, variant="hardened")
    ran = await run_cell(cell, ["schema_violation"])
    assert isinstance(ran.result.exception, ModelBehaviorError)
    assert str(ran.result.exception) == "Invalid JSON input for tool final_result"
    assert ran.result.fallback is False
    assert ran.result.details["run_data"] == "present"
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_tool_args_ignore_extra_keys(run_cell: CellRunner) -> None:
    """function_schema builds the args model without extra='forbid' (function_schema.py:417)."""
    script = [{"schema_violation": "extra_key"}]
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT), script)
    assert get_task("person").judge(ran.result.output) == (True, True)


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
async def test_refusal_raises_model_refusal_error_or_falls_back(run_cell: CellRunner, protocol: Protocol) -> None:
    default = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol), ["refusal"])
    assert isinstance(default.result.exception, ModelRefusalError)
    hardened = (
        await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant="hardened"), ["refusal"])
    ).result
    assert hardened.fallback is True
    assert hardened.details["fallback_handler"] == "model_refusal"


@pytest.mark.asyncio
async def test_responses_truncation_raises_in_the_model_and_loses_usage(
    run_cell: CellRunner,
) -> None:
    """status=incomplete raises in openai_responses.py:889-890, before usage is accounted and
    out of reach of the invalid_final_output handler."""
    cell = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES, variant="hardened")
    ran = await run_cell(cell, ["truncated"])
    assert isinstance(ran.result.exception, ModelBehaviorError)
    assert "response.incomplete" in str(ran.result.exception)
    assert ran.result.fallback is False
    assert ran.attempts[0].output_tokens > 0
    assert ran.result.usage is not None and ran.result.usage.output_tokens == 0


@pytest.mark.asyncio
async def test_chat_truncation_is_an_invalid_json_error(run_cell: CellRunner) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT), ["truncated"])
    assert isinstance(ran.result.exception, ModelBehaviorError)
    assert ran.result.usage is not None and ran.result.usage.output_tokens > 0


@pytest.mark.asyncio
async def test_chat_stream_reports_no_usage_off_api_openai_com(run_cell: CellRunner) -> None:
    """stream_options.include_usage is only sent to https://api.openai.com
    (chatcmpl_helpers.py:55-66, openai_client_utils.py:8-18)."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT, variant="stream"), ["valid"])
    body = ran.attempts[0].request_body or {}
    assert "stream_options" not in body
    assert ran.result.usage is not None and ran.result.usage.input_tokens == 0
    assert ran.attempts[0].input_tokens > 0


@pytest.mark.asyncio
async def test_server_error_is_retried_by_the_openai_client(run_cell: CellRunner) -> None:
    """A transport retry (same body, x-stainless-retry-count 1), not an output retry."""
    script: list[Any] = [{"http_error": 500}, "valid"]
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT), script)
    assert get_task("person").judge(ran.result.output) == (True, True)
    assert [a.client_retry_count for a in ran.attempts] == [0, 1]
    assert ran.attempts[0].request_sha256 == ran.attempts[1].request_sha256
    assert ran.result.details["sdk_requests"] == "1"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hardened_runner_retries_stack_on_client_retries(run_cell: CellRunner) -> None:
    """The openai client retries a 503 twice (openai/_constants.py:8); the hardened
    ModelRetrySettings(max_retries=2) then replays twice with client retries disabled
    (run_internal/model_retry.py:534-543): five identical requests, then the client's error."""
    script: list[Any] = [{"http_error": 503}]
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT, variant="hardened"), script)
    assert type(ran.result.exception).__name__ == "InternalServerError"
    assert [a.client_retry_count for a in ran.attempts] == [0, 1, 2, 0, 0]
    assert len({a.request_sha256 for a in ran.attempts}) == 1
