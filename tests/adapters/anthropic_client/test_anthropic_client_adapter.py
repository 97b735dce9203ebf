"""The official anthropic client's structured output (``messages.parse(output_format=...)``) and
tool use forced to one tool, driven through the runner's path against the local provider.

Expectations come from the client's source (adapters/anthropic_client/research.md; paths under
site-packages/anthropic): ``parse`` validates every text block with ``TypeAdapter.validate_json``
whatever the stop reason, has no output retry, and the tool path validates nothing itself."""

from __future__ import annotations

import anthropic
import pydantic
import pytest

from adapters.anthropic_client.adapter import AnthropicClientAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = AnthropicClientAdapter()
TASK = get_task("person")
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
NATIVE = [cell for cell in SUPPORTED if cell.mode is Mode.NATIVE]
TOOL = [cell for cell in SUPPORTED if cell.mode is Mode.TOOL]


def cell(mode: Mode, variant: str = "default") -> Cell:
    return cell_of(ADAPTER, mode=mode, protocol=Protocol.ANTHROPIC, variant=variant)


def test_the_table_runs_native_builtin_and_tool_composed_on_messages_only() -> None:
    cells = {(c.mode, c.protocol, str(c.variant)): c for c in ADAPTER.cells()}
    runnable = {key: c.mode_support for key, c in cells.items() if c.mode_support is not ModeSupport.UNSUPPORTED}
    assert runnable == {
        (Mode.NATIVE, Protocol.ANTHROPIC, "default"): ModeSupport.BUILTIN,
        (Mode.NATIVE, Protocol.ANTHROPIC, "stream"): ModeSupport.BUILTIN,
        (Mode.TOOL, Protocol.ANTHROPIC, "default"): ModeSupport.COMPOSED,
        (Mode.TOOL, Protocol.ANTHROPIC, "stream"): ModeSupport.COMPOSED,
    }
    assert all(c.note for c in cells.values())
    assert "Anthropic Messages only" in cells[(Mode.NATIVE, Protocol.CHAT, "default")].note


@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_a_valid_answer_is_the_type_after_one_call(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["valid"], "valid")
    assert ran.result.exception is None, ran.result.exception
    assert isinstance(ran.result.output, TASK.output_model)
    assert len(ran.calls) == 1
    assert ran.result.usage is not None and ran.result.usage.input_tokens


@pytest.mark.parametrize("cell", NATIVE, ids=cell_id)
async def test_malformed_json_is_validation_error_with_no_retry(run_cell: CellRunner, cell: Cell) -> None:
    """``TypeAdapter(output_format).validate_json`` (lib/_parse/_response.py:15-19; streamed at the
    block's stop, lib/streaming/_messages.py:533-535)."""
    ran = await run_cell(cell, [{"malformed": "trailing_comma"}, "valid"])
    assert isinstance(ran.result.exception, pydantic.ValidationError)
    assert len(ran.calls) == 1


@pytest.mark.parametrize("cell", NATIVE, ids=cell_id)
async def test_a_truncated_answer_is_parsed_and_fails_validation(run_cell: CellRunner, cell: Cell) -> None:
    """No stop_reason check anywhere on the parse path: ``max_tokens`` text is validated as is."""
    ran = await run_cell(cell, ["truncated", "valid"])
    assert isinstance(ran.result.exception, pydantic.ValidationError)


@pytest.mark.parametrize("cell", NATIVE, ids=cell_id)
async def test_a_refusal_is_no_parsed_output(run_cell: CellRunner, cell: Cell) -> None:
    """A refusal has no text to validate: ``parsed_output`` finds no parsed text block and is None
    (types/parsed_message.py:76-82)."""
    ran = await run_cell(cell, ["refusal", "valid"])
    assert ran.result.exception is None and ran.result.output is None


async def test_prose_in_tool_mode_is_no_tool_use_block(run_cell: CellRunner) -> None:
    """``tool_choice`` forces a tool on the real API; the client checks nothing, so a text-only
    answer reaches the caller as a message without a tool_use block (output None)."""
    ran = await run_cell(cell(Mode.TOOL), ["prose", "valid"])
    assert ran.result.exception is None and ran.result.output is None


async def test_a_wrong_tool_input_is_validated_only_by_the_callers_line(run_cell: CellRunner) -> None:
    ran = await run_cell(cell(Mode.TOOL, Variant.STREAM), [{"schema_violation": "missing_field"}, "valid"])
    assert isinstance(ran.result.exception, pydantic.ValidationError)
    assert len(ran.calls) == 1


@pytest.mark.parametrize("name", ["http_529_then_valid", "http_429_then_valid"])
async def test_overload_and_rate_limit_are_retried_by_the_transport(run_cell: CellRunner, name: str) -> None:
    """``max_retries`` defaults to 2 (_constants.py); 429 and 529 are retryable (_base_client.py)."""
    ran = await run_cell.scenario(cell(Mode.NATIVE), name)
    assert isinstance(ran.result.output, TASK.output_model)
    assert len(ran.attempts) == 2


async def test_a_400_raises_bad_request_at_once(run_cell: CellRunner) -> None:
    ran = await run_cell.scenario(cell(Mode.TOOL), "http_400_persistent")
    assert isinstance(ran.result.exception, anthropic.BadRequestError)
    assert len(ran.attempts) == 1
