"""The LangChain adapter against the real local provider, over loopback.

Each expectation below is what the installed LangChain source predicts (adapters/langchain/research.md
has the file:line references); the provider's ledger is the truth of how many
model calls were made and what they carried. ``run_cell`` (tests/adapters/conftest.py) drives
each cell the way the runner does.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain.agents", reason="pip install 'misfit-bench[langchain]'")

import openai
from langchain.agents.middleware.model_call_limit import ModelCallLimitExceededError
from langchain.agents.structured_output import StructuredOutputValidationError
from langchain_core.exceptions import ModelRefusalError, OutputParserException

from adapters.langchain.adapter import HARDENED_RUN_LIMIT, LangChainAdapter, validated_model
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.scenarios.tasks import TASKS, get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRun, CellRunner, cell_id, cell_of

ADAPTER = LangChainAdapter()
SUPPORTED = [c for c in ADAPTER.cells() if c.mode_support is not ModeSupport.UNSUPPORTED]
PERSON = get_task("person")


def request_text(ran: CellRun, attempt: int) -> str:
    return json.dumps(ran.attempts[attempt].request_body)


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
async def test_valid_answer_is_ok_in_the_declared_mode(run_cell: CellRunner, c: Cell) -> None:
    ran = await run_cell(c, ["valid"])
    assert ran.result.exception is None
    assert PERSON.judge(ran.result.output) == (True, True)
    [attempt] = ran.attempts
    assert attempt.detected_mode == c.mode
    assert attempt.stream == c.stream
    assert ran.result.usage is not None and ran.result.usage.output_tokens == attempt.output_tokens


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_bare_schema_picks_provider_strategy(run_cell: CellRunner, protocol: Protocol) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant="auto"), ["valid"])
    assert ran.result.details["strategy"] == "ProviderStrategy"
    assert ran.attempts[0].detected_mode == Mode.NATIVE


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_tool_strategy_feeds_a_schema_violation_back(run_cell: CellRunner, protocol: Protocol) -> None:
    """handle_errors=True by default: the ValidationError goes back as a ToolMessage."""
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol), [{"schema_violation": "wrong_type"}, "valid"]
    )
    assert ran.result.exception is None and PERSON.judge(ran.result.output) == (True, True)
    assert len(ran.attempts) == 2
    assert "Please fix your mistakes" in request_text(ran, 1)


@pytest.mark.asyncio
async def test_malformed_openai_tool_arguments_get_the_invalid_tool_call_patch(
    run_cell: CellRunner,
) -> None:
    """Unparseable arguments become invalid_tool_calls, which never reach handle_errors; the
    next request carries LangChain's generic 'malformed or truncated' ToolMessage instead."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT), ["malformed", "valid"])
    assert ran.result.exception is None and PERSON.judge(ran.result.output) == (True, True)
    assert len(ran.attempts) == 2
    assert "arguments were malformed or truncated" in request_text(ran, 1)


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "stream"])
async def test_tool_strategy_loops_on_prose_until_the_call_cap(run_cell: CellRunner, variant: str) -> None:
    """No tool call means no structured_response, and the model->model edge calls the model
    again, with no feedback and no bound short of recursion_limit=9999."""
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT, variant=variant), ["prose"], call_cap=4
    )
    assert ran.stopped == "runaway"
    assert len(ran.calls) == 5  # four served, the fifth held at the cap


@pytest.mark.asyncio
@pytest.mark.parametrize("variant", ["default", "auto", "stream"])
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_provider_strategy_raises_on_a_schema_violation(
    run_cell: CellRunner, variant: str, protocol: Protocol
) -> None:
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol, variant=variant), ["schema_violation", "valid"]
    )
    assert isinstance(ran.result.exception, StructuredOutputValidationError)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_truncated_native_chat_raises_the_openai_length_error_without_usage(
    run_cell: CellRunner,
) -> None:
    """ChatOpenAI sends response_format requests through client.chat.completions.parse, which
    raises before LangChain sees a message, so no usage reaches the callback."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT), ["truncated"])
    assert isinstance(ran.result.exception, openai.LengthFinishReasonError)
    assert len(ran.attempts) == 1
    assert ran.result.usage is not None and ran.result.usage.input_tokens is None


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_hardened_tool_rejects_a_wrong_answer_with_feedback(run_cell: CellRunner, protocol: Protocol) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol, variant="hardened"), ["wrong", "valid"])
    assert ran.result.exception is None and PERSON.judge(ran.result.output) == (True, True)
    assert len(ran.attempts) == 2
    assert "age is 63, expected 36" in request_text(ran, 1)


@pytest.mark.asyncio
async def test_hardened_tool_budget_raises_model_call_limit(run_cell: CellRunner) -> None:
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant="hardened"), ["malformed"]
    )
    assert isinstance(ran.result.exception, ModelCallLimitExceededError)
    assert len(ran.attempts) == HARDENED_RUN_LIMIT


@pytest.mark.asyncio
async def test_hardened_native_retries_the_identical_request(run_cell: CellRunner) -> None:
    """ModelRetryMiddleware retries the StructuredOutputValidationError by re-sending the same
    request: an output failure that the ledger sees as a same-body resend."""
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES, variant="hardened"), ["wrong", "valid"]
    )
    assert ran.result.exception is None and PERSON.judge(ran.result.output) == (True, True)
    first, second = ran.attempts
    assert first.request_sha256 == second.request_sha256


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", [Mode.TOOL, Mode.NATIVE])
async def test_hardened_refusal_raises_model_refusal_error(run_cell: CellRunner, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT, variant="hardened"), ["refusal"])
    assert isinstance(ran.result.exception, ModelRefusalError)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_prompted_parser_raises_on_malformed_text(run_cell: CellRunner) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.PROMPTED, protocol=Protocol.ANTHROPIC), ["malformed"])
    assert isinstance(ran.result.exception, OutputParserException)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
async def test_unsupported_cells_are_never_run(run_cell: CellRunner) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.PROMPTED, protocol=Protocol.CHAT, variant="hardened"), ["valid"])
    assert isinstance(ran.harness_error, ValueError)
    assert ran.attempts == []


@pytest.mark.asyncio
async def test_prompted_parser_completes_a_truncated_answer(run_cell: CellRunner) -> None:
    """PydanticOutputParser parses with parse_partial_json even when not streaming, so a
    prefix cut inside the last string comes back as a schema-valid, wrong object."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.PROMPTED, protocol=Protocol.CHAT), [{"truncated": 0.9}])
    assert ran.result.exception is None
    assert PERSON.judge(ran.result.output) == (True, False)
    assert len(ran.attempts) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", list(Protocol))
async def test_streamed_tool_call_completes_a_truncated_answer(run_cell: CellRunner, protocol: Protocol) -> None:
    """Streamed tool-call chunks are merged with parse_partial_json, so the stream variant
    accepts the same truncation that the non-streamed ToolStrategy loops on."""
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=protocol, variant="stream"), [{"truncated": 0.9}])
    assert ran.result.exception is None
    assert PERSON.judge(ran.result.output) == (True, False)
    assert len(ran.attempts) == 1
    assert ran.result.details["stop_reason"] in {"length", "incomplete", "max_tokens"}
