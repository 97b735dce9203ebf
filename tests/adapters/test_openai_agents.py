"""The openai-agents adapter against the real local provider over loopback.

Each test runs real SDK code (Runner.run / Runner.run_streamed over OpenAIChatCompletionsModel
and OpenAIResponsesModel) and asserts what the SDK source predicts; the figures (model calls,
exception types) are the ones recorded in docs/research/openai_agents.md. The ``provider``
fixture is the session-wide one from tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

pytest.importorskip("agents", reason="pip install 'misfit-bench[openai-agents]'")

from agents.exceptions import (
    ModelBehaviorError,
    ModelRefusalError,
    OutputGuardrailTripwireTriggered,
)

from adapters.openai_agents import OpenAIAgentsAdapter
from bench.adapter import AdapterResult, Cell
from bench.provider import AttemptRecord, LocalProvider, RunHandle
from bench.tasks import get_task
from bench.vocabulary import Mode, ModeSupport, Protocol

ADAPTER = OpenAIAgentsAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
LEDGER_WAIT_S = 5.0


def _cell(mode: Mode, protocol: Protocol, variant: str) -> Cell:
    return next(c for c in SUPPORTED if (c.mode, c.protocol, c.variant) == (mode, protocol, variant))


def _id(cell: Cell) -> str:
    return f"{cell.mode}-{cell.protocol}-{cell.variant}"


async def _settled(run: RunHandle) -> list[AttemptRecord]:
    """The ledger once every request the provider counted has its record.

    The provider appends a record after the response is sent, so the SDK can return first
    (noted under "Provider requests" in docs/research/openai_agents.md); wait on that state.
    """
    deadline = time.monotonic() + LEDGER_WAIT_S
    while len(run.attempts) < run.state.model_calls and time.monotonic() < deadline:
        await asyncio.sleep(0.002)
    return run.attempts


async def _run(
    provider: LocalProvider, cell: Cell, script: list[Any], task: str = "person"
) -> tuple[AdapterResult, list[AttemptRecord]]:
    with provider.open_run(task=task, script=script, then="repeat", call_cap=12) as run:
        result = await asyncio.wait_for(ADAPTER.run_cell(cell, get_task(task), run.endpoint), ADAPTER.time_limit_s)
        return result, await _settled(run)


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
async def test_unsupported_cell_is_never_run(provider: LocalProvider) -> None:
    cell = next(c for c in ADAPTER.cells() if c.mode is Mode.PROMPTED)
    with provider.open_run(task="person", script=["valid"]) as run:
        with pytest.raises(ValueError, match="unsupported"):
            await ADAPTER.run_cell(cell, get_task("person"), run.endpoint)
        assert run.state.model_calls == 0


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=_id)
async def test_valid_answer_is_returned_in_one_call(provider: LocalProvider, cell: Cell) -> None:
    result, attempts = await _run(provider, cell, ["valid"])
    assert result.exception is None
    assert get_task("person").judge(result.output) == (True, True)
    assert len(attempts) == 1
    # The declaration is what the provider sees: native -> response schema, tool -> forced tool.
    assert [a.detected_mode for a in attempts] == [str(cell.mode)]
    assert [a.enforcement for a in attempts] == ["strict"]
    assert [a.stream for a in attempts] == [cell.stream]
    assert result.fallback is False


@pytest.mark.asyncio
@pytest.mark.parametrize("task", ["expense_report", "ticket_triage"])
@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL])
async def test_nested_and_enum_tasks_round_trip(provider: LocalProvider, task: str, mode: Mode) -> None:
    result, attempts = await _run(provider, _cell(mode, Protocol.CHAT, "default"), ["valid"], task)
    assert get_task(task).judge(result.output) == (True, True)
    assert len(attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
@pytest.mark.parametrize("variant", ["default", "stream"])
@pytest.mark.parametrize("fault", ["malformed", "schema_violation", "prose"])
async def test_invalid_native_output_raises_without_retry(
    provider: LocalProvider, protocol: Protocol, variant: str, fault: str
) -> None:
    """turn_resolution.py:1227 validates once; nothing sends the failed answer back."""
    result, attempts = await _run(provider, _cell(Mode.NATIVE, protocol, variant), [fault, "valid"])
    assert isinstance(result.exception, ModelBehaviorError)
    # Default redaction (_debug.py:12-13) strips the payload and the run_data (run.py:2422-2443).
    assert str(result.exception) == "Invalid JSON when parsing model output"
    assert result.exception.run_data is None
    assert len(attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
async def test_hardened_handler_returns_validated_fallback(provider: LocalProvider, protocol: Protocol) -> None:
    result, attempts = await _run(provider, _cell(Mode.NATIVE, protocol, "hardened"), ["malformed"])
    assert result.exception is None
    assert result.fallback is True
    assert result.details["fallback_handler"] == "invalid_final_output"
    assert get_task("person").judge(result.output) == (True, False)
    assert len(attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL])
async def test_hardened_guardrail_rejects_wrong_answer(provider: LocalProvider, mode: Mode) -> None:
    result, attempts = await _run(provider, _cell(mode, Protocol.RESPONSES, "hardened"), ["wrong"])
    assert isinstance(result.exception, OutputGuardrailTripwireTriggered)
    assert result.output is None
    assert len(attempts) == 1


@pytest.mark.asyncio
async def test_default_passes_wrong_answer_to_the_caller(provider: LocalProvider) -> None:
    result, _ = await _run(provider, _cell(Mode.NATIVE, Protocol.CHAT, "default"), ["wrong"])
    assert get_task("person").judge(result.output) == (True, False)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "stream"])
async def test_tool_default_hands_the_tool_error_string_to_the_caller(provider: LocalProvider, variant: str) -> None:
    """default_tool_error_function's text becomes the StopAtTools final output (tool.py:1997,
    turn_resolution.py:789-794): no exception, no object."""
    result, attempts = await _run(provider, _cell(Mode.TOOL, Protocol.CHAT, variant), ["malformed"])
    assert result.exception is None
    assert isinstance(result.output, str)
    assert result.output.startswith("An error occurred while running the tool")
    assert len(attempts) == 1


@pytest.mark.asyncio
async def test_tool_hardened_raises_and_bypasses_invalid_output_handler(
    provider: LocalProvider,
) -> None:
    cell = _cell(Mode.TOOL, Protocol.CHAT, "hardened")
    result, attempts = await _run(provider, cell, ["schema_violation"])
    assert isinstance(result.exception, ModelBehaviorError)
    assert str(result.exception) == "Invalid JSON input for tool final_result"
    assert result.fallback is False
    assert result.details["run_data"] == "present"
    assert len(attempts) == 1


@pytest.mark.asyncio
async def test_tool_args_ignore_extra_keys(provider: LocalProvider) -> None:
    """function_schema builds the args model without extra='forbid' (function_schema.py:417)."""
    script = [{"schema_violation": "extra_key"}]
    result, _ = await _run(provider, _cell(Mode.TOOL, Protocol.CHAT, "default"), script)
    assert get_task("person").judge(result.output) == (True, True)


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", [Protocol.CHAT, Protocol.RESPONSES])
async def test_refusal_raises_model_refusal_error_or_falls_back(provider: LocalProvider, protocol: Protocol) -> None:
    default, _ = await _run(provider, _cell(Mode.NATIVE, protocol, "default"), ["refusal"])
    assert isinstance(default.exception, ModelRefusalError)
    hardened, _ = await _run(provider, _cell(Mode.NATIVE, protocol, "hardened"), ["refusal"])
    assert hardened.fallback is True
    assert hardened.details["fallback_handler"] == "model_refusal"


@pytest.mark.asyncio
async def test_responses_truncation_raises_in_the_model_and_loses_usage(
    provider: LocalProvider,
) -> None:
    """status=incomplete raises in openai_responses.py:889-890, before usage is accounted and
    out of reach of the invalid_final_output handler."""
    cell = _cell(Mode.NATIVE, Protocol.RESPONSES, "hardened")
    result, attempts = await _run(provider, cell, ["truncated"])
    assert isinstance(result.exception, ModelBehaviorError)
    assert "response.incomplete" in str(result.exception)
    assert result.fallback is False
    assert attempts[0].output_tokens > 0
    assert result.usage is not None and result.usage.output_tokens == 0


@pytest.mark.asyncio
async def test_chat_truncation_is_an_invalid_json_error(provider: LocalProvider) -> None:
    result, _ = await _run(provider, _cell(Mode.NATIVE, Protocol.CHAT, "default"), ["truncated"])
    assert isinstance(result.exception, ModelBehaviorError)
    assert result.usage is not None and result.usage.output_tokens > 0


@pytest.mark.asyncio
async def test_chat_stream_reports_no_usage_off_api_openai_com(provider: LocalProvider) -> None:
    """stream_options.include_usage is only sent to https://api.openai.com
    (chatcmpl_helpers.py:55-66, openai_client_utils.py:8-18)."""
    result, attempts = await _run(provider, _cell(Mode.NATIVE, Protocol.CHAT, "stream"), ["valid"])
    body = attempts[0].request_body or {}
    assert "stream_options" not in body
    assert result.usage is not None and result.usage.input_tokens == 0
    assert attempts[0].input_tokens > 0


@pytest.mark.asyncio
async def test_server_error_is_retried_by_the_openai_client(provider: LocalProvider) -> None:
    """A transport retry (same body, x-stainless-retry-count 1), not an output retry."""
    script: list[Any] = [{"http_error": 500}, "valid"]
    result, attempts = await _run(provider, _cell(Mode.NATIVE, Protocol.CHAT, "default"), script)
    assert get_task("person").judge(result.output) == (True, True)
    assert [a.client_retry_count for a in attempts] == [0, 1]
    assert attempts[0].request_sha256 == attempts[1].request_sha256
    assert result.details["sdk_requests"] == "1"


@pytest.mark.asyncio
async def test_hardened_runner_retries_stack_on_client_retries(provider: LocalProvider) -> None:
    """The openai client retries a 503 twice (openai/_constants.py:8); the hardened
    ModelRetrySettings(max_retries=2) then replays twice with client retries disabled
    (run_internal/model_retry.py:534-543): five identical requests, then the client's error."""
    script: list[Any] = [{"http_error": 503}]
    result, attempts = await _run(provider, _cell(Mode.NATIVE, Protocol.CHAT, "hardened"), script)
    assert type(result.exception).__name__ == "InternalServerError"
    assert [a.client_retry_count for a in attempts] == [0, 1, 2, 0, 0]
    assert len({a.request_sha256 for a in attempts}) == 1
