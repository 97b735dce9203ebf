"""The official openai client's parse helpers driven through the runner's path, against the real
local provider over loopback.

Each expectation is read from the client's source (adapters/openai_client/research.md; paths
under site-packages/openai), not from what the adapter did: parse validates once, has no output
retry, raises on a length or content-filter finish and returns ``parsed=None`` on a refusal."""

from __future__ import annotations

import openai
import pydantic
import pytest

from adapters.openai_client.adapter import OpenAIClientAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol, Variant
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = OpenAIClientAdapter()
TASK = get_task("person")
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
CHAT = [cell for cell in SUPPORTED if cell.protocol is Protocol.CHAT]
RESPONSES = [cell for cell in SUPPORTED if cell.protocol is Protocol.RESPONSES]
PLAIN = [cell for cell in SUPPORTED if not cell.stream]


def test_the_table_runs_native_and_tool_on_both_openai_protocols_and_says_why_not_the_rest() -> None:
    cells = {(c.mode, c.protocol, str(c.variant)): c for c in ADAPTER.cells()}
    runnable = {key for key, c in cells.items() if c.mode_support is not ModeSupport.UNSUPPORTED}
    assert runnable == {
        (mode, protocol, variant)
        for mode in (Mode.NATIVE, Mode.TOOL)
        for protocol in (Protocol.CHAT, Protocol.RESPONSES)
        for variant in ("default", "stream")
    }
    assert all(c.note for c in cells.values())
    assert "Anthropic" in cells[(Mode.NATIVE, Protocol.ANTHROPIC, "default")].note
    assert "retry" in cells[(Mode.NATIVE, Protocol.CHAT, "hardened")].note
    assert "prompt" in cells[(Mode.PROMPTED, Protocol.CHAT, "default")].note
    assert ADAPTER.tool_support(cells[(Mode.NATIVE, Protocol.CHAT, "default")]) is not None


@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_a_valid_answer_is_the_parsed_type_after_one_call(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["valid"], "valid")
    assert ran.result.exception is None, ran.result.exception
    assert isinstance(ran.result.output, TASK.output_model)
    assert len(ran.calls) == 1


@pytest.mark.parametrize("cell", PLAIN, ids=cell_id)
async def test_a_schema_violation_raises_validation_error_with_no_retry(run_cell: CellRunner, cell: Cell) -> None:
    """``model_parse_json`` (lib/_parsing/_completions.py:253-255, _responses.py:157-158) raises
    pydantic's error and nothing in the client calls again."""
    ran = await run_cell(cell, [{"schema_violation": "missing_field"}, "valid"])
    assert isinstance(ran.result.exception, pydantic.ValidationError)
    assert len(ran.calls) == 1


@pytest.mark.parametrize("cell", CHAT, ids=cell_id)
async def test_chat_truncation_is_length_finish_reason_error(run_cell: CellRunner, cell: Cell) -> None:
    """``finish_reason == "length"`` raises before any parse (lib/_parsing/_completions.py:109-110)."""
    ran = await run_cell(cell, ["truncated", "valid"])
    assert isinstance(ran.result.exception, openai.LengthFinishReasonError)
    assert len(ran.calls) == 1


async def test_responses_truncation_parses_the_cut_text(run_cell: CellRunner) -> None:
    """responses.parse has no status check: the incomplete text goes to ``model_parse_json``
    (lib/_parsing/_responses.py:52-80, 145-158)."""
    cell = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES)
    ran = await run_cell(cell, ["truncated", "valid"])
    assert isinstance(ran.result.exception, pydantic.ValidationError)


async def test_a_streamed_responses_tool_call_cut_short_has_no_final_response(run_cell: CellRunner) -> None:
    """The stream ends on ``response.incomplete``; ``get_final_response`` wants a
    ``response.completed`` (lib/streaming/responses/_responses.py:188-195)."""
    cell = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.RESPONSES, variant=Variant.STREAM)
    ran = await run_cell(cell, ["truncated", "valid"])
    assert isinstance(ran.result.exception, RuntimeError)
    assert "response.completed" in str(ran.result.exception)


async def test_a_streamed_chat_answer_that_is_not_json_fails_in_the_partial_parser(run_cell: CellRunner) -> None:
    """The chat stream parses the content as it grows with jiter's ``from_json(partial_mode=True)``
    (lib/streaming/chat/_completions.py:441-444): a trailing comma is jiter's ValueError, before
    pydantic sees it."""
    cell = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT, variant=Variant.STREAM)
    ran = await run_cell(cell, [{"malformed": "trailing_comma"}, "valid"])
    assert type(ran.result.exception) is ValueError
    assert len(ran.calls) == 1


@pytest.mark.parametrize("cell", [c for c in SUPPORTED if c.mode is Mode.NATIVE], ids=cell_id)
async def test_a_refusal_is_parsed_none_not_an_exception(run_cell: CellRunner, cell: Cell) -> None:
    """``maybe_parse_content`` skips a message with a refusal (lib/_parsing/_completions.py:205-206);
    the Responses refusal part is not output_text, so nothing is parsed (_responses.py:66-68)."""
    ran = await run_cell(cell, ["refusal", "valid"])
    assert ran.result.exception is None and ran.result.output is None
    assert len(ran.calls) == 1


async def test_a_wrong_but_valid_answer_is_returned_as_is(run_cell: CellRunner) -> None:
    ran = await run_cell(cell_of(ADAPTER, mode=Mode.TOOL), ["wrong", "valid"])
    assert ran.result.output == TASK.output_model.model_validate(TASK.wrong)


@pytest.mark.parametrize("cell", PLAIN, ids=cell_id)
async def test_a_500_is_retried_by_the_transport_and_the_usage_is_the_clients(run_cell: CellRunner, cell: Cell) -> None:
    """``max_retries`` defaults to 2 (_constants.py): the 500 is retried, the second answer parsed."""
    ran = await run_cell.scenario(cell, "http_500_then_valid")
    assert isinstance(ran.result.output, TASK.output_model)
    assert len(ran.attempts) == 2
    assert ran.result.usage is not None and ran.result.usage.input_tokens


async def test_a_400_raises_bad_request_at_once(run_cell: CellRunner) -> None:
    ran = await run_cell.scenario(cell_of(ADAPTER, mode=Mode.NATIVE), "http_400_persistent")
    assert isinstance(ran.result.exception, openai.BadRequestError)
    assert len(ran.attempts) == 1
