"""The Claude Agent SDK adapter with the harness tool (``order_lookup``), through the real provider.

The scenarios are loaded from scenarios/tools.yaml, so the scripts are the ones the runner runs.
Source references are to claude-agent-sdk 0.2.189 (bundled CLI 2.1.332) under
.venv/lib/python3.12/site-packages/claude_agent_sdk/; CLI facts cite byte offsets in
``_bundled/claude`` (adapters/claude_agent_sdk/research.md, "Tool errors", has the account).

How the numbers come about:

- The tool is an SDK MCP tool (``@tool`` + ``create_sdk_mcp_server``, __init__.py:277-357,
  517-646). The CLI offers it as ``mcp__harness__lookup_order`` next to ``StructuredOutput``
  and forwards every call, unvalidated, to the SDK over the control protocol (``mcp_message``,
  _internal/query.py:711-729). The SDK's ``run_tool`` (__init__.py:619-641) answers each one
  as an MCP result: arguments that fail the schema -> ``isError`` "Input validation error: ..."
  (jsonschema, __init__.py:630-632; the tool never runs); a raised exception -> ``isError``
  with ``str(exception)`` (__init__.py:640-641), which for ``OrderToolError`` is the structured
  JSON. So in every variant each tool error reaches the model as an ``is_error`` tool_result
  paired with the call id; the default's raise and the hardened's ``is_error`` return look the
  same on the wire.
- Nothing bounds tool errors: the CLI's only structured-output budget counts StructuredOutput
  calls (5, adapters/claude_agent_sdk/research.md section 2), and without ``max_turns`` the loop
  goes on. Default and stream run into the call cap; hardened's ``max_turns=10`` (a turn budget
  shared by tool calls and answers) ends it with ``ResultError(error_max_turns)``
  (_internal/query.py:565-590).
- A non-retryable error does not stop the default loop: the SDK cannot tell it from any other
  exception. Hardened stops it with hooks (adapters/claude_agent_sdk/adapter.py ``_add_tool_stop_hooks``):
  the CLI ignores ``continue: false`` from PostToolUseFailure, so the model gets one more turn,
  and the PreToolUse guard's ``continue: false`` ends the run before the tool runs again, as a
  *success* result without an object (``terminal_reason: hook_stopped``): outcome ``empty``.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import ResultError

from adapters.claude_agent_sdk.adapter import (
    HARDENED_MAX_TURNS,
    OUTPUT_TOOL,
    ClaudeAgentSdkAdapter,
    _HookLog,
    _options,
    _spec,
    wire_tool_name,
)
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.provider import AttemptRecord
from bench.provider.detect import ToolResultSeen
from bench.scenarios.tasks import Task, get_task
from bench.sdk.adapter import AdapterResult, Endpoint
from bench.tools import ERROR_MARKER, TOOL_NAME, LookupOrderArgs
from tests.cell_runner import CellRun, CellRunner, cell_of
from tests.tool_scenarios import SINGLE_CALL_SCENARIOS

ADAPTER = ClaudeAgentSdkAdapter()
CELLS = {
    variant: cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.ANTHROPIC, variant=variant)
    for variant in ("default", "hardened", "stream")
}
"""The CLI's one supported mode and protocol (test_claude_agent_sdk_adapter.py checks that), per variant."""
SCENARIOS = {s.name: s for s in SINGLE_CALL_SCENARIOS}
CALL_CAP = 10
CONCURRENCY = 8
WIRE_NAME = wire_tool_name(TOOL_NAME)

STREAM_SCENARIOS = ("tool_ok", "tool_unknown_order_then_ok", "tool_permission_denied", "tool_budget_shared")
"""The stream variant adds only StreamEvent messages on the SDK side (the CLI streams on the wire
in every variant), so a sample of the scenarios shows it behaves as default."""

RUNS = [(variant, name) for variant in ("default", "hardened") for name in SCENARIOS] + [
    ("stream", name) for name in STREAM_SCENARIOS
]


@dataclass(frozen=True)
class Measured:
    """One run of one scenario: what the adapter reported and what the ledger and tool saw."""

    result: AdapterResult | None
    """None when the run reached the call cap (the runner's ``runaway``)."""
    attempts: list[AttemptRecord]
    task: Task

    @property
    def calls(self) -> list[AttemptRecord]:
        """The model calls served (the request held at the cap is not one)."""
        return [a for a in self.attempts if a.attempt is not None and a.behaviour != "call_cap"]

    @property
    def tool_runs(self) -> int:
        assert self.task.tool is not None
        return len(self.task.tool.invocations)

    @property
    def issued(self) -> list[str]:
        """Call ids of the harness-tool calls the model issued, in order."""
        return [a.tool_call_id for a in self.calls if a.behaviour.startswith("tool_call") and a.tool_call_id]

    def returned(self, call_id: str) -> ToolResultSeen | None:
        """The result a later model call carried back for ``call_id``, if any."""
        return next((r for a in self.calls for r in a.tool_results if r.call_id == call_id), None)

    @property
    def output(self) -> Any:
        return None if self.result is None else self.result.output

    @property
    def exception(self) -> BaseException | None:
        return None if self.result is None else self.result.exception

    @classmethod
    def of(cls, ran: CellRun) -> Measured:
        assert ran.driven.result is not None or ran.stopped == "runaway", f"{ran.cell}: {ran.driven}"
        return cls(ran.driven.result, ran.attempts, ran.task)


async def _measure_all(run_cell: CellRunner) -> dict[tuple[str, str], Measured]:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(variant: str, name: str) -> Measured:
        async with gate:
            return Measured.of(await run_cell.scenario(CELLS[variant], name, call_cap=CALL_CAP))

    measured = await asyncio.gather(*(one(variant, name) for variant, name in RUNS))
    return dict(zip(RUNS, measured, strict=True))


@pytest.fixture(scope="module")
def measured(run_cell: CellRunner) -> dict[tuple[str, str], Measured]:
    """Every run of this file, measured once and concurrently (each spawns the CLI, ~1-3 s)."""
    return asyncio.run(_measure_all(run_cell))


# --- the cells ---------------------------------------------------------------------------------


def test_every_supported_cell_supports_the_tool_and_unsupported_ones_say_why() -> None:
    for cell in ADAPTER.cells():
        if cell.mode_support is ModeSupport.UNSUPPORTED:
            assert ADAPTER.tool_support(cell) == cell.note
        else:
            assert ADAPTER.tool_support(cell) is None


@pytest.mark.slow
def test_the_tool_is_offered_as_an_mcp_tool_next_to_structured_output(
    measured: dict[tuple[str, str], Measured],
) -> None:
    """The CLI names SDK MCP tools ``mcp__<server>__<tool>`` and sends the handler's input schema
    verbatim (``_build_input_schema`` keeps a full JSON schema, __init__.py:436-442); ``tools=[]``
    removes only the built-in tools."""
    for variant in CELLS:
        first = measured[(variant, "tool_ok")].calls[0]
        assert first.request_body is not None
        tools = {tool["name"]: tool for tool in first.request_body["tools"]}
        assert list(tools) == [OUTPUT_TOOL, WIRE_NAME]
        assert tools[WIRE_NAME]["input_schema"] == LookupOrderArgs.model_json_schema()
        assert "tool_choice" not in first.request_body


# --- scenarios in which the run ends with an answer ------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("variant", list(CELLS))
def test_tool_ok(measured: dict[tuple[str, str], Measured], variant: str) -> None:
    """One tool call, its result back as a plain (``is_error: false``) tool_result, then the answer."""
    m = measured[(variant, "tool_ok")]
    assert m.exception is None
    assert m.task.judge(m.output) == (True, True)
    assert (m.tool_runs, len(m.calls)) == (1, 2)
    result = m.returned(m.issued[0])
    assert result is not None and result.is_error is False and result.success


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "hardened"])
def test_tool_bad_args_then_ok(measured: dict[tuple[str, str], Measured], variant: str) -> None:
    """The SDK validates the arguments with jsonschema before the handler (__init__.py:630-632):
    the tool does not run, and the model gets the SDK's own message (not the tool's structured
    error) as ``is_error``, paired with the call id. The CLI itself does not validate MCP input."""
    m = measured[(variant, "tool_bad_args_then_ok")]
    assert m.exception is None
    assert m.task.judge(m.output) == (True, True)
    assert (m.tool_runs, len(m.calls)) == (1, 3)
    error = m.returned(m.issued[0])
    assert error is not None and error.is_error is True
    assert error.text.startswith("Input validation error: Additional properties are not allowed ('order'")
    assert ERROR_MARKER not in error.text


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "hardened", "stream"])
def test_tool_unknown_order_then_ok(measured: dict[tuple[str, str], Measured], variant: str) -> None:
    """Default raises ``OrderToolError``; the SDK turns any handler exception into an ``isError``
    result with ``str(e)`` (__init__.py:640-641), i.e. the structured JSON. Hardened returns the
    same text with ``is_error: True`` itself (__init__.py:633-639): identical on the wire."""
    m = measured[(variant, "tool_unknown_order_then_ok")]
    assert m.exception is None
    assert m.task.judge(m.output) == (True, True)
    assert (m.tool_runs, len(m.calls)) == (2, 3)
    error = m.returned(m.issued[0])
    assert error is not None and error.is_error is True
    assert error.structured_error and '"error_code": "ORDER_NOT_FOUND", "retryable": true' in error.text


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "hardened"])
def test_tool_upstream_timeout_then_ok(measured: dict[tuple[str, str], Measured], variant: str) -> None:
    """The tool's own transport retry absorbs the timeout: one tool run (two upstream calls), no
    error reaches the SDK or the model."""
    m = measured[(variant, "tool_upstream_timeout_then_ok")]
    assert m.exception is None
    assert m.task.judge(m.output) == (True, True)
    assert (m.tool_runs, len(m.calls)) == (1, 2)
    assert m.task.tool is not None and m.task.tool.invocations[0].upstream_calls == 2
    assert not any(r.is_error for a in m.calls for r in a.tool_results)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["default", "hardened", "stream"])
def test_tool_budget_shared_is_not_shared(measured: dict[tuple[str, str], Measured], variant: str) -> None:
    """A tool-argument retry leaves the output budget alone: the malformed StructuredOutput call
    after it is still answered with an ``is_error`` result and retried. The CLI counts only
    StructuredOutput failures against its limit (``MAX_STRUCTURED_OUTPUT_RETRIES ?? 5``, bytes
    357946577 / 357866111); the one budget spanning both is ``max_turns`` (hardened: 10 turns)."""
    m = measured[(variant, "tool_budget_shared")]
    assert m.exception is None
    assert m.task.judge(m.output) == (True, True)
    assert (m.tool_runs, len(m.calls)) == (1, 4)
    assert m.result is not None and m.result.details["structured_output_calls"] == "2"
    malformed = m.calls[2]
    assert malformed.behaviour.startswith("malformed") and malformed.tool_call_id is not None
    feedback = m.returned(malformed.tool_call_id)
    assert feedback is not None and feedback.is_error is True
    assert "could not be parsed as JSON" in feedback.text


# --- scenarios that never end on their own ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tool_bad_args_persistent", "tool_unknown_order_persistent"])
def test_default_has_no_tool_error_budget(measured: dict[tuple[str, str], Measured], name: str) -> None:
    """No limit on tool errors and no ``max_turns`` by default (``--max-turns`` only when set,
    subprocess_cli.py:559-560): the CLI keeps calling the model until the call cap. Every error
    but the last (whose request is the one held at the cap) went back paired with its call id."""
    m = measured[("default", name)]
    assert m.result is None  # runaway
    assert len(m.calls) == CALL_CAP
    assert m.tool_runs == (0 if "bad_args" in name else CALL_CAP)
    assert len(m.issued) == CALL_CAP
    for call_id in m.issued[:-1]:
        error = m.returned(call_id)
        assert error is not None and error.is_error is True
        assert error.structured_error is ("unknown_order" in name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tool_bad_args_persistent", "tool_unknown_order_persistent"])
def test_hardened_max_turns_bounds_tool_errors(measured: dict[tuple[str, str], Measured], name: str) -> None:
    """``max_turns=10`` (``--max-turns``) counts every model turn, tool turns included: the 10th
    failing call ends the run with ``error_max_turns``, raised as ``ResultError``
    (_internal/query.py:565-590) without another model call."""
    m = measured[("hardened", name)]
    assert isinstance(m.exception, ResultError)
    assert m.exception.subtype == "error_max_turns"
    assert len(m.calls) == HARDENED_MAX_TURNS
    assert m.tool_runs == (0 if "bad_args" in name else HARDENED_MAX_TURNS)
    assert m.output is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "name"),
    [("default", "tool_permission_denied"), ("default", "tool_quota_exceeded"), ("stream", "tool_permission_denied")],
)
def test_default_does_not_stop_on_a_non_retryable_error(
    measured: dict[tuple[str, str], Measured], variant: str, name: str
) -> None:
    """The SDK turns every handler exception into the same ``isError`` result (__init__.py:640-641);
    ``retryable: false`` reaches the model, but nothing acts on it: the tool runs on every call
    until the call cap."""
    m = measured[(variant, name)]
    assert m.result is None  # runaway
    assert (m.tool_runs, len(m.calls)) == (CALL_CAP, CALL_CAP)
    first = m.returned(m.issued[0])
    assert first is not None and first.is_error is True and '"retryable": false' in first.text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tool_permission_denied", "tool_quota_exceeded"])
def test_hardened_stops_after_a_non_retryable_error(measured: dict[tuple[str, str], Measured], name: str) -> None:
    """PostToolUseFailure sees the error (an ``isError`` MCP result fires it, not PostToolUse) and
    answers ``continue: false``, which CLI 2.1.332 ignores for that event (its runner forwards
    only messages, blocking errors and additionalContext, byte 344331598): the model gets a second
    turn and calls again. The PreToolUse guard denies that call with ``continue: false``, which
    the CLI honours (byte 344340650): the run ends, the tool ran once, and the caller gets a
    ``success`` result with no object and no exception."""
    m = measured[("hardened", name)]
    assert m.result is not None and m.exception is None
    assert m.output is None
    assert (m.tool_runs, len(m.calls)) == (1, 2)
    error = m.returned(m.issued[0])
    assert error is not None and error.is_error is True and error.structured_error
    assert m.returned(m.issued[1]) is None  # the denied call's result went to no model
    details = m.result.details
    assert (details["result_subtype"], details["terminal_reason"]) == ("success", "hook_stopped")
    assert details["tool_calls_stopped"] == "1"
    assert details["fatal_tool_errors"] == ("PERMISSION_DENIED" if "permission" in name else "QUOTA_EXCEEDED")


def test_tasks_without_a_tool_get_no_mcp_server() -> None:
    """Only a task with a tool adds ``mcp_servers``/``allowed_tools``: the other cells' CLI command
    line, and so their requests, stay as they were."""
    for spec in map(_spec, CELLS.values()):
        with tempfile.TemporaryDirectory() as scratch:
            endpoint = Endpoint("http://127.0.0.1:1/runs/x")
            options = _options(spec, get_task("person"), endpoint, scratch, _HookLog(), print)
        assert options.mcp_servers == {} and options.allowed_tools == []
        assert set(options.hooks or {}) <= {"PreToolUse"}
