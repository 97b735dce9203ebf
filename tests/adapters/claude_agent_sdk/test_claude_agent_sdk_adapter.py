"""The Claude Agent SDK adapter driven through the real local provider over loopback.

Every run spawns the bundled Claude Code CLI (about 0.4-1 s each). What these tests pin down is
the CLI's structured-output contract as observed (adapters/claude_agent_sdk/research.md):
``output_format`` reaches the wire as an unforced, non-strict ``StructuredOutput`` tool; a
schema or JSON failure goes back to the model as an ``is_error`` tool result; after 5
StructuredOutput calls the run ends with ``error_max_structured_output_retries``, yielded as a
ResultMessage and raised as ``ResultError`` (claude_agent_sdk/_internal/query.py:565-590); prose
gets one "[structured-output-enforce]" nudge, then the run *succeeds* with no object.
"""

from __future__ import annotations

import asyncio
import time

import psutil
import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ResultError

from adapters.claude_agent_sdk.adapter import HARDENED_ENV, OUTPUT_TOOL, ClaudeAgentSdkAdapter
from bench.core.vocabulary import Enforcement, Mode, ModeSupport, Protocol
from bench.provider import LocalProvider
from bench.scenarios.tasks import get_task
from bench.sdk.adapter import Cell
from tests.cell_runner import CellRunner, cell_id, cell_of

ADAPTER = ClaudeAgentSdkAdapter()
TASK = get_task("person")
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
DEFAULT = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC)
HARDENED = cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant="hardened")
CLI_GIVES_UP_AFTER = 5
"""StructuredOutput calls before ``error_max_structured_output_retries`` (CLI 2.1.332 default)."""
CELL_TIMEOUT_S = 60.0


def _cli_processes() -> list[psutil.Process]:
    """Live descendants of this test process running the bundled CLI."""
    alive = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "_bundled" in " ".join(proc.cmdline()) and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.Error:
            continue
    return alive


def test_cells_list_every_mode_and_protocol_with_a_reason_for_each_gap() -> None:
    cells = ADAPTER.cells()
    keys = [(c.mode, c.protocol, c.variant, c.stream) for c in cells]
    assert len(keys) == len(set(keys))
    for mode in Mode:
        for protocol in Protocol:
            assert any(c.mode is mode and c.protocol is protocol for c in cells), (mode, protocol)
    assert all(c.note for c in cells)
    assert {(c.mode, c.protocol) for c in SUPPORTED} == {(Mode.TOOL, Protocol.ANTHROPIC)}
    assert {c.variant for c in SUPPORTED} == {"default", "hardened", "stream"}
    assert [c.stream for c in SUPPORTED if c.stream] == [True]


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_valid_answer_is_returned_after_one_call_on_the_declared_mode(run_cell: CellRunner, cell: Cell) -> None:
    ran = await run_cell(cell, ["valid"])

    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    # Nothing but the task's model call: no count_tokens, no title query, no preflight.
    assert len(ran.attempts) == 1
    (attempt,) = ran.calls
    assert attempt.detected_mode == str(cell.mode)  # the StructuredOutput tool: Mode.TOOL
    assert attempt.enforcement == str(Enforcement.NONE)  # neither strict nor forced
    assert attempt.stream is True  # the CLI always streams, whatever the SDK entry point
    body = attempt.request_body
    assert [tool["name"] for tool in body["tools"]] == [OUTPUT_TOOL]
    assert "tool_choice" not in body
    assert "format" not in body.get("output_config", {})  # only "effort", on models that take it
    assert ran.result.usage is not None
    assert (ran.result.usage.input_tokens, ran.result.usage.output_tokens) == (
        attempt.input_tokens,
        attempt.output_tokens,
    )
    assert ran.result.details["result_subtype"] == "success"
    if cell.stream:
        assert int(ran.result.details["stream_events"]) > 0


@pytest.mark.slow
@pytest.mark.asyncio
async def test_schema_violation_is_sent_back_as_a_tool_error_and_recovered(run_cell: CellRunner) -> None:
    ran = await run_cell(DEFAULT, [{"schema_violation": "out_of_range"}, "valid"])

    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    first, second = ran.calls
    feedback = second.request_body["messages"][-1]["content"][0]
    assert feedback["type"] == "tool_result" and feedback["is_error"] is True
    assert "must be >= 0" in feedback["content"]
    assert first.request_sha256 != second.request_sha256  # an output retry, not a transport retry


@pytest.mark.slow
@pytest.mark.asyncio
async def test_repeated_malformed_tool_input_raises_result_error_after_five_calls(run_cell: CellRunner) -> None:
    ran = await run_cell(DEFAULT, [{"malformed": "trailing_comma"}])

    assert isinstance(ran.result.exception, ResultError)
    assert ran.result.exception.subtype == "error_max_structured_output_retries"
    assert len(ran.calls) == CLI_GIVES_UP_AFTER
    assert ran.result.output is None
    # The error ResultMessage arrives before the exception, so usage is still reported.
    assert ran.result.usage is not None and ran.result.usage.input_tokens
    assert ran.result.details["terminal_reason"] == "structured_output_retry_exhausted"


@pytest.mark.slow
@pytest.mark.asyncio
async def test_prose_gets_one_nudge_then_the_run_succeeds_without_an_object(run_cell: CellRunner) -> None:
    ran = await run_cell(DEFAULT, ["prose"])

    assert ran.result.exception is None
    assert ran.result.output is None
    assert ran.result.details["result_subtype"] == "success"
    assert ran.result.details["result_text"] == TASK.prose
    _, second = ran.calls
    nudge = second.request_body["messages"][-1]["content"][0]["text"]
    assert "You MUST call the StructuredOutput tool" in nudge


@pytest.mark.slow
@pytest.mark.asyncio
async def test_default_returns_a_wrong_answer_as_is(run_cell: CellRunner) -> None:
    ran = await run_cell(DEFAULT, ["wrong"])

    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, False)
    assert len(ran.calls) == 1


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hardened_hook_rejects_a_wrong_answer_and_the_model_recovers(run_cell: CellRunner) -> None:
    ran = await run_cell(HARDENED, ["wrong", "valid"])

    assert ran.result.exception is None
    assert TASK.judge(ran.result.output) == (True, True)
    assert ran.result.fallback is False
    assert ran.result.details["hook_denials"] == "1"
    second = ran.calls[1]
    feedback = second.request_body["messages"][-1]["content"][0]
    assert feedback["is_error"] is True and "age is 63, expected 36" in feedback["content"]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hardened_hook_denials_count_against_the_cli_retry_limit(run_cell: CellRunner) -> None:
    ran = await run_cell(HARDENED, ["wrong"])

    assert isinstance(ran.result.exception, ResultError)
    assert ran.result.exception.subtype == "error_max_structured_output_retries"
    assert len(ran.calls) == CLI_GIVES_UP_AFTER
    assert ran.result.details["hook_denials"] == str(CLI_GIVES_UP_AFTER)


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hardened_retry_budget_bounds_transport_retries(run_cell: CellRunner) -> None:
    ran = await run_cell(HARDENED, [{"http_error": 503}])

    assert isinstance(ran.result.exception, ResultError)
    assert ran.result.exception.terminal_reason == "api_error"
    calls = ran.calls
    assert len(calls) == 1 + int(HARDENED_ENV["CLAUDE_CODE_MAX_RETRIES"])
    assert len({call.request_sha256 for call in calls}) == 1  # the same request again: transport retries


@pytest.mark.slow
@pytest.mark.asyncio
async def test_cancelling_a_cell_kills_the_cli(provider: LocalProvider) -> None:
    run = provider.open_script(task=TASK.name, script=[{"slow": 30.0}], then="valid")
    cell_task = asyncio.create_task(ADAPTER.run_cell(DEFAULT, TASK, run.endpoint))
    deadline = time.monotonic() + CELL_TIMEOUT_S
    while run.state.calls_started == 0:  # the CLI's request has reached the provider
        assert time.monotonic() < deadline and not cell_task.done()
        await asyncio.sleep(0.02)

    started = time.monotonic()
    cell_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cell_task

    assert time.monotonic() - started < 5.0
    assert _cli_processes() == []
    run.close()
