"""The LangChain adapter against the real local provider, over loopback.

Each expectation below is what the installed LangChain source predicts (docs/research/
langchain.md has the file:line references); the provider's ledger is the truth of how many
model calls were made and what they carried. ``provider`` is the session fixture from
tests/conftest.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents", reason="pip install 'misfit-bench[langchain]'")

import openai
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import StructuredOutputValidationError
from langchain_core.exceptions import ModelRefusalError, OutputParserException

from adapters.langchain import HARDENED_RUN_LIMIT, LangChainAdapter, validated_model
from bench.adapter import AdapterResult, Cell
from bench.provider import LocalProvider, RunHandle
from bench.tasks import TASKS, get_task
from bench.vocabulary import Mode, ModeSupport, Protocol

ADAPTER = LangChainAdapter()
SUPPORTED = [c for c in ADAPTER.cells() if c.mode_support is not ModeSupport.UNSUPPORTED]
PERSON = get_task("person")


def cell(mode: Mode, variant: str, protocol: Protocol) -> Cell:
    return next(c for c in ADAPTER.cells() if (c.mode, c.variant, c.protocol) == (mode, variant, protocol))


def cell_id(c: Cell) -> str:
    return f"{c.mode}-{c.variant}-{c.protocol}"


async def run(
    provider: LocalProvider, c: Cell, script: list[Any], then: Any = "repeat", call_cap: int = 20
) -> tuple[AdapterResult, RunHandle]:
    """One cell against a fresh run; the run's ledger stays readable after close."""
    handle = provider.open_run(task="person", script=script, then=then, call_cap=call_cap)
    try:
        result = await asyncio.wait_for(ADAPTER.run_cell(c, PERSON, handle.endpoint), 20)
    finally:
        handle.close()
    return result, handle


def request_text(handle: RunHandle, attempt: int) -> str:
    return json.dumps(handle.attempts[attempt].request_body)


def test_cells_cover_the_grid_and_explain_unsupported() -> None:
    cells = ADAPTER.cells()
    keys = {(c.mode, c.variant, c.protocol) for c in cells}
    assert len(keys) == len(cells) == 3 * 4 * 3
    assert all(c.note for c in cells)
    assert all(c.stream == (c.variant == "stream") for c in cells)
    assert {c.mode for c in SUPPORTED} == set(ADAPTER.modes)
    prompted = {c.variant: c.mode_support for c in cells if c.mode is Mode.PROMPTED}
    assert prompted["default"] is ModeSupport.COMPOSED


def test_validated_model_keeps_the_schema() -> None:
    for task in TASKS.values():
        model = validated_model(task)
        assert model.__name__ == task.output_model.__name__
        assert model.model_json_schema() == task.output_model.model_json_schema()


@pytest.mark.asyncio
@pytest.mark.parametrize("c", SUPPORTED, ids=cell_id)
async def test_valid_answer_is_ok_in_the_declared_mode(provider: LocalProvider, c: Cell) -> None:
    result, handle = await run(provider, c, ["valid"])
    assert result.exception is None
    assert PERSON.judge(result.output) == (True, True)
    [attempt] = handle.attempts
    assert attempt.detected_mode == c.mode
    assert attempt.stream == c.stream
    assert result.usage is not None and result.usage.output_tokens == attempt.output_tokens


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_bare_schema_picks_provider_strategy(provider: LocalProvider, protocol: Protocol) -> None:
    result, handle = await run(provider, cell(Mode.NATIVE, "auto", protocol), ["valid"])
    assert result.details["strategy"] == "ProviderStrategy"
    assert handle.attempts[0].detected_mode == Mode.NATIVE


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_tool_strategy_feeds_a_schema_violation_back(provider: LocalProvider, protocol: Protocol) -> None:
    """handle_errors=True by default: the ValidationError goes back as a ToolMessage."""
    result, handle = await run(
        provider, cell(Mode.TOOL, "default", protocol), [{"schema_violation": "wrong_type"}, "valid"]
    )
    assert result.exception is None and PERSON.judge(result.output) == (True, True)
    assert len(handle.attempts) == 2
    assert "Please fix your mistakes" in request_text(handle, 1)


@pytest.mark.asyncio
async def test_malformed_openai_tool_arguments_get_the_invalid_tool_call_patch(
    provider: LocalProvider,
) -> None:
    """Unparseable arguments become invalid_tool_calls, which never reach handle_errors; the
    next request carries LangChain's generic 'malformed or truncated' ToolMessage instead."""
    result, handle = await run(provider, cell(Mode.TOOL, "default", Protocol.CHAT), ["malformed", "valid"])
    assert result.exception is None and PERSON.judge(result.output) == (True, True)
    assert len(handle.attempts) == 2
    assert "arguments were malformed or truncated" in request_text(handle, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "stream"])
async def test_tool_strategy_loops_on_prose_until_the_call_cap(provider: LocalProvider, variant: str) -> None:
    """No tool call means no structured_response, and the model->model edge calls the model
    again, with no feedback and no bound short of recursion_limit=9999."""
    c = cell(Mode.TOOL, variant, Protocol.CHAT)
    handle = provider.open_run(task="person", script=["prose"], then="repeat", call_cap=4)
    job = asyncio.ensure_future(ADAPTER.run_cell(c, PERSON, handle.endpoint))
    cap = handle.cap_reached()
    done, _ = await asyncio.wait({job, cap}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
    job.cancel()
    handle.close()
    assert cap in done and job not in done
    assert handle.model_calls == 5  # four served, the fifth held at the cap


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "auto", "stream"])
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_provider_strategy_raises_on_a_schema_violation(
    provider: LocalProvider, variant: str, protocol: Protocol
) -> None:
    result, handle = await run(provider, cell(Mode.NATIVE, variant, protocol), ["schema_violation", "valid"])
    assert isinstance(result.exception, StructuredOutputValidationError)
    assert len(handle.attempts) == 1


@pytest.mark.asyncio
async def test_truncated_native_chat_raises_the_openai_length_error_without_usage(
    provider: LocalProvider,
) -> None:
    """ChatOpenAI sends response_format requests through client.chat.completions.parse, which
    raises before LangChain sees a message, so no usage reaches the callback."""
    result, handle = await run(provider, cell(Mode.NATIVE, "default", Protocol.CHAT), ["truncated"])
    assert isinstance(result.exception, openai.LengthFinishReasonError)
    assert len(handle.attempts) == 1
    assert result.usage is not None and result.usage.input_tokens is None


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_hardened_tool_rejects_a_wrong_answer_with_feedback(provider: LocalProvider, protocol: Protocol) -> None:
    result, handle = await run(provider, cell(Mode.TOOL, "hardened", protocol), ["wrong", "valid"])
    assert result.exception is None and PERSON.judge(result.output) == (True, True)
    assert len(handle.attempts) == 2
    assert "age is 63, expected 36" in request_text(handle, 1)


@pytest.mark.asyncio
async def test_hardened_tool_budget_raises_model_call_limit(provider: LocalProvider) -> None:
    result, handle = await run(provider, cell(Mode.TOOL, "hardened", Protocol.ANTHROPIC), ["malformed"])
    assert isinstance(result.exception, ModelCallLimitExceededError)
    assert len(handle.attempts) == HARDENED_RUN_LIMIT


@pytest.mark.asyncio
async def test_hardened_native_retries_the_identical_request(provider: LocalProvider) -> None:
    """ModelRetryMiddleware retries the StructuredOutputValidationError by re-sending the same
    request: an output failure that the ledger sees as a same-body resend."""
    result, handle = await run(provider, cell(Mode.NATIVE, "hardened", Protocol.RESPONSES), ["wrong", "valid"])
    assert result.exception is None and PERSON.judge(result.output) == (True, True)
    first, second = handle.attempts
    assert first.request_sha256 == second.request_sha256


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [Mode.TOOL, Mode.NATIVE])
async def test_hardened_refusal_raises_model_refusal_error(provider: LocalProvider, mode: Mode) -> None:
    result, handle = await run(provider, cell(mode, "hardened", Protocol.CHAT), ["refusal"])
    assert isinstance(result.exception, ModelRefusalError)
    assert len(handle.attempts) == 1


@pytest.mark.asyncio
async def test_prompted_parser_raises_on_malformed_text(provider: LocalProvider) -> None:
    result, handle = await run(provider, cell(Mode.PROMPTED, "default", Protocol.ANTHROPIC), ["malformed"])
    assert isinstance(result.exception, OutputParserException)
    assert len(handle.attempts) == 1


@pytest.mark.asyncio
async def test_unsupported_cells_are_never_run(provider: LocalProvider) -> None:
    handle = provider.open_run(task="person", script=["valid"])
    with pytest.raises(ValueError):
        await ADAPTER.run_cell(cell(Mode.PROMPTED, "hardened", Protocol.CHAT), PERSON, handle.endpoint)
    handle.close()
    assert handle.attempts == []


@pytest.mark.asyncio
async def test_prompted_parser_completes_a_truncated_answer(provider: LocalProvider) -> None:
    """PydanticOutputParser parses with parse_partial_json even when not streaming, so a
    prefix cut inside the last string comes back as a schema-valid, wrong object."""
    result, handle = await run(provider, cell(Mode.PROMPTED, "default", Protocol.CHAT), [{"truncated": 0.9}])
    assert result.exception is None
    assert PERSON.judge(result.output) == (True, False)
    assert len(handle.attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_streamed_tool_call_completes_a_truncated_answer(provider: LocalProvider, protocol: Protocol) -> None:
    """Streamed tool-call chunks are merged with parse_partial_json, so the stream variant
    accepts the same truncation that the non-streamed ToolStrategy loops on."""
    result, handle = await run(provider, cell(Mode.TOOL, "stream", protocol), [{"truncated": 0.9}])
    assert result.exception is None
    assert PERSON.judge(result.output) == (True, False)
    assert len(handle.attempts) == 1
    assert result.details["stop_reason"] in {"length", "incomplete", "max_tokens"}
