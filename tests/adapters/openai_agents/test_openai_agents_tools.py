"""The openai-agents adapter with the harness tool (issue 7), against the real local provider.

Each scenario is the one in scenarios/tools.yaml: the provider scripts the model's tool calls
and answers, ``ToolPlan`` scripts the order service behind ``lookup_order``. Every figure below
is what the SDK source predicts; line references are to openai-agents 0.24.0 under
``.venv/lib/python3.12/site-packages/agents/`` and are explained in adapters/openai_agents/research.md
("Tool errors").

The numbers in one line:
- Every tool failure goes back to the model as the tool's output, paired with the call id the
  model issued (``call_id: tool_call.call_id``, items.py:918-920), unless the hardened
  ``failure_error_function`` re-raises it.
- Default / stream: that output is ``default_tool_error_function``'s fixed sentence
  (tool.py:1997-2002): no error code, nothing that says "do not retry".
- Nothing bounds the loop but ``max_turns`` (default 10, run_config.py:45; checked before each
  model call, run.py:1597-1606 and run_internal/run_loop.py:1773-1787): 10 model calls, then
  ``MaxTurnsExceeded``, whatever the error was.
- There are no output retries to share a budget with: invalid final output raises on its first
  occurrence (run_internal/turn_resolution.py:1224-1227).

Figures are identical on Chat Completions and Responses and with ``run_streamed``; the per-
scenario table runs native on Chat and tool on Responses, and one test checks the other pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

pytest.importorskip("agents", reason="pip install 'misfit-bench[openai-agents]'")

from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError, UserError

from adapters.openai_agents.adapter import OpenAIAgentsAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.provider import AttemptRecord
from bench.scenarios.tasks import Task
from bench.sdk.adapter import AdapterResult, Cell
from bench.tools import OrderToolError
from tests.cell_runner import CellRunner, cell_id, cell_of
from tests.tool_scenarios import TOOL_SCRIPTS as SCENARIOS

ADAPTER = OpenAIAgentsAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]
"""Above the SDK's own bound (max_turns=10), so the SDK's stop is measured, not the cap's."""
MAX_TURNS = 10
GENERIC = "An error occurred while running the tool. Please try again."
"""default_tool_error_function's text (tool.py:1997-2002)."""


@dataclass(frozen=True)
class Expected:
    tool_calls: int
    """Invocations of the tool function (a call whose arguments fail the schema never runs it)."""
    model_calls: int
    outcome: str | type[BaseException]
    """``correct`` / ``fallback`` (the hardened handler's schema-valid wrong object) /
    ``error_text`` (the output tool's error string as the final output) / an exception class."""
    fed_back: tuple[str, ...]
    """The tool results the last request carried, in order: ``generic`` (the default sentence),
    ``structured`` (JSON with error_code), ``success`` (the order record)."""


def _expected(scenario: str, mode: Mode, variant: str) -> Expected:
    hardened = variant == "hardened"
    error = "structured" if hardened else "generic"
    if scenario in ("tool_ok", "tool_upstream_timeout_then_ok"):
        return Expected(1, 2, "correct", ("success",))
    if scenario == "tool_bad_args_then_ok":
        return Expected(1, 3, "correct", (error, "success"))
    if scenario == "tool_unknown_order_then_ok":
        return Expected(2, 3, "correct", (error, "success"))
    if scenario == "tool_bad_args_persistent":
        return Expected(0, MAX_TURNS, MaxTurnsExceeded, (error,) * (MAX_TURNS - 1))
    if scenario == "tool_unknown_order_persistent" or (not hardened and scenario in _FATAL):
        return Expected(MAX_TURNS, MAX_TURNS, MaxTurnsExceeded, (error,) * (MAX_TURNS - 1))
    if scenario in _FATAL:
        return Expected(1, 1, UserError, ())
    assert scenario == "tool_budget_shared"
    if mode is Mode.NATIVE:
        outcome: str | type[BaseException] = "fallback" if hardened else ModelBehaviorError
    else:
        outcome = ModelBehaviorError if hardened else "error_text"
    return Expected(1, 3, outcome, (error, "success"))


_FATAL = ("tool_permission_denied", "tool_quota_exceeded")
_UNREALISTIC = ("malformed", "tool_call:order=")
VARIANTS = ("default", "stream", "hardened")
TABLE_PROTOCOL = {Mode.NATIVE: Protocol.CHAT, Mode.TOOL: Protocol.RESPONSES}


def _fed_back(attempts: list[AttemptRecord]) -> tuple[str, ...]:
    """What the last request carried back, after checking that every result is paired with the
    call id the model issued on the attempt before it, in order, and none is missing."""
    last = attempts[-1]
    issued = [a.tool_call_id for a in attempts[:-1]]
    assert [seen.call_id for seen in last.tool_results] == issued
    kinds = []
    for seen in last.tool_results:
        if seen.success:
            kinds.append("success")
        elif seen.structured_error:
            kinds.append("structured")
        else:
            assert seen.text == GENERIC
            kinds.append("generic")
    return tuple(kinds)


def _outcome(result: AdapterResult, task: Task) -> str | type[BaseException]:
    if result.exception is not None:
        return type(result.exception)
    if isinstance(result.output, str):
        return "error_text"
    valid, correct = task.judge(result.output)
    assert valid
    if result.fallback:
        assert not correct
        return "fallback"
    assert correct
    return "correct"


def test_tool_support_matches_the_runnable_cells() -> None:
    for cell in ADAPTER.cells():
        reason = ADAPTER.tool_support(cell)
        if cell.mode_support is ModeSupport.UNSUPPORTED:
            assert reason == cell.note
        else:
            assert reason is None


@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_tool_ok_in_every_cell(run_cell: CellRunner, cell: Cell) -> None:
    """The tool result goes back paired with the call id (items.py:918-920); the dict the tool
    returns is ``str()``-ed, not JSON-encoded (items.py:947-951)."""
    ran = await run_cell.scenario(cell, "tool_ok")
    assert _outcome(ran.result, ran.task) == "correct"
    assert ran.task.tool is not None and len(ran.task.tool.invocations) == 1
    assert len(ran.attempts) == 2
    assert _fed_back(ran.attempts) == ("success",)
    assert ran.attempts[1].tool_results[0].text.startswith("{'order_id': 'ORD-1042'")
    assert all(a.realistic for a in ran.attempts)
    assert [a.detected_mode for a in ran.attempts] == [str(cell.mode)] * 2


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("mode", [Mode.NATIVE, Mode.TOOL])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_scenario(run_cell: CellRunner, scenario: str, mode: Mode, variant: str) -> None:
    """The measured table: tool calls, model calls, outcome and what the model was told.

    - default / stream: both a raised ``OrderToolError`` and an argument ``ModelBehaviorError``
      (tool.py:2781-2798, raised before our function runs) reach ``default_tool_error_function``
      through ``_FailureHandlingFunctionToolInvoker.__call__`` (tool.py:697-711), so the model
      gets the fixed sentence and calls again until ``max_turns`` (run.py:1597-1606).
    - hardened: the ``failure_error_function`` returns the structured error (retryable, and
      invalid arguments) or re-raises (permission, quota); a re-raised non-SDK exception
      becomes ``UserError`` (run_internal/tool_execution.py:1859-1861) after 1 call.
    - tool_budget_shared: native text is validated once, no retry
      (run_internal/turn_resolution.py:1224-1227), hardened ``invalid_final_output`` handler
      falls back (run_internal/error_handlers.py:170-205); tool mode hands ``final_result``'s
      own error string to the caller through ``StopAtTools`` (turn_resolution.py:789-794), or
      raises with ``failure_error_function=None`` (hardened).
    """
    cell = cell_of(ADAPTER, mode=mode, protocol=TABLE_PROTOCOL[mode], variant=variant)
    expected = _expected(scenario, mode, variant)
    ran = await run_cell.scenario(cell, scenario)
    assert ran.task.tool is not None
    assert _outcome(ran.result, ran.task) == expected.outcome
    assert len(ran.task.tool.invocations) == expected.tool_calls
    assert len(ran.attempts) == expected.model_calls
    assert _fed_back(ran.attempts) == expected.fed_back
    # function_tool is strict by default (tool.py:2683, strict_mode=True), so on the real API
    # constrained decoding rules out both bad arguments and malformed JSON: those attempts are
    # marked unrealistic, every other call is one the request allowed.
    assert [a.realistic for a in ran.attempts] == [not a.behaviour.startswith(_UNREALISTIC) for a in ran.attempts]


async def test_non_retryable_error_stops_hardened_with_the_tool_error_as_cause(
    run_cell: CellRunner,
) -> None:
    """tool.py:702 lets the re-raise out of ``__call__``; tool_execution.py:1861 wraps it as
    ``UserError(f"Error running tool {name}: {e}") from e``. The error never reached the model."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT, variant="hardened"), "tool_quota_exceeded"
    )
    assert isinstance(ran.result.exception, UserError)
    cause = ran.result.exception.__cause__
    assert isinstance(cause, OrderToolError) and cause.code == "QUOTA_EXCEEDED" and not cause.retryable
    assert str(ran.result.exception) == f"Error running tool lookup_order: {cause}"
    assert ran.result.details["run_data"] == "present"
    assert ran.attempts[0].tool_call_id is not None and ran.attempts[0].tool_results == ()


async def test_default_tells_the_model_nothing_about_a_non_retryable_error(run_cell: CellRunner) -> None:
    """The same sentence for every failure (tool.py:1997-2002), so a model cannot tell
    PERMISSION_DENIED from a transient fault: 10 identical calls, each hitting the service."""
    ran = await run_cell.scenario(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT), "tool_permission_denied")
    assert isinstance(ran.result.exception, MaxTurnsExceeded)
    assert str(ran.result.exception) == "Max turns (10) exceeded"
    assert ran.task.tool is not None
    assert [i.error_code for i in ran.task.tool.invocations] == ["PERMISSION_DENIED"] * MAX_TURNS
    assert {seen.text for seen in ran.attempts[-1].tool_results} == {GENERIC}


async def test_hardened_invalid_arguments_error_is_redacted(run_cell: CellRunner) -> None:
    """With OPENAI_AGENTS_DONT_LOG_TOOL_DATA on by default (_debug.py:16-17), the argument
    ModelBehaviorError carries no validation detail (tool.py:2789-2798), so the structured error
    can say only that the arguments did not fit, not that ``order_id`` was missing."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.RESPONSES, variant="hardened"), "tool_bad_args_then_ok"
    )
    text = ran.attempts[1].tool_results[0].text
    assert '"error_code": "INVALID_ARGUMENTS"' in text
    assert "Invalid JSON input for tool lookup_order." in text
    assert "order_id" not in text


async def test_upstream_timeout_is_absorbed_inside_the_tool(run_cell: CellRunner) -> None:
    """The tool's own transport layer retries the timeout: one invocation, two upstream calls,
    and the SDK sees a success."""
    ran = await run_cell.scenario(
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES), "tool_upstream_timeout_then_ok"
    )
    assert ran.task.tool is not None
    assert [i.upstream_calls for i in ran.task.tool.invocations] == [2]
    assert len(ran.attempts) == 2


async def test_tool_mode_asks_for_any_tool_then_drops_tool_choice(run_cell: CellRunner) -> None:
    """With a harness tool the composed tool cell forces ``required`` (a named tool_choice would
    forbid the lookup); after the first tool call ``reset_tool_choice`` drops it
    (agent.py:418, run_internal/tool_execution.py:562-570)."""
    ran = await run_cell.scenario(cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT), "tool_ok")
    choices = [(a.request_body or {}).get("tool_choice") for a in ran.attempts]
    assert choices == ["required", None]
    tools = [t["function"]["name"] for t in (ran.attempts[0].request_body or {})["tools"]]
    assert tools == ["final_result", "lookup_order"]


@pytest.mark.parametrize(
    "cell",
    [
        cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.RESPONSES),
        cell_of(ADAPTER, mode=Mode.TOOL, protocol=Protocol.CHAT, variant="stream"),
    ],
    ids=["native-responses-default", "tool-chat-stream"],
)
async def test_other_protocol_pairs_match_the_table(run_cell: CellRunner, cell: Cell) -> None:
    """The figures do not depend on the protocol or on streaming: the run loop is shared."""
    for scenario in ("tool_unknown_order_then_ok", "tool_permission_denied"):
        expected = _expected(scenario, cell.mode, cell.variant)
        ran = await run_cell.scenario(cell, scenario)
        assert ran.task.tool is not None
        assert (_outcome(ran.result, ran.task), len(ran.task.tool.invocations), len(ran.attempts)) == (
            expected.outcome,
            expected.tool_calls,
            expected.model_calls,
        )
        assert _fed_back(ran.attempts) == expected.fed_back
