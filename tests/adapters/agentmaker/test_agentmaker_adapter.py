"""The agentmaker adapter driven through the real local provider over loopback.

What these tests pin down is agentmaker's documented contract for ``output_schema``: one retry
by default (runtime/harness.py:61), then ``LLMResponseError`` and never a partial object
(runtime/harness.py:324-332); a semantically wrong but schema-valid object is returned as is
unless an output guardrail rejects it (agents/base.py:539-580).
"""

from __future__ import annotations

import pytest

pytest.importorskip("agentmaker")

from agentmaker.core.exceptions import (
    GuardrailTripwireError,
    LLMRequestError,
    LLMResponseError,
)

from adapters.agentmaker.adapter import HARDENED_RETRIES, AgentmakerAdapter
from bench.core.vocabulary import Enforcement, Mode, ModeSupport, Protocol
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = AgentmakerAdapter()
TASK = get_task("person")
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
DEFAULTS = [cell for cell in SUPPORTED if cell.variant != "hardened"]
HARDENED = [cell for cell in SUPPORTED if cell.variant == "hardened"]

EXPECTED_ENFORCEMENT = {
    # response_format json_schema without "strict" (openai_compat.py:185-187)
    (Mode.NATIVE, Protocol.CHAT): {Enforcement.JSON},
    # output_config.format is constrained decoding on Anthropic (anthropic.py:237)
    (Mode.NATIVE, Protocol.ANTHROPIC): {Enforcement.STRICT},
    # none -> nothing sent; json_object -> {"type": "json_object"} (openai_compat.py:188-190)
    (Mode.PROMPTED, Protocol.CHAT): {Enforcement.NONE, Enforcement.JSON},
}


def test_cells_list_every_mode_and_protocol_with_a_reason_for_each_gap() -> None:
    cells = ADAPTER.cells()
    keys = [(c.mode, c.protocol, c.variant, c.stream) for c in cells]
    assert len(keys) == len(set(keys))
    for mode in Mode:
        for protocol in Protocol:
            assert any(c.mode is mode and c.protocol is protocol for c in cells), (mode, protocol)
    assert all(c.note for c in cells)
    assert {c.mode for c in SUPPORTED} == set(ADAPTER.modes)
    assert all(c.mode_support is ModeSupport.UNSUPPORTED for c in cells if c.stream)


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_valid_answer_is_returned_after_one_call_in_the_declared_mode(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["valid"], "valid")
    assert ran.result.exception is None
    assert isinstance(ran.result.output, TASK.output_model)
    assert TASK.judge(ran.result.output) == (True, True)
    calls = ran.calls
    assert len(calls) == 1
    assert calls[0].detected_mode == cell.mode
    assert calls[0].enforcement in EXPECTED_ENFORCEMENT[(cell.mode, cell.protocol)]
    assert ran.result.usage is not None
    assert ran.result.usage.input_tokens == calls[0].input_tokens
    assert ran.result.usage.output_tokens == calls[0].output_tokens


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_malformed_then_valid_recovers_with_the_failed_answer_fed_back(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, [{"malformed": "trailing_comma"}], "valid")
    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    first, second = ran.calls
    # An output retry, not a transport retry: the second request carries the failed answer
    # and the correction note (runtime/harness.py:330-331).
    assert second.request_sha256 != first.request_sha256
    assert second.request_body is not None and first.request_body is not None
    assert len(second.request_body["messages"]) == len(first.request_body["messages"]) + 2


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_persistent_malformed_raises_llm_response_error_after_the_retry_budget(
    run_cell: CellRunner, cell: Cell
) -> None:
    ran = await run_cell(cell, [{"malformed": "trailing_comma"}], "repeat")
    assert ran.result.output is None
    assert isinstance(ran.result.exception, LLMResponseError)
    budget = HARDENED_RETRIES if cell.variant == "hardened" else 1
    assert len(ran.calls) == budget + 1


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", DEFAULTS, ids=cell_id)
async def test_wrong_answer_reaches_the_caller_without_a_guardrail(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["wrong"], "repeat")
    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, False)
    assert len(ran.calls) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", HARDENED, ids=cell_id)
async def test_wrong_answer_trips_the_output_guardrail_without_a_retry(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["wrong"], "valid")
    assert isinstance(ran.result.exception, GuardrailTripwireError)
    assert "age" in str(ran.result.exception)
    assert len(ran.calls) == 1


@pytest.mark.asyncio
async def test_fenced_json_in_prose_is_extracted_on_the_first_call(run_cell: CellRunner) -> None:
    cell = cell_of(ADAPTER, mode=Mode.PROMPTED)
    ran = await run_cell(cell, [{"malformed": "fenced_prose"}], "repeat")
    # _extract_json takes the fenced block (runtime/harness.py:118-140): no retry needed.
    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    assert len(ran.calls) == 1


@pytest.mark.asyncio
async def test_http_400_raises_llm_request_error_without_any_retry(run_cell: CellRunner) -> None:
    cell = cell_of(ADAPTER, mode=Mode.NATIVE)
    ran = await run_cell(cell, [{"http_error": 400}], "valid")
    # 400 is not retried by the openai client, and astructured only retries validation
    # failures: the LLMRequestError from _request_error (adapters/base.py:22-36) propagates.
    assert isinstance(ran.result.exception, LLMRequestError)
    assert ran.result.exception.status_code == 400
    assert len(ran.calls) == 1
    assert ran.result.usage is None


@pytest.mark.asyncio
async def test_rate_limit_is_absorbed_by_the_official_clients_transport_retry(
    run_cell: CellRunner,
) -> None:
    cell = cell_of(ADAPTER, mode=Mode.NATIVE)
    ran = await run_cell(cell, [{"http_error": 429}], "valid")
    # agentmaker builds AsyncOpenAI without max_retries (openai_compat.py:134): the client's own
    # retry resends the same body; the SDK-reported usage covers only the answered request.
    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    first, second = ran.calls
    assert (first.status_code, second.status_code) == (429, 200)
    assert first.request_sha256 == second.request_sha256
    assert ran.result.usage is not None and ran.result.usage.input_tokens == second.input_tokens


@pytest.mark.asyncio
async def test_refusal_is_retried_as_empty_output_then_raised(run_cell: CellRunner) -> None:
    cell = cell_of(ADAPTER, mode=Mode.NATIVE)
    ran = await run_cell(cell, ["refusal"], "repeat")
    # message.refusal is dropped, content None becomes "" (openai_compat.py:224) and fails
    # extraction like any non-JSON text (harness.py:148-150).
    assert isinstance(ran.result.exception, LLMResponseError)
    assert "empty content or no JSON" in str(ran.result.exception)
    assert len(ran.calls) == 2
