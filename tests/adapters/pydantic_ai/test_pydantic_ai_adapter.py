"""The Pydantic AI adapter, driven through the real provider over loopback.

Each expectation below is the prediction from the SDK's source (adapters/pydantic_ai/research.md has
the file:line references): the budget arithmetic, the exception classes, and the mode each
declaration puts on the wire.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pydantic_ai", reason="pip install 'misfit-bench[pydantic-ai]'")

from pydantic_ai.exceptions import (
    ContentFilterError,
    IncompleteToolCall,
    ModelHTTPError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
)

from adapters.pydantic_ai.adapter import HARDENED_OUTPUT_RETRIES, PydanticAIAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = PydanticAIAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
PROTOCOLS = (Protocol.CHAT, Protocol.RESPONSES, Protocol.ANTHROPIC)
MODES = (Mode.TOOL, Mode.NATIVE, Mode.PROMPTED)


def test_cells_cover_every_mode_protocol_variant() -> None:
    keys = {(c.mode, c.protocol, c.variant) for c in ADAPTER.cells()}
    assert len(keys) == len(ADAPTER.cells()) == 3 * 3 * 3
    assert all(c.mode_support is ModeSupport.BUILTIN and c.note for c in ADAPTER.cells())
    assert {c.variant for c in ADAPTER.cells() if c.stream} == {"stream"}


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_valid_answer_is_returned_and_wire_mode_matches(run_cell: CellRunner, cell: Cell) -> None:
    task = get_task("person")
    ran = await run_cell(cell, ["valid"])
    assert ran.result.exception is None
    assert task.judge(ran.result.output) == (True, True)
    assert not ran.result.fallback
    assert [a.detected_mode for a in ran.calls] == [str(cell.mode)]
    assert ran.result.usage is not None
    assert (ran.result.usage.input_tokens, ran.result.usage.output_tokens) == (
        ran.calls[0].input_tokens,
        ran.calls[0].output_tokens,
    )


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_wire_enforcement_per_declaration(run_cell: CellRunner, protocol: Protocol) -> None:
    """Strictness is decided by the model class/profile: OpenAI marks the Person schema strict on
    its own; Anthropic sends a strict tool only when ToolOutput(strict=True) asks for it."""
    seen = {}
    for mode in MODES:
        for variant in ("default", "hardened"):
            ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=protocol, variant=variant), ["valid"])
            seen[(mode, variant)] = ran.calls[0].enforcement
    openai_tool = "strict" if protocol is not Protocol.ANTHROPIC else "none"
    assert seen[(Mode.TOOL, "default")] == openai_tool
    assert seen[(Mode.TOOL, "hardened")] == "strict"
    assert seen[(Mode.NATIVE, "default")] == seen[(Mode.NATIVE, "hardened")] == "strict"
    prompted = "none" if protocol is Protocol.ANTHROPIC else "json"  # json_object on OpenAI
    assert seen[(Mode.PROMPTED, "default")] == prompted


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_malformed_once_recovers_on_the_second_call(run_cell: CellRunner, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT), ["malformed"], "valid")
    assert ran.result.exception is None
    assert get_task("person").judge(ran.result.output) == (True, True)
    assert len(ran.calls) == 2
    assert ran.result.usage is not None
    assert ran.result.usage.input_tokens == sum(a.input_tokens for a in ran.calls)


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("mode", MODES)
async def test_default_budget_is_one_retry_then_raise(run_cell: CellRunner, mode: Mode, protocol: Protocol) -> None:
    """retries default 1: two model calls, then UnexpectedModelBehavior('Exceeded maximum output
    retries (1)') chained to the ValidationError; usage still reported for both calls."""
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=protocol), ["malformed"])
    assert type(ran.result.exception) is UnexpectedModelBehavior
    assert str(ran.result.exception) == "Exceeded maximum output retries (1)"
    assert len(ran.calls) == 2
    assert ran.result.usage is not None
    assert ran.result.usage.input_tokens == sum(a.input_tokens for a in ran.calls)
    assert ran.result.details["sdk_usage_requests"] == "2"


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_hardened_validator_rejects_wrong_then_fallback(run_cell: CellRunner, mode: Mode) -> None:
    """ModelRetry from the output validator spends the output budget (3 retries, 4 calls); the
    run_error hook then turns UnexpectedModelBehavior into a None fallback."""
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.ANTHROPIC, variant="hardened"), ["wrong"])
    assert ran.result.exception is None
    assert ran.result.fallback and ran.result.output is None
    assert len(ran.calls) == HARDENED_OUTPUT_RETRIES + 1
    assert ran.result.details["recovered_error"] == "pydantic_ai.exceptions.UnexpectedModelBehavior"


@pytest.mark.asyncio
async def test_hardened_validator_recovers_from_wrong(run_cell: CellRunner) -> None:
    cell = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.RESPONSES, variant="hardened")
    ran = await run_cell(cell, ["wrong"], "valid")
    assert get_task("person").judge(ran.result.output) == (True, True)
    assert len(ran.calls) == 2 and not ran.result.fallback


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_default_returns_wrong_answer_unchecked(run_cell: CellRunner, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT), ["wrong"])
    assert get_task("person").judge(ran.result.output) == (True, False)
    assert len(ran.calls) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", MODES)
async def test_stream_raises_on_first_invalid_output_without_retry(run_cell: CellRunner, mode: Mode) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=mode, protocol=Protocol.CHAT, variant="stream"), ["schema_violation"])
    assert type(ran.result.exception) is UnexpectedModelBehavior
    assert "retries are not supported in `run_stream()`" in str(ran.result.exception)
    assert len(ran.calls) == 1 and ran.calls[0].stream


@pytest.mark.asyncio
async def test_stream_tool_mode_still_retries_prose(run_cell: CellRunner) -> None:
    """Text under tool output never starts a final result (models/__init__.py:4262-4275), so the
    graph goes on to CallToolsNode and re-asks, unlike native/prompted streaming."""
    cell = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant="stream")
    ran = await run_cell(cell, ["prose"], "valid")
    assert get_task("person").judge(ran.result.output) == (True, True)
    assert len(ran.calls) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_refusal_raises_content_filter_without_retry(run_cell: CellRunner, protocol: Protocol) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=protocol), ["refusal"])
    assert type(ran.result.exception) is ContentFilterError
    assert len(ran.calls) == 1


@pytest.mark.asyncio
async def test_truncated_text_raises_at_once_truncated_tool_call_after_budget(run_cell: CellRunner) -> None:
    native = await run_cell(cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT), ["truncated"])
    assert type(native.result.exception) is OutputTokenLimitExceeded
    assert len(native.calls) == 1
    tool = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT), ["truncated"])
    assert type(tool.result.exception) is IncompleteToolCall
    assert len(tool.calls) == 2


@pytest.mark.asyncio
async def test_http_400_is_not_retried_and_not_recovered_by_the_hardened_handler(
    run_cell: CellRunner,
) -> None:
    ran = await run_cell(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT, variant="hardened"), [{"http_error": 400}], "valid"
    )
    assert isinstance(ran.result.exception, ModelHTTPError)
    assert ran.result.exception.status_code == 400
    assert not ran.result.fallback
    assert len(ran.calls) == 1
