"""The agentmaker adapter on the ``order_lookup`` tool task, through the real provider over loopback.

How the cell is built (adapters/agentmaker/adapter.py, ``TOOL_WIRING``): ``output_schema`` never offers
tools (agents/agent.py:193-195), so a tool task runs as two turns on one Agent: the tool loop
``arun(prompt)`` (agents/agent.py:210-250), then ``arun(follow-up, output_schema=OrderStatus)``,
which sees the first turn's user message and final text through the in-process session history
(agents/base.py:539-544, 765-773), not its tool trajectory.

Each test's model script and tool upstream are those of a scenario of scenarios/tools.yaml.

What the numbers come from (paths relative to .venv/lib/python3.12/site-packages/agentmaker/):
- the loop runs at most ``max_turns=10`` model turns (agents/agent.py:72, 227-228) and then returns
  the placeholder text ``agent.exhausted`` without raising (agents/agent.py:250);
- arguments are checked against the tool's JSON schema before the tool runs; a mismatch is a
  ``ToolResponse.error`` fed back as text, the tool is not called (tools/registry.py:347-365);
- an exception raised inside the tool is caught and fed back as
  ``Error: tool '<name>' raised during execution: <Type>: <str>`` (tools/registry.py:318-345,
  prompts/defaults.py:209); nothing stops the loop, retryable or not;
- every tool result goes back as ``role: tool`` with the issued call id (agents/agent.py:315-334),
  which the Anthropic adapter turns into a ``tool_result`` block without ``is_error``
  (core/adapters/anthropic.py:155-157), even for an error;
- the structured turn has its own budget, ``retries=1`` (runtime/harness.py:61, 324-332);
  ``RunPolicy`` limits count per ``arun`` (agents/base.py:330), so the hardened ``max_llm_calls=8``
  applies to each turn on its own.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agentmaker")

from agentmaker.core.exceptions import LLMResponseError, RunCancelled, RunLimitExceeded

from adapters.agentmaker.adapter import FOLLOW_UP, HARDENED_POLICY, AgentmakerAdapter
from bench.core.vocabulary import Mode, ModeSupport, Protocol
from bench.provider.detect import ToolResultSeen
from bench.run.toolcalls import summarise_tools
from bench.sdk.adapter import Cell
from bench.tools import UpstreamStep
from tests.cell_runner import CellRun, CellRunner, cell_id, cell_of
from tests.tool_scenarios import TOOL_SCRIPTS as SCENARIOS

ADAPTER = AgentmakerAdapter()
SUPPORTED = [cell for cell in ADAPTER.cells() if cell.mode_support is not ModeSupport.UNSUPPORTED]


CHAT = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT)
ANTHROPIC = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.ANTHROPIC)
PROMPTED = cell_of(ADAPTER, mode=Mode.PROMPTED, protocol=Protocol.CHAT)
CHAT_HARDENED = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.CHAT, variant="hardened")
ANTHROPIC_HARDENED = cell_of(ADAPTER, mode=Mode.NATIVE, protocol=Protocol.ANTHROPIC, variant="hardened")
DEFAULTS = [CHAT, ANTHROPIC, PROMPTED]
HARDENED = [CHAT_HARDENED, ANTHROPIC_HARDENED]
CELLS = DEFAULTS + HARDENED

CALL_CAP = 20
"""Above the default variant's natural end (12 calls), so the test sees where agentmaker stops."""
MAX_TURNS = 10
"""Agent's default ``max_turns`` (agents/agent.py:72)."""
HARDENED_CALLS = HARDENED_POLICY["max_llm_calls"]

VALIDATION_ERROR = "Error: tool 'lookup_order' failed parameter validation: 'order_id' is a required property"
RAISED_PREFIX = "Error: tool 'lookup_order' raised during execution: OrderToolError: "


def reply_to(m: CellRun, index: int) -> ToolResultSeen | None:
    """The tool result the next request carried back for the call model call ``index`` issued."""
    call_id = m.calls[index].tool_call_id
    assert call_id is not None, f"model call {index} issued no tool call"
    if index + 1 >= len(m.calls):
        return None
    return next((seen for seen in m.calls[index + 1].tool_results if seen.call_id == call_id), None)


def error_to_model(m: CellRun) -> bool | None:
    """``tool_error_to_model`` as the runner computes it for this cell."""
    assert m.task.tool is not None
    return summarise_tools(m.calls, m.task.tool, m.result.planned_calls > 0).tool_error_to_model


def exception_type(m: CellRun) -> type[BaseException] | None:
    return type(m.result.exception) if m.result.exception is not None else None


def _expected_is_error(cell: Cell) -> bool | None:
    """Anthropic's flag is always False from agentmaker (anthropic.py:155-157); chat has none."""
    return False if cell.protocol is Protocol.ANTHROPIC else None


def test_every_cell_that_runs_can_run_a_tool_task() -> None:
    for cell in ADAPTER.cells():
        reason = ADAPTER.tool_support(cell)
        if cell.mode_support is ModeSupport.UNSUPPORTED:
            assert reason == cell.note
        else:
            assert reason is None


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", SUPPORTED, ids=cell_id)
async def test_tool_ok_takes_three_model_calls_and_one_tool_call(run_cell: CellRunner, cell: Cell) -> None:
    """Call 1 issues the tool call; call 2 carries its result (paired by id, agents/agent.py:333)
    and answers in text, which ends the loop (agents/agent.py:232-235); call 3 is the structured
    turn, whose request carries the first turn only as user + assistant text (agents/base.py:544)."""
    m = await run_cell.scenario(cell, "tool_ok", call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (3, 1)
    seen = reply_to(m, 0)
    assert seen is not None and seen.success and not seen.structured_error
    assert seen.is_error is _expected_is_error(cell)
    assert m.calls[2].tool_results == ()
    body = m.calls[2].request_body
    assert body is not None
    texts = json.dumps(body)
    assert FOLLOW_UP in texts and "ORD-1042" in texts
    assert m.result.details["tool_loop_llm_calls"] == "2"


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", [CHAT, ANTHROPIC], ids=cell_id)
async def test_tool_result_is_a_python_repr_of_the_returned_dict(run_cell: CellRunner, cell: Cell) -> None:
    """A @tool function's non-ToolResponse return value goes back as ``str(result)``
    (tools/decorator.py:183-187): the dict reaches the model as a Python repr, not JSON."""
    m = await run_cell.scenario(cell, "tool_ok", call_cap=CALL_CAP)
    seen = reply_to(m, 0)
    assert seen is not None and seen.text.startswith("{'order_id': 'ORD-1042'")


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_bad_arguments_are_fed_back_unstructured_and_the_tool_is_not_called(
    run_cell: CellRunner, cell: Cell
) -> None:
    """Schema validation runs before the tool (tools/registry.py:347-365), in the hardened variant
    too: the wrapper never runs, so its structured error cannot apply. The error is paired with
    the call id; the model's corrected call then succeeds."""
    m = await run_cell.scenario(cell, "tool_bad_args_then_ok", call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (4, 1)
    seen = reply_to(m, 0)
    assert seen is not None and seen.text == VALIDATION_ERROR
    assert not seen.structured_error and seen.is_error is _expected_is_error(cell)
    success = reply_to(m, 1)
    assert success is not None and success.success


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_persistent_bad_arguments_exhaust_the_turn_budget_without_calling_the_tool(
    run_cell: CellRunner, cell: Cell
) -> None:
    """Default: 10 tool-loop turns (agents/agent.py:72, 227), then the loop returns its
    ``agent.exhausted`` text instead of raising (agents/agent.py:250); the structured turn then gets
    a tool call it did not offer, i.e. empty content, retries once and raises LLMResponseError
    (runtime/harness.py:324-332): 10 + 2 = 12 calls, exactly the runner's default call cap.
    Hardened: ``RunPolicy(max_llm_calls=8)`` ends the tool loop with RunLimitExceeded before the
    9th call (runtime/execution/run_context.py:170-172)."""
    m = await run_cell.scenario(cell, "tool_bad_args_persistent", call_cap=CALL_CAP)
    assert m.tool_calls == 0
    assert m.result.output is None
    if cell.variant == "hardened":
        assert (len(m.calls), exception_type(m)) == (HARDENED_CALLS, RunLimitExceeded)
    else:
        assert (len(m.calls), exception_type(m)) == (MAX_TURNS + 2, LLMResponseError)
        assert m.result.details["tool_loop_output"].startswith("(Max turns reached")
    for index in range((MAX_TURNS if cell.variant != "hardened" else HARDENED_CALLS) - 1):
        seen = reply_to(m, index)
        assert seen is not None and seen.text == VALIDATION_ERROR
    # The loop returned calls 1-9 (1-7 hardened); the last ended the loop: every error reached the model.
    assert error_to_model(m) is True


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_unknown_order_error_reaches_the_model_structured_then_recovers(run_cell: CellRunner, cell: Cell) -> None:
    """Default: the raised OrderToolError is caught and fed back with its type and message
    (tools/registry.py:331-345): the structured JSON survives inside the text. Hardened: the tool
    returns ``ToolResponse.error(<JSON>)``, so the model reads the JSON alone."""
    m = await run_cell.scenario(cell, "tool_unknown_order_then_ok", call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (4, 2)
    seen = reply_to(m, 0)
    assert seen is not None and seen.structured_error and seen.is_error is _expected_is_error(cell)
    if cell.variant == "hardened":
        assert json.loads(seen.text)["error_code"] == "ORDER_NOT_FOUND"
    else:
        assert seen.text.startswith(RAISED_PREFIX + '{"error_code": "ORDER_NOT_FOUND"')


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_persistent_unknown_order_calls_the_tool_every_turn(run_cell: CellRunner, cell: Cell) -> None:
    """Each turn's call runs the tool and gets the structured error back; the loop only stops at
    its turn budget (agents/agent.py:227, 250) or the hardened RunPolicy (run_context.py:170-172)."""
    m = await run_cell.scenario(cell, "tool_unknown_order_persistent", call_cap=CALL_CAP)
    assert m.result.output is None
    if cell.variant == "hardened":
        assert (len(m.calls), m.tool_calls, exception_type(m)) == (8, 8, RunLimitExceeded)
    else:
        assert (len(m.calls), m.tool_calls, exception_type(m)) == (12, MAX_TURNS, LLMResponseError)
    for index in range(m.tool_calls - 1):
        seen = reply_to(m, index)
        assert seen is not None and seen.structured_error
    assert error_to_model(m) is True  # the structured turn after the loop is not a dropped result


@pytest.mark.asyncio
@pytest.mark.parametrize("upstream", ["permission_denied", "quota_exceeded"])
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_non_retryable_error_stops_the_run_only_when_hardened(
    run_cell: CellRunner, cell: Cell, upstream: UpstreamStep
) -> None:
    """Default: nothing in agentmaker reads ``retryable``; the error goes back to the model like any
    other (tools/registry.py:331-345) and the model's repeated call runs the tool again, 10 times.
    Hardened: the tool trips ``RunPolicy.cancel``, checked before the next model call
    (runtime/harness.py:233, run_context.py:165-166): RunCancelled after one call and one tool
    call; the error itself never reaches the model."""
    m = await run_cell.scenario(cell, f"tool_{upstream}", call_cap=CALL_CAP)
    assert m.result.output is None
    if cell.variant == "hardened":
        assert (len(m.calls), m.tool_calls, exception_type(m)) == (1, 1, RunCancelled)
        assert reply_to(m, 0) is None
        assert m.result.details["cancelled_on_tool_error"] == upstream.upper()
        return
    assert (len(m.calls), m.tool_calls, exception_type(m)) == (12, MAX_TURNS, LLMResponseError)
    seen = reply_to(m, 0)
    assert seen is not None and seen.structured_error and '"retryable": false' in seen.text
    assert m.calls[1].tool_call_id is not None  # the model called again after "Do not retry"


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_upstream_timeout_is_absorbed_inside_the_tool(run_cell: CellRunner, cell: Cell) -> None:
    """The tool's own transport retry (bench/tools.py) hides the timeout: agentmaker sees one
    successful call and has nothing to retry."""
    m = await run_cell.scenario(cell, "tool_upstream_timeout_then_ok", call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (3, 1)
    assert m.task.tool is not None and m.task.tool.invocations[0].upstream_calls == 2
    seen = reply_to(m, 0)
    assert seen is not None and seen.success


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", CELLS, ids=cell_id)
async def test_budget_shared_scenario_malformed_text_ends_the_tool_loop_unvalidated(
    run_cell: CellRunner, cell: Cell
) -> None:
    """tool_budget_shared: the malformed answer is the tool loop's final *text*, which the loop
    returns as is (agents/agent.py:232-235); no output retry happens in that turn. The structured
    turn then starts with its full budget and gets ``valid`` first time: 4 calls, recovered."""
    m = await run_cell.scenario(cell, "tool_budget_shared", call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (4, 1)
    assert m.result.details["tool_loop_llm_calls"] == "3"
    assert m.result.details["run_usage_llm_calls"] == "1"
    assert m.calls[2].behaviour.startswith("malformed")
    assert not m.result.details["tool_loop_output"].startswith("(")


@pytest.mark.asyncio
@pytest.mark.parametrize("cell", [CHAT, ANTHROPIC, PROMPTED], ids=cell_id)
async def test_tool_argument_retries_do_not_spend_the_output_retry(run_cell: CellRunner, cell: Cell) -> None:
    """Budget sharing, shown directly: after a failed tool-argument call, the structured turn's
    malformed answer is still retried (its own ``retries=1``, runtime/harness.py:61, 324): the
    two budgets are separate (max_turns for tools, retries for output)."""
    # Custom: no scenario answers validly before the malformed answer; its steps are tool_budget_shared's.
    (bad_args, ok_call, malformed, valid), upstream = SCENARIOS["tool_budget_shared"]
    script = [bad_args, ok_call, valid, malformed, valid]
    m = await run_cell(cell, script, task="order_lookup", upstream=upstream, call_cap=CALL_CAP)
    assert m.result.exception is None
    assert m.task.judge(m.result.output) == (True, True)
    assert (len(m.calls), m.tool_calls) == (5, 1)
    assert m.result.details["run_usage_llm_calls"] == "2"
